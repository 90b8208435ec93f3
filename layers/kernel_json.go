package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gdattn/gdattn/internal/strictjson"
)

// builtinJSON, sumJSON, scaledJSON and userJSON are the JSON forms of the
// specs; see "Kernel specs" in the package documentation.
type builtinJSON struct {
	Name      string   `json:"name"`
	Gamma     *float64 `json:"gamma,omitempty"`
	Learnable *bool    `json:"learnable,omitempty"`
}

type sumJSON struct {
	Name  string            `json:"name"`
	Terms []json.RawMessage `json:"terms"`
}

type scaledJSON struct {
	Name      string          `json:"name"`
	Beta      *float64        `json:"beta"`
	Learnable *bool           `json:"learnable,omitempty"`
	Kernel    json.RawMessage `json:"kernel"`
}

type userJSON struct {
	Name   string          `json:"name"`
	Params json.RawMessage `json:"params"`
}

// MarshalKernel returns the JSON form of k (see "Kernel specs" in the
// package documentation). A user kernel must be registered under its Name,
// and the registered factory must rebuild it: MarshalKernel saves its
// params, rebuilds the kernel from them and fails unless the rebuilt spec
// has the same name and marshals to the same params, so that a save never
// writes a kernel that cannot be loaded.
func MarshalKernel(k KernelSpec) ([]byte, error) {
	if err := CheckKernel(k); err != nil {
		return nil, err
	}
	switch v := k.(type) {
	case *BuiltinSpec:
		return MarshalKernel(*v)
	case BuiltinSpec:
		j := builtinJSON{Name: v.name}
		if v.name != KernelLinear {
			g, l := v.Gamma(), v.Learnable()
			j.Gamma, j.Learnable = &g, &l
		}
		return json.Marshal(j)
	case SumSpec:
		j := sumJSON{Name: KernelSum}
		for i, t := range v.terms {
			b, err := MarshalKernel(t)
			if err != nil {
				return nil, fmt.Errorf("layers: kernel sum: term %d: %w", i, err)
			}
			j.Terms = append(j.Terms, b)
		}
		return json.Marshal(j)
	case ScaledSpec:
		inner, err := MarshalKernel(v.inner)
		if err != nil {
			return nil, fmt.Errorf("layers: kernel scaled: %w", err)
		}
		beta, l := v.beta, v.learnable
		return json.Marshal(scaledJSON{Name: KernelScaled, Beta: &beta, Learnable: &l, Kernel: inner})
	}
	name := k.Name()
	f, ok := kernelFactory(name)
	if !ok {
		return nil, fmt.Errorf("layers: kernel %q (%T) is not registered: call layers.RegisterKernel(%q, factory) to save it", name, k, name)
	}
	params, err := json.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("layers: kernel %q: params: %w", name, err)
	}
	back, err := f(params)
	if err != nil {
		return nil, fmt.Errorf("layers: kernel %q: its registered factory cannot rebuild it from its params %s: %w", name, params, err)
	}
	if back == nil || isNilSpec(back) || back.Name() != name {
		return nil, fmt.Errorf("layers: kernel %q: its registered factory does not rebuild a kernel named %q", name, name)
	}
	again, err := json.Marshal(back)
	if err != nil || !bytes.Equal(again, params) {
		return nil, fmt.Errorf("layers: kernel %q: does not survive a save: params %s are rebuilt as %s", name, params, again)
	}
	return json.Marshal(userJSON{Name: name, Params: params})
}

// UnmarshalKernel rebuilds a kernel spec from its JSON form: an object as
// written by MarshalKernel, or a bare name as accepted by ParseKernel. It
// refuses unknown keys, unknown names and invalid values, naming them.
//
// A kernel nested beyond MaxKernelDepth is refused before its inner
// kernels are decoded, so decoding costs at most MaxKernelDepth passes over
// data: linear in its size.
func UnmarshalKernel(data []byte) (KernelSpec, error) {
	// Each combinator nests at most two JSON levels (a sum's object and
	// its terms array): deeper JSON is refused in one pass, before any
	// decoding (encoding/json gives up at 10,000 levels with a message
	// that does not name the bound).
	if jsonDepth(data) > 2*MaxKernelDepth+2 {
		return nil, errKernelTooDeep
	}
	return unmarshalKernel(data, 0)
}

