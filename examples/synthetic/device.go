package main

import (
	"fmt"
	"os"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/cuda"
)

// executor runs the training and evaluation machines; nil means the Go VM
// on the CPU. Set once by openDevice from -device.
var executor graph.ExecutorFactory

// openDevice opens -device: "cpu" (the default), "cuda" (the first GPU; the
// binary must be built with -tags gdcuda) or "emulator" (graph/cuda's serial
// CPU emulator of the GPU kernels, -tags cudaemu; slow, for checking). It
// returns the function that releases the device.
func openDevice(name string) (func(), error) {
	var (
		b   cuda.Backend
		err error
	)
	switch name {
	case "", "cpu":
		executor = nil
		return func() {}, nil
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
	fmt.Fprintf(os.Stderr, "device: %s\n", b.Name())
	executor = cuda.NewExecutor(b)
	return func() { b.Close() }, nil
}
