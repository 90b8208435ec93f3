package language

import (
	"io"

	"github.com/gdattn/gdattn/examples/internal/device"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/cuda"
)

// placement is where the training and evaluation graphs run: the Go VM on the CPU
// (backend nil, the default) or graph/cuda's executor on a backend.
type placement struct {
	backend cuda.Backend
}

// openDevice opens -device (see examples/internal/device).
func openDevice(name string, log io.Writer) (*placement, error) {
	b, err := device.Open(name, log)
	if err != nil {
		return nil, err
	}
	return &placement{backend: b}, nil
}

// executor returns the executor of a training (train) or evaluation
// machine on d, nil on the CPU: on a device, parameters and their gradients
// stay in device memory between the trainer's device updates (the library's
// LM trainer syncs them before it evaluates or saves).
func (d *placement) executor(train bool) graph.ExecutorFactory {
	if d == nil || d.backend == nil {
		return nil
	}
	return cuda.NewExecutorWith(d.backend, cuda.ExecOptions{ResidentParams: train, DeviceGrads: train})
}

// close releases the backend.
func (d *placement) close() {
	if d != nil && d.backend != nil {
		d.backend.Close()
	}
}
