package layers

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// KernelFactory rebuilds a registered user kernel from the "params" saved
// by [MarshalKernel] (the kernel value marshalled by encoding/json; "null"
// when ParseKernel is given the bare name).
type KernelFactory func(params json.RawMessage) (KernelSpec, error)

// kernelRegistry holds the user kernels that configs may name. It is the
// one piece of package state in layers: like image.RegisterFormat, it lets
// a program teach every config reader its own kernels once.
var kernelRegistry = struct {
	sync.RWMutex
	m map[string]KernelFactory
}{m: map[string]KernelFactory{}}

// RegisterKernel lets configs name a user kernel: MarshalKernel saves a
// spec whose Name is name, and UnmarshalKernel and ParseKernel rebuild it
// with f. The name must be non-empty, not a built-in or combinator name and
// not already registered. It is safe for concurrent use.
func RegisterKernel(name string, f KernelFactory) error {
	switch {
	case name == "":
		return fmt.Errorf("layers: RegisterKernel: empty name")
	case f == nil:
		return fmt.Errorf("layers: RegisterKernel %q: factory is nil", name)
	case slices.Contains(KernelNames(), name) || name == KernelSum || name == KernelScaled:
		return fmt.Errorf("layers: RegisterKernel %q: the name is reserved by a built-in kernel", name)
	}
	kernelRegistry.Lock()
	defer kernelRegistry.Unlock()
	if _, ok := kernelRegistry.m[name]; ok {
		return fmt.Errorf("layers: RegisterKernel %q: already registered", name)
	}
	kernelRegistry.m[name] = f
	return nil
}

// RegisteredKernels lists the names given to RegisterKernel, sorted.
func RegisteredKernels() []string {
	kernelRegistry.RLock()
	defer kernelRegistry.RUnlock()
	out := make([]string, 0, len(kernelRegistry.m))
	for n := range kernelRegistry.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func kernelFactory(name string) (KernelFactory, bool) {
	kernelRegistry.RLock()
	defer kernelRegistry.RUnlock()
	f, ok := kernelRegistry.m[name]
	return f, ok
}

func buildUser(name string, f KernelFactory, params json.RawMessage) (KernelSpec, error) {
	spec, err := f(params)
	if err != nil {
		return nil, fmt.Errorf("layers: kernel %q: params %s: %w", name, clip(params), err)
	}
	if spec == nil || isNilSpec(spec) || spec.Name() != name {
		return nil, fmt.Errorf("layers: kernel %q: the registered factory does not return a kernel of that name", name)
	}
	return spec, nil
}

func unknownKernel(name string) error {
	known := KernelNames()
	if r := RegisteredKernels(); len(r) > 0 {
		known = append(known, r...)
	}
	return fmt.Errorf("layers: unknown kernel %q (known: %v); if it is your own kernel, call layers.RegisterKernel(%q, ...) before loading", name, known, name)
}
