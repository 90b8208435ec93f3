package gd

import (
	"fmt"

	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// buildReal builds the GD model of a real-valued likelihood (Appendix G):
//
//	f_{j,k+1} = f_{j,k} + (α/N) Σ_i [y_i − E(Y | f_{i,k})] κ(x_i, x_j),   f_{j,0} = 0,
//
// with E(Y | f) = f for the Gaussian. Inputs: x (B, T, d), y (B, T, d_y)
// with the query row zero, target (B, d_y).
//
// The literal construction (Gaussian only) runs the tokens
// e_i = (x_i, y_i, f_i) of width d + 2d_y through general attention heads:
// W_Q = W_K select x (times Λ_m with several heads), W_V = (α/N)(select y −
// select f) (the erase step: E(Y|f) = f is already in the token, so no erase
// head and no cross-attention are needed; the one-step form reads y alone,
// f being 0), and P writes into the f slot. The structured construction
// computes the same numbers from x, y and f directly, with the kernel
// weights computed once for all blocks.
func (m *Model) buildReal() error {
	cfg, s := m.Cfg, m.s
	lik := cfg.Likelihood.(RealLikelihood) // Validate checked it
	B, T, N, d, dy := m.Batch, cfg.N+1, cfg.N, cfg.D, cfg.DPrime
	X, Y, Target, f0, err := layers.RealInputs(s, B, T, d, dy)
	if err != nil {
		return err
	}
	m.X, m.Y, m.Target = X, Y, Target
	step, kern, bk, err := m.stepKernel()
	if err != nil {
		return err
	}
	if cfg.Literal {
		z := G.Must(ops.ConcatLast(m.X, m.Y, f0)) // (B, T, d+2d_y): e = (x, y, f)
		m.Tokens = append(m.Tokens, z)
		fOff := d + dy
		fSlot := func(z *G.Node) *G.Node { return G.Must(ops.Slice(z, 2, fOff, fOff+dy)) } // (B, T, d_y)
		m.F = append(m.F, fSlot(z))
		// The value reads y − f (Interleaved; offE = offF) or y (OneStep).
		sel := selector{D: cfg.TokenDim(), d: d, dp: dy, offE: fOff, offF: fOff}
		for k := 0; k < cfg.Blocks; k++ {
			upd, err := m.updateHeads(s.Sub(fmt.Sprintf("block%d", k)), sel, kern, step, z)
			if err != nil {
				return err
			}
			z = G.Must(G.Add(z, upd))
			m.Tokens = append(m.Tokens, z)
			m.F = append(m.F, fSlot(z))
		}
	} else {
		heads, err := m.kernelHeads(kern, bk, false)
		if err != nil {
			return err
		}
		yc := G.Must(ops.Slice(m.Y, 1, 0, N)) // (B, N, d_y)
		f := f0
		m.F = append(m.F, f)
		for k := 0; k < cfg.Blocks; k++ {
			mu, err := lik.Mean(G.Must(ops.Slice(f, 1, 0, N))) // (B, N, d_y): E(Y | f_i)
			if err != nil {
				return fmt.Errorf("likelihood %q: Mean: %w", lik.Name(), err)
			}
			r := G.Must(G.Mul(step, G.Must(G.Sub(yc, mu)))) // (B, N, d_y): (α/N)(y_i − E(Y|f_i))
			var df *G.Node
			for _, h := range heads {
				o := G.Must(ops.BatchedMatMul(h.w, r, false, false)) // (B, T, d_y)
				if h.p != nil {
					o = G.Must(ops.MatMul(o, h.p, false, false)) // (B, T, d_y)
				}
				if df == nil {
					df = o
				} else {
					df = G.Must(G.Add(df, o))
				}
			}
			f = G.Must(G.Add(f, df)) // (B, T, d_y)
			m.F = append(m.F, f)
		}
	}
	m.FQuery = G.Must(ops.Reshape(G.Must(ops.Slice(m.F[len(m.F)-1], 1, T-1, T)), tensor.Shape{B, dy})) // (B, d_y)
	if m.Logits, err = lik.Mean(m.FQuery); err != nil {
		return fmt.Errorf("likelihood %q: Mean: %w", lik.Name(), err)
	}
	if m.loss, err = lik.Loss(m.FQuery, m.Target); err != nil {
		return fmt.Errorf("likelihood %q: Loss: %w", lik.Name(), err)
	}
	return nil
}

// RealValued reports whether the model's likelihood is real-valued: its
// QueryLogits are then the prediction E(Y | f_K) (B, d_y), QueryTarget
// the query's target (B, d_y), and FeedReal, not Feed, loads minibatches.
func (m *Model) RealValued() bool { return m.Cfg.Real() }

// QueryLoss is the likelihood's training loss of the query (the mean
// squared error for the Gaussian), or nil for the categorical likelihood,
// whose runner computes the cross-entropy of the logits.
func (m *Model) QueryLoss() *G.Node { return m.loss }

// FeedReal copies one minibatch into a real-valued model's inputs: x is
// (B, T, d) and y is (B, T, d_y), row-major, with the query's target in the
// last row of each context (NaN where unknown: the target is then 0 and
// the loss is meaningless, as for prediction). The model never sees the
// query's y in its tokens. It returns an error naming the argument on a
// length mismatch or a NaN/±Inf in x or in a context y, and for a
// categorical model.
func (m *Model) FeedReal(x, y []float64) error {
	if !m.Cfg.Real() {
		return fmt.Errorf("gd: FeedReal: the model's likelihood is categorical; use Feed")
	}
	B, T, d, dy := m.Batch, m.Cfg.N+1, m.Cfg.D, m.Cfg.DPrime
	if len(x) != B*T*d {
		return fmt.Errorf("gd: FeedReal: x has %d values, want B*T*d = %d*%d*%d = %d", len(x), B, T, d, B*T*d)
	}
	if len(y) != B*T*dy {
		return fmt.Errorf("gd: FeedReal: y has %d values, want B*T*d_y = %d*%d*%d = %d", len(y), B, T, dy, B*T*dy)
	}
	return layers.FeedReal("gd: FeedReal", m.X, m.Y, m.Target, x, y, B, T, d, dy)
}
