package main

import (
	"os"

	"github.com/gdattn/gdattn/examples/internal/device"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/cuda"
)

// executor runs the training and evaluation machines; nil means the Go VM
// on the CPU. Set once by openDevice from -device.
var executor graph.ExecutorFactory

// openDevice opens -device (see examples/internal/device) and returns the
// function that releases it.
func openDevice(name string) (func(), error) {
	b, err := device.Open(name, os.Stderr)
	if err != nil {
		return nil, err
	}
	if b == nil {
		executor = nil
		return func() {}, nil
	}
	executor = cuda.NewExecutor(b)
	return func() { b.Close() }, nil
}
