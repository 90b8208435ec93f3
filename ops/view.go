package ops

import "gorgonia.org/tensor"

// ViewShape is the reshape's output shape: the output is the input's data
// under this shape, so an executor that never writes into an input's
// memory may bind it to a view instead of running Do, which copies (the
// host executor of graph.NewMachine does; Gorgonia's TapeMachine must not,
// see docs/gorgonia-bugs.md). The caller does not modify it.
func (op *ReshapeOp) ViewShape() tensor.Shape { return op.to }
