// Package device opens the -device flag of gdattn's examples: "cpu" (the Go
// VM, the default), "cuda" (the first NVIDIA GPU through graph/cuda; the
// binary must be built with -tags gdcuda) or "emulator" (graph/cuda's serial
// CPU emulator of the GPU kernels, built with -tags cudaemu; slow, for
// checking). It lives under examples/internal because it is flag glue, not
// a library API.
package device

import (
	"fmt"
	"io"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/cuda"
)

// Names lists the accepted -device values, for flag help.
const Names = "cpu, cuda (NVIDIA GPU; build with -tags gdcuda) or emulator (graph/cuda's CPU emulator; -tags cudaemu)"

// Open returns the backend named by a -device value, nil for "cpu" (or ""),
// and prints the device's name to log (nil: silent).
func Open(name string, log io.Writer) (cuda.Backend, error) {
	var (
		b   cuda.Backend
		err error
	)
	switch name {
	case "", "cpu":
		return nil, nil
	case "cuda":
		b, err = cuda.Open(0)
	case "emulator":
		b, err = cuda.OpenEmulator()
	default:
		return nil, fmt.Errorf("unknown -device %q (want cpu, cuda or emulator)", name)
	}
	if err != nil {
		return nil, fmt.Errorf("-device %s: %w", name, err)
	}
	if log != nil {
		fmt.Fprintf(log, "device: %s\n", b.Name())
	}
	return b, nil
}

// Executor opens a -device value (see Open) and returns the executor of
// its graphs, nil for "cpu" (the Go VM), with the function that releases
// the device.
func Executor(name string, log io.Writer) (graph.ExecutorFactory, func(), error) {
	b, err := Open(name, log)
	if err != nil {
		return nil, nil, err
	}
	if b == nil {
		return nil, func() {}, nil
	}
	return cuda.NewExecutor(b), func() { b.Close() }, nil
}
