package gd

import (
	"fmt"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// buildStructured builds the GD model without materialising the token
// matrix: the construction's W_Q, W_K, W_V and P are fixed selections of
// the blocks of e = (x, w_{e,y}, E, f), so the graph applies them as what
// they are. The kernel weights κ(x_i, x_j) depend on x only and are computed
// once for all blocks; each block then computes
//
//	f ← f + Σ_m [(α/N) Σ_i κ_m(x_i, x_j) (w_{e,y_i} − E_i)] P_m
//	E ← E(w_e | f)                       (context positions; cross-attention)
//
// which is exactly what the literal token-level construction (Config.Literal)
// computes — the tests check both against the reference — with a fraction of
// the work.
//
// bk, when non-nil, is kern as a built-in kernel: with a single head the
// kernel's inputs are the covariates themselves, data, and its weights are
// then computed by bk.DataWeights, whose backward pass computes dg only;
// with a single block as well, the weights and their product with the
// residuals are one op (bk.DataApply: the same numbers, a sequence at a
// time in cache instead of (B, T, N) tensors through memory).
func (m *Model) buildStructured(step *G.Node, kern layers.Kernel, bk *layers.BuiltinKernel) error {
	cfg, s := m.Cfg, m.s
	B, T, N, dp, C := m.Batch, cfg.N+1, cfg.N, cfg.DPrime, cfg.C
	var wy, e *G.Node
	if !cfg.FuseEncoder {
		wy = m.enc.WY                                                                    // (B*T, d'): the encoder's w_{e,y}, 0 at the query
		wy = G.Must(ops.Slice(G.Must(ops.Reshape(wy, tensor.Shape{B, T, dp})), 1, 0, N)) // (B, N, d')
	}
	if !cfg.FuseEncoder { // with FuseEncoder the first block's residuals are one op
		meanCol, err := s.Const("structured_mean_weights", tensor.Shape{C, 1}, fill(C, 1/float64(C)))
		if err != nil {
			return err
		}
		ops.MarkData(meanCol)
		ones, err := s.Const("structured_context_rows", tensor.Shape{B * N, 1}, fill(B*N, 1))
		if err != nil {
			return err
		}
		ops.MarkData(ones)
		wbar := G.Must(ops.MatMul(m.We, meanCol, false, false))                                      // (d', 1)
		e = G.Must(ops.Reshape(G.Must(ops.MatMul(ones, wbar, false, true)), tensor.Shape{B, N, dp})) // (B, N, d'): E(w_e|0) = w̄_e
	}
	f0, err := s.Const("structured_f0", tensor.Shape{B, T, dp}, make([]float64, B*T*dp))
	if err != nil {
		return err
	}
	ops.MarkData(f0)
	f := f0
	m.F = append(m.F, f)

	heads, err := m.kernelHeads(kern, bk, cfg.Blocks == 1)
	if err != nil {
		return err
	}
	for k := 0; k < cfg.Blocks; k++ {
		var r *G.Node // (B, N, d'): (α/N)(w_{e,y_i} − E_i)
		switch {
		case k == 0 && cfg.FuseEncoder:
			if r, err = ops.LabelResiduals(m.We, m.Labels, step, N); err != nil {
				return err
			}
		case cfg.FuseEncoder: // a later block: E(w_e | f_k) instead of w̄_e
			if r, err = ops.LabelResidualsOf(m.We, m.Labels, step, e, N); err != nil {
				return err
			}
		default:
			r = G.Must(G.Mul(step, G.Must(G.Sub(wy, e))))
		}
		if k == cfg.Blocks-1 {
			// The loss reads f_K at the query alone: the last block's
			// update of that row only. F[K] below is every row's, for
			// machines that ask for it.
			if m.fQuery, err = m.queryUpdate(f, r, heads, bk); err != nil {
				return err
			}
		}
		var df *G.Node
		for _, h := range heads {
			var o *G.Node
			if h.w == nil { // a single block and head: the fused op
				o, err = bk.DataApply(h.x, h.keys, r) // (B, T, d')
				if err != nil {
					return err
				}
			} else {
				o = G.Must(ops.BatchedMatMul(h.w, r, false, false)) // (B, T, d')
			}
			if h.p != nil {
				o = G.Must(ops.MatMul(o, h.p, false, false)) // (B, T, d')
			}
			if df == nil {
				df = o
			} else {
				df = G.Must(G.Add(df, o))
			}
		}
		f = G.Must(G.Add(f, df)) // (B, T, d')
		m.F = append(m.F, f)
		if cfg.Form == Interleaved && k+1 < cfg.Blocks {
			fc := G.Must(ops.Slice(f, 1, 0, N))               // (B, N, d')
			ec, err := layers.Expectation(fc, m.We, nil, nil) // (B, N, d')
			if err != nil {
				return err
			}
			e = ec
		}
	}
	return nil
}

// queryUpdate returns f_K at the query (B, 1, d'): f's query row plus the
// last block's update of that row, the heads' weights of the query row
// applied to the residuals r (B, N, d'). Each element is the same chain of
// operations as in the full update's query row, so the values and the
// gradients are the same bits.
func (m *Model) queryUpdate(f, r *G.Node, heads []structHead, bk *layers.BuiltinKernel) (*G.Node, error) {
	T := m.Cfg.N + 1
	var df *G.Node
	for _, h := range heads {
		var o *G.Node
		if h.w == nil { // a single block and head: the fused op on the query row
			var err error
			if o, err = bk.DataApply(G.Must(ops.Slice(h.x, 1, T-1, T)), h.keys, r); err != nil { // (B, 1, d')
				return nil, err
			}
		} else {
			o = G.Must(ops.BatchedMatMul(G.Must(ops.Slice(h.w, 1, T-1, T)), r, false, false)) // (B, 1, d')
		}
		if h.p != nil {
			o = G.Must(ops.MatMul(o, h.p, false, false)) // (B, 1, d')
		}
		if df == nil {
			df = o
		} else {
			df = G.Must(G.Add(df, o))
		}
	}
	return G.Add(G.Must(ops.Slice(f, 1, T-1, T)), df)
}

// structHead is one update head of the structured construction: its kernel
// weights (B, T, N) and its merge matrix P_m (nil with a single head). With
// a single block and head and a built-in kernel, w is nil and the block
// applies the kernel of queries x (B, T, d) and keys (B, N, d) itself
// (BuiltinKernel.DataApply).
type structHead struct{ w, p, x, keys *G.Node }

// kernelHeads computes the kernel weights κ_m(x_i, x_j) of every head
// (context keys only) and creates the heads' Λ_m and P_m with Heads > 1.
// With fuse, a single head and a built-in kernel, it leaves the weights to
// the block (structHead).
func (m *Model) kernelHeads(kern layers.Kernel, bk *layers.BuiltinKernel, fuse bool) ([]structHead, error) {
	cfg, s := m.Cfg, m.s
	B, T, N, d, dp := m.Batch, cfg.N+1, cfg.N, cfg.D, cfg.DPrime
	x := m.X // (B, T, d)
	// Kernel weights (B, T, N) and merge matrices of every head.
	heads := make([]structHead, cfg.Heads)
	for h := range heads {
		xh := x
		if cfg.Heads > 1 {
			hs := s.Sub(fmt.Sprintf("head%d", h))
			lam, err := hs.Param("lambda", tensor.Shape{1, d}, jitter(0.25))
			if err != nil {
				return nil, err
			}
			pm, err := hs.Param("p", tensor.Shape{dp, dp}, graph.FromValues(eye(dp, 1/float64(cfg.Heads))))
			if err != nil {
				return nil, err
			}
			x2 := G.Must(ops.Reshape(x, tensor.Shape{B * T, d}))          // (B*T, d)
			xh = G.Must(G.BroadcastHadamardProd(x2, lam, nil, []byte{0})) // (B*T, d): Λ_m x
			xh = G.Must(ops.Reshape(xh, tensor.Shape{B, T, d}))           // (B, T, d)
			heads[h].p = pm
		}
		keys := G.Must(ops.Slice(xh, 1, 0, N)) // (B, N, d): the context only
		var w *G.Node
		var err error
		if fuse && bk != nil && cfg.Heads == 1 {
			heads[h].x, heads[h].keys = xh, keys
			continue
		}
		if bk != nil && cfg.Heads == 1 {
			w, err = bk.DataWeights(xh, keys, nil) // (B, T, N)
		} else {
			w, err = kern(xh, keys, nil) // (B, T, N)
		}
		if err != nil {
			return nil, err
		}
		heads[h].w = w
	}
	return heads, nil
}