// jsonDepth returns the deepest nesting of objects and arrays in data
// (brackets inside strings do not count).
func jsonDepth(data []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// unmarshalKernel is UnmarshalKernel for a kernel nested depth combinators
// deep.
func unmarshalKernel(data []byte, depth int) (KernelSpec, error) {
	if depth > MaxKernelDepth {
		return nil, errKernelTooDeep
	}
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var name string
		if err := json.Unmarshal(data, &name); err != nil {
			return nil, fmt.Errorf("layers: kernel: %w", err)
		}
		return ParseKernel(name)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil || keys == nil {
		return nil, fmt.Errorf("layers: kernel: want an object {\"name\": ...} or a name, got %s", clip(data))
	}
	var name string
	if raw, ok := keys["name"]; !ok {
		return nil, fmt.Errorf("layers: kernel: missing key \"name\" in %s", clip(data))
	} else if err := json.Unmarshal(raw, &name); err != nil {
		return nil, fmt.Errorf("layers: kernel: key \"name\": %w", err)
	}
	var spec KernelSpec
	switch {
	case slices.Contains(KernelNames(), name):
		var j builtinJSON
		if err := decodeStrict(data, &j); err != nil {
			return nil, fmt.Errorf("layers: kernel %q: %w", name, err)
		}
		if name == KernelLinear && (j.Gamma != nil || (j.Learnable != nil && *j.Learnable)) {
			return nil, fmt.Errorf("layers: kernel \"linear\": keys \"gamma\" and \"learnable\" do not apply (it has no parameter)")
		}
		b := Builtin(name, 1)
		if j.Gamma != nil {
			if *j.Gamma == 0 {
				return nil, fmt.Errorf("layers: kernel %q: key \"gamma\": 0, want a finite positive value", name)
			}
			b.gamma = *j.Gamma
		}
		if j.Learnable != nil && !*j.Learnable {
			b = b.Fixed()
		}
		spec = b
	case name == KernelSum:
		var j sumJSON
		if err := decodeStrict(data, &j); err != nil {
			return nil, fmt.Errorf("layers: kernel sum: %w", err)
		}
		var terms []KernelSpec
		if len(j.Terms) > MaxKernelNodes {
			return nil, fmt.Errorf("layers: kernel sum: key \"terms\": %d terms, more than layers.MaxKernelNodes = %d kernels in all", len(j.Terms), MaxKernelNodes)
		}
		for i, raw := range j.Terms {
			t, err := unmarshalKernel(raw, depth+1)
			if errors.Is(err, errKernelTooDeep) {
				return nil, err
			}
			if err != nil {
				return nil, fmt.Errorf("layers: kernel sum: key \"terms\"[%d]: %w", i, err)
			}
			terms = append(terms, t)
		}
		spec = Sum(terms...)
	case name == KernelScaled:
		var j scaledJSON
		if err := decodeStrict(data, &j); err != nil {
			return nil, fmt.Errorf("layers: kernel scaled: %w", err)
		}
		if j.Beta == nil {
			return nil, fmt.Errorf("layers: kernel scaled: missing key \"beta\"")
		}
		if j.Kernel == nil {
			return nil, fmt.Errorf("layers: kernel scaled: missing key \"kernel\"")
		}
		inner, err := unmarshalKernel(j.Kernel, depth+1)
		if errors.Is(err, errKernelTooDeep) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("layers: kernel scaled: key \"kernel\": %w", err)
		}
		sc := Scaled(*j.Beta, inner)
		if j.Learnable != nil && !*j.Learnable {
			sc = sc.Fixed()
		}
		spec = sc
	default:
		f, ok := kernelFactory(name)
		if !ok {
			return nil, unknownKernel(name)
		}
		var j userJSON
		if err := decodeStrict(data, &j); err != nil {
			return nil, fmt.Errorf("layers: kernel %q: %w", name, err)
		}
		if j.Params == nil {
			j.Params = json.RawMessage("null")
		}
		var err error
		if spec, err = buildUser(name, f, j.Params); err != nil {
			return nil, err
		}
	}
	if err := CheckKernel(spec); err != nil {
		return nil, err
	}
	return spec, nil
}

// ParseKernel reads a kernel from a flag or a config value: a built-in name
// (g = 1, learned: RBF(1), Softmax(1), ...), the name of a registered user
// kernel (its factory gets "null" params), or a JSON object as written by
// MarshalKernel.
func ParseKernel(s string) (KernelSpec, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{") {
		return UnmarshalKernel([]byte(t))
	}
	switch {
	case slices.Contains(KernelNames(), t):
		return Builtin(t, 1), nil
	case t == KernelSum || t == KernelScaled:
		return nil, fmt.Errorf("layers: kernel %q needs its arguments: write it as a JSON object", t)
	}
	f, ok := kernelFactory(t)
	if !ok {
		return nil, unknownKernel(t)
	}
	spec, err := buildUser(t, f, json.RawMessage("null"))
	if err != nil {
		return nil, err
	}
	return spec, CheckKernel(spec)
}

// decodeStrict unmarshals data into v, refusing unknown keys and trailing
// data.
func decodeStrict(data []byte, v any) error { return strictjson.Decode(data, v) }

// clip shortens data for an error message.
func clip(data []byte) string {
	const max = 80
	if len(data) > max {
		return string(data[:max]) + "…"
	}
	return string(data)
}
