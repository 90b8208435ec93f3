package layers

import (
	"fmt"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
)

// SoftmaxHead is the softmax-likelihood head of eq. (1):
// p(y = c | x) = softmax_c(w_{e,c}·f(x)). Forward returns the logits
// f W_e (B, C); losses and evaluation apply the softmax, so the model never
// takes the log of a softmax.
type SoftmaxHead struct {
	we *G.Node
}

var _ Layer = (*SoftmaxHead)(nil)

// NewSoftmaxHead returns the head for the (d', C) embedding matrix we.
func NewSoftmaxHead(we *G.Node) (*SoftmaxHead, error) {
	if we == nil || len(we.Shape()) != 2 {
		return nil, fmt.Errorf("layers: softmax head: W_e must be a (d', C) matrix")
	}
	return &SoftmaxHead{we: we}, nil
}

// Params is empty: W_e belongs to the model that owns it.
func (h *SoftmaxHead) Params() G.Nodes { return nil }

// Forward maps f (B, d') to logits (B, C).
func (h *SoftmaxHead) Forward(f *G.Node) (out *G.Node, err error) {
	defer graph.Recover(&err)
	if f == nil || len(f.Shape()) != 2 || f.Shape()[1] != h.we.Shape()[0] {
		return nil, fmt.Errorf("layers: softmax head: f has shape %v, want (B, %d)", shapeOf(f), h.we.Shape()[0])
	}
	return ops.MatMul(f, h.we, false, false)
}

func shapeOf(n *G.Node) any {
	if n == nil {
		return "nil"
	}
	return n.Shape()
}
