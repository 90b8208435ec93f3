package ops

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The hot ops of this package that produce a dense tensor have a method
// DoInto(p, inputs...) (graph.IntoDoer) that computes what Do computes into
// p's elements when p is a contiguous dense tensor of the output's dtype
// and size (the node's own buffer from an earlier run, which
// graph.NewMachine's host executor passes), and into a new tensor
// otherwise. The values are the same bit for bit: only where they are
// written changes. The method is deliberately not Gorgonia's
// UsePreallocDo, which Gorgonia's TapeMachine would call with registers
// that may alias live views (docs/gorgonia-bugs.md).

// outBuf returns p's elements when p is a contiguous dense tensor of
// element type F with n elements, cleared when zero is set (for ops that
// accumulate into or scatter over a zero output); otherwise a new zeroed
// slice.
func outBuf[F float32 | float64](p G.Value, n int, zero bool) []F {
	if d, ok := p.(*tensor.Dense); ok && !d.IsView() && d.IsNativelyAccessible() && !d.Shape().IsScalar() {
		if x, ok := d.Data().([]F); ok && len(x) == n && n > 0 {
			if zero {
				clear(x)
			}
			return x
		}
	}
	return make([]F, n)
}

// wrapOut returns the output tensor of the given shape backed by y: p
// itself when y is p's elements (reshaped if p's shape differs), else a new
// tensor.
func wrapOut[F float32 | float64](p G.Value, shape tensor.Shape, y []F) G.Value {
	if d, ok := p.(*tensor.Dense); ok && len(y) > 0 && !d.Shape().IsScalar() {
		if x, ok := d.Data().([]F); ok && len(x) == len(y) && &x[0] == &y[0] {
			if !d.Shape().Eq(shape) {
				if err := d.Reshape(shape...); err != nil {
					return tensor.New(tensor.WithShape(shape.Clone()...), tensor.WithBacking(y))
				}
			}
			return d
		}
	}
	return tensor.New(tensor.WithShape(shape.Clone()...), tensor.WithBacking(y))
}
