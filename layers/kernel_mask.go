package layers

import (
	"fmt"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/bounds"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Mask marks which (query, key) pairs may attend. Keep is a (B, Tq, Tk) 0/1
// node; Bias is 0 where Keep is 1 and -1e30 elsewhere (for normalised kernels).
type Mask struct {
	Keep *G.Node
	Bias *G.Node
}

// NewMask builds a constant mask on s for a batch of b sequences with tq
// queries and tk keys; visible(j, i) reports whether query j may see key i.
// The sizes must be positive and b·tq·tk at most 2^31 (graph.MaxElements).
func NewMask(s *graph.Scope, name string, b, tq, tk int, visible func(j, i int) bool) (*Mask, error) {
	switch {
	case s == nil:
		return nil, fmt.Errorf("layers: mask %q: scope is nil", name)
	case visible == nil:
		return nil, fmt.Errorf("layers: mask %q: visible is nil", name)
	case b <= 0 || tq <= 0 || tk <= 0:
		return nil, fmt.Errorf("layers: mask %q: b = %d, tq = %d, tk = %d, want all > 0", name, b, tq, tk)
	}
	if err := bounds.Elements(bounds.Term{What: "2·b·tq·tk (keep and bias)", Dims: []int{2, b, tq, tk}, Tensor: "b·tq·tk", TensorDims: []int{b, tq, tk}}); err != nil {
		return nil, fmt.Errorf("layers: mask %q: %w", name, err)
	}
	keep := make([]float64, b*tq*tk)
	bias := make([]float64, b*tq*tk)
	for bb := 0; bb < b; bb++ {
		for j := 0; j < tq; j++ {
			for i := 0; i < tk; i++ {
				o := (bb*tq+j)*tk + i
				if visible(j, i) {
					keep[o] = 1
				} else {
					bias[o] = -1e30
				}
			}
		}
	}
	sh := tensor.Shape{b, tq, tk}
	kn, err := s.Const(name+"_keep", sh, keep)
	if err != nil {
		return nil, err
	}
	bn, err := s.Const(name+"_bias", sh, bias)
	if err != nil {
		return nil, err
	}
	return &Mask{Keep: kn, Bias: bn}, nil
}

// keep is the mask's keep node, nil for no mask.
func (m *Mask) keep() *G.Node {
	if m == nil {
		return nil
	}
	return m.Keep
}

func applyMask(w *G.Node, mask *Mask) *G.Node {
	if mask == nil {
		return w
	}
	return G.Must(G.HadamardProd(w, mask.Keep))
}
