package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Layer is the contract every gdattn layer meets: Forward builds the layer's
// output node from its input, Params lists the trainable nodes it created.
type Layer interface {
	Forward(x *G.Node) (*G.Node, error)
	Params() G.Nodes
}

// checkRank3 returns the (B, T, D) dims of x, or an error naming what and want.
func checkRank3(what string, x *G.Node, wantD int) (b, t, d int, err error) {
	if x == nil {
		return 0, 0, 0, fmt.Errorf("%s: input is nil", what)
	}
	sh := x.Shape()
	if len(sh) != 3 {
		return 0, 0, 0, fmt.Errorf("%s: input has shape %v, want rank 3 (B, T, %d)", what, sh, wantD)
	}
	if wantD > 0 && sh[2] != wantD {
		return 0, 0, 0, fmt.Errorf("%s: input has shape %v, want last dimension %d", what, sh, wantD)
	}
	return sh[0], sh[1], sh[2], nil
}

// checkMatrix checks that m (if non-nil) is a matrix of the given shape.
func checkMatrix(what string, m *G.Node, rows, cols int) error {
	if m == nil {
		return nil
	}
	if !m.Shape().Eq(tensor.Shape{rows, cols}) {
		return fmt.Errorf("%s has shape %v, want (%d, %d)", what, m.Shape(), rows, cols)
	}
	return nil
}

// constLike creates an unnamed constant tensor node on x's graph with x's dtype.
func constLike(x *G.Node, shape tensor.Shape, vals []float64, name string) *G.Node {
	var backing any
	if x.Dtype() == tensor.Float32 {
		b := make([]float32, len(vals))
		for i, v := range vals {
			b[i] = float32(v)
		}
		backing = b
	} else {
		b := make([]float64, len(vals))
		copy(b, vals)
		backing = b
	}
	t := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing))
	return G.NewTensor(x.Graph(), x.Dtype(), len(shape), G.WithShape(shape...), G.WithValue(t), G.WithName(name))
}
