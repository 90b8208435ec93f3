package main

import (
	"fmt"
	"os"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/cuda"
)

// device is where the training and evaluation graphs run: the Go VM on the
// CPU (the default) or graph/cuda's executor on a backend.
type device struct {
	name    string
	backend cuda.Backend // nil on the CPU
}

// openDevice opens -device: "cpu", "cuda" (the first GPU; the binary must be
// built with -tags gdcuda) or "emulator" (graph/cuda's serial CPU emulator of
// the GPU kernels, built with -tags cudaemu; slow, for checking).
func openDevice(name string) (*device, error) {
	var (
		b   cuda.Backend
		err error
	)
	switch name {
	case "", "cpu":
		return &device{name: "cpu"}, nil
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
	return &device{name: name, backend: b}, nil
}

// options returns the machine options for a training (train) or evaluation
// machine on d: on a device, parameters and their gradients stay in device
// memory between the trainer's device updates (call the trainer's SyncParams
// before reading parameters on the host).
func (d *device) options(opts graph.MachineOptions, train bool) graph.MachineOptions {
	if d == nil || d.backend == nil {
		return opts
	}
	opts.Executor = cuda.NewExecutorWith(d.backend, cuda.ExecOptions{ResidentParams: train, DeviceGrads: train})
	return opts
}

// close releases the backend.
func (d *device) close() {
	if d != nil && d.backend != nil {
		d.backend.Close()
	}
}
