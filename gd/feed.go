package gd

import (
	"fmt"
	"math"

	"github.com/gdattn/gdattn/graph"
)

// Feed copies one minibatch into the model's inputs: x is (B, T, d) and y is
// (B, T) with context labels in 0..C-1; the query label y[b*T+N] is the
// training target and may be -1 when unknown (that context then adds 0 to
// the loss). The model never sees the query label in its tokens.
//
// Feed returns an error naming the argument on a length mismatch, a NaN or
// ±Inf in x, or a label out of range; the inputs are left unchanged then.
func (m *Model) Feed(x []float64, y []int) error {
	B, T, d, C := m.Batch, m.T(), m.Cfg.D, m.Cfg.C
	if len(x) != B*T*d {
		return fmt.Errorf("gd: Feed: x has %d values, want B*T*d = %d*%d*%d = %d", len(x), B, T, d, B*T*d)
	}
	if len(y) != B*T {
		return fmt.Errorf("gd: Feed: y has %d labels, want B*T = %d*%d = %d", len(y), B, T, B*T)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("gd: Feed: x[%d] (context %d, position %d) is %v", i, i/(T*d), (i/d)%T, v)
		}
	}
	labels := make([]float64, B*T*C)
	target := make([]float64, B*C)
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			c := y[b*T+t]
			query := t == T-1
			if c < 0 || c >= C {
				if query && c == -1 {
					continue
				}
				return fmt.Errorf("gd: Feed: y[%d] (context %d, position %d) = %d, want 0..%d%s",
					b*T+t, b, t, c, C-1, map[bool]string{true: " or -1 at the query"}[query])
			}
			if query {
				target[b*C+c] = 1
			} else {
				labels[(b*T+t)*C+c] = 1
			}
		}
	}
	if err := graph.SetValue(m.X, x); err != nil {
		return err
	}
	if err := graph.SetValue(m.Labels, labels); err != nil {
		return err
	}
	return graph.SetValue(m.Target, target)
}
