package cuda

import (
	"github.com/gdattn/gdattn/ops"
)

// headPlan holds the sizes and buffers of one fused attention head
// (ops.HeadOp): z (B, T, Din), W_Q, W_K (Din, DK), W_V (Din, DV),
// P (DV, Dout), keys the first Tk positions.
type headPlan struct {
	b, t, tk, din, dk, dv, dout, nh int
	kind                            int32
	// weights and dscores: the per-row kernels, head_weights and
	// head_dscores, or their warp forms for rows of headLongRow keys and more.
	weights, dscores string
	// q: a query head (ops.AttentionHeadQuery), output (B, 1, Dout)
	// at the last position; s, w and ds then hold one row per sequence.
	q                            bool
	gp                           func() Ptr
	h, zh, s, w, ds, gb, dh, acc Ptr
	dg                           Ptr // the score rows' dL/dg (float64)
}

// addG sums the rows' dL/dg that head_dscores wrote into dg, in row order,
// into acc (attn_g_add); the linear kernel's rows hold 0, so acc, zeroed,
// needs nothing.
func (hp *headPlan) addG(x *Exec, rows int64) error {
	if hp.kind == 0 {
		return nil
	}
	return x.b.Launch("attn_g_add", 1, int64(1), rows, hp.dg, hp.acc)
}

// headLongRow is the number of keys from which the head's per-row kernels
// take a warp per row (a variable so that tests can take that path on short
// contexts).
var headLongRow = 64

// off is p advanced by n elements of v's dtype.
func off(v *value, p Ptr, n int) Ptr { return p + Ptr(uintptr(n)*v.dt.Size()) }

// lowerHead maps the fused attention head's forward op (ops.HeadOp, the
// full head or the query head of ops.AttentionHeadQuery); its
// gradient nodes go through lowerHeadGrad. The forward node keeps z[A U],
// the scores and the weights in buffers shared with the gradient nodes,
// which are lowered only when the node before them is.
func lowerHead(x *Exec, v *value, op *ops.HeadOp) (devOp, error) {
	code, ok := kernelCode(op.Kind())
	// A regrouped query head (ops.AttentionHeadQueryRegrouped) has no
	// device kernels: it runs on the host.
	if !ok || !op.Kind().DotProduct() || (op.QueryOnly() && !op.ContextKeys()) || op.Regrouped() {
		return nil, nil
	}
	learnG, ctx, gFixed := op.LearnG(), op.ContextKeys(), op.FixedG()
	nf := 5
	if learnG {
		nf = 6
	}
	if len(v.ins) != nf {
		return nil, nil
	}
	z, wq, wk, wv, wo := v.ins[0], v.ins[1], v.ins[2], v.ins[3], v.ins[4]
	zs, qs, ks, vs, ps := z.shape, wq.shape, wk.shape, wv.shape, wo.shape
	if len(zs) != 3 || len(qs) != 2 || len(ks) != 2 || len(vs) != 2 || len(ps) != 2 ||
		qs[0] != zs[2] || ks[0] != zs[2] || vs[0] != zs[2] || qs[1] != ks[1] || ps[0] != vs[1] {
		return nil, nil
	}
	hp := &headPlan{b: zs[0], t: zs[1], tk: zs[1], din: zs[2], dk: qs[1], dv: vs[1], dout: ps[1], kind: code, q: op.QueryOnly()}
	rows := hp.t // output rows per sequence
	if hp.q {
		rows = 1
	}
	if ctx {
		hp.tk--
	}
	hp.nh = hp.din + hp.dout
	if hp.tk < 1 || v.size != hp.b*rows*hp.dout {
		return nil, nil
	}
	hp.weights, hp.dscores = "head_weights", "head_dscores"
	if hp.tk >= headLongRow {
		hp.weights, hp.dscores = "head_weights_warp", "head_dscores_warp"
	}
	gp, err := x.scalarArg(v, learnG, nf-1, gFixed)
	if err != nil {
		return nil, err
	}
	hp.gp = gp
	sh := x.sharedOf(op)
	M := hp.b * hp.t
	R := hp.b * rows // score rows
	for _, b := range []struct {
		p *Ptr
		n string
		e int
	}{{&hp.h, "h", hp.din * hp.nh}, {&hp.zh, "zh", M * hp.nh}, {&hp.s, "s", R * hp.tk}, {&hp.w, "w", R * hp.tk},
		{&hp.ds, "ds", R * hp.tk}, {&hp.gb, "gb", M * hp.nh}, {&hp.dh, "dh", hp.din * hp.nh}} {
		if *b.p, err = x.buf(sh, b.n, v, b.e); err != nil {
			return nil, err
		}
	}
	if hp.acc, err = x.buf(sh, "acc", v, 8/int(v.dt.Size())); err != nil {
		return nil, err
	}
	if hp.dg, err = x.buf(sh, "dg", v, R*8/int(v.dt.Size())); err != nil {
		return nil, err
	}
	sh.fwd = true
	sh.plan = hp
	T, Tk, Din, Dout, nh := hp.t, hp.tk, hp.din, hp.dout, hp.nh
	return devFunc(func(x *Exec, v *value) error {
		b, dt := x.b, v.dt
		steps := []func() error{
			// h = [W_Q W_Kᵀ | W_V P]
			func() error {
				return b.Gemm(dt, false, true, Din, Din, hp.dk, 1, wq.ptr, hp.dk, 0, wk.ptr, hp.dk, 0, 0, hp.h, nh, 0, 1)
			},
			func() error {
				return b.Gemm(dt, false, false, Din, Dout, hp.dv, 1, wv.ptr, hp.dv, 0, wo.ptr, Dout, 0, 0, off(v, hp.h, Din), nh, 0, 1)
			},
			// zh = z h
			func() error {
				return b.Gemm(dt, false, false, M, nh, Din, 1, z.ptr, Din, 0, hp.h, nh, 0, 0, hp.zh, nh, 0, 1)
			},
		}
		if hp.q {
			steps = append(steps,
				// s_b = (z A)_{b,T-1} z_b[:Tk]ᵀ, one row
				func() error {
					return b.Gemm(dt, false, true, 1, Tk, Din, 1, off(v, hp.zh, (T-1)*nh), nh, int64(T*nh), z.ptr, Din, int64(T*Din), 0, hp.s, Tk, int64(Tk), hp.b)
				},
				func() error { return x.launch(v, hp.weights, int64(R), hp.kind, hp.gp(), int32(Tk), hp.s, hp.w) },
				// out_b = w_b (z U)_b[:Tk]
				func() error {
					return b.Gemm(dt, false, false, 1, Dout, Tk, 1, hp.w, Tk, int64(Tk), off(v, hp.zh, Din), nh, int64(T*nh), 0, v.ptr, Dout, int64(Dout), hp.b)
				})
		} else {
			steps = append(steps,
				// s_b = (z A)_b z_b[:Tk]ᵀ
				func() error {
					return b.Gemm(dt, false, true, T, Tk, Din, 1, hp.zh, nh, int64(T*nh), z.ptr, Din, int64(T*Din), 0, hp.s, Tk, int64(T*Tk), hp.b)
				},
				func() error { return x.launch(v, hp.weights, int64(M), hp.kind, hp.gp(), int32(Tk), hp.s, hp.w) },
				// out_b = w_b (z U)_b[:Tk]
				func() error {
					return b.Gemm(dt, false, false, T, Dout, Tk, 1, hp.w, Tk, int64(T*Tk), off(v, hp.zh, Din), nh, int64(T*nh), 0, v.ptr, Dout, int64(T*Dout), hp.b)
				})
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return err
			}
		}
		return nil
	}), nil
}

// lowerHeadGrad lowers the gradient nodes of the fused head head: its dz
// op (wrt 0, ops.HeadGradOp; inputs: forward inputs, out, dout) when the
// forward node runs on the device, and its parameter gradient ops (wrt
// 1..5 = W_Q, W_K, W_V, P, g, ops.HeadParamGradOp; inputs: forward inputs,
// out, dout, dz) when the dz node does.
func lowerHeadGrad(x *Exec, v *value, head *ops.HeadOp, wrt int) (devOp, error) {
	if head == nil {
		return nil, nil
	}
	sh := x.sharedOf(head)
	if (wrt == 0 && !sh.fwd) || (wrt != 0 && !sh.grad) {
		return nil, nil
	}
	hp, ok := sh.plan.(*headPlan)
	if !ok {
		return nil, nil
	}
	nf := len(v.ins) - 2
	if wrt != 0 {
		nf--
	}
	if nf != 5 && nf != 6 {
		return nil, nil
	}
	z, wq, wk, wv, wo := v.ins[0], v.ins[1], v.ins[2], v.ins[3], v.ins[4]
	dout := v.ins[nf+1]
	M, T, Tk, Din, Dout, nh := hp.b*hp.t, hp.t, hp.tk, hp.din, hp.dout, hp.nh
	R := M // rows of dout and of the scores
	if hp.q {
		R = hp.b
	}
	if dout.size != R*Dout || z.size != M*Din {
		return nil, nil
	}
	if wrt == 0 {
		if v.size != z.size {
			return nil, nil
		}
		sh.grad = true
		if hp.q {
			return lowerHeadQueryGrad(hp, z, dout), nil
		}
		return devFunc(func(x *Exec, v *value) error {
			b, dt := x.b, v.dt
			steps := []func() error{
				// dw_b = dout_b (z U)_b[:Tk]ᵀ, then ds and dg
				func() error {
					return b.Gemm(dt, false, true, T, Tk, Dout, 1, dout.ptr, Dout, int64(T*Dout), off(v, hp.zh, Din), nh, int64(T*nh), 0, hp.ds, Tk, int64(T*Tk), hp.b)
				},
				func() error { return b.Zero(hp.acc, 8) },
				func() error {
					return x.launch(v, hp.dscores, int64(M), hp.kind, hp.gp(), int32(Tk), hp.s, hp.w, hp.ds, hp.dg)
				},
				func() error { return hp.addG(x, int64(M)) },
				// gb = [ds_b z_b[:Tk] | w_bᵀ dout_b (rows < Tk)]
				func() error { return b.Zero(hp.gb, int64(M*nh)*int64(v.dt.Size())) },
				func() error {
					return b.Gemm(dt, true, false, Tk, Dout, T, 1, hp.w, Tk, int64(T*Tk), dout.ptr, Dout, int64(T*Dout), 0, off(v, hp.gb, Din), nh, int64(T*nh), hp.b)
				},
				func() error {
					return b.Gemm(dt, false, false, T, Din, Tk, 1, hp.ds, Tk, int64(T*Tk), z.ptr, Din, int64(T*Din), 0, hp.gb, nh, int64(T*nh), hp.b)
				},
				// dz_b[:Tk] = ds_bᵀ (z A)_b, dz += gb hᵀ
				func() error { return b.Zero(v.ptr, v.bytes) },
				func() error {
					return b.Gemm(dt, true, false, Tk, Din, T, 1, hp.ds, Tk, int64(T*Tk), hp.zh, nh, int64(T*nh), 0, v.ptr, Din, int64(T*Din), hp.b)
				},
				func() error {
					return b.Gemm(dt, false, true, M, Din, nh, 1, hp.gb, nh, 0, hp.h, nh, 0, 1, v.ptr, Din, 0, 1)
				},
				// dh = zᵀ gb = [dA | dU]
				func() error {
					return b.Gemm(dt, true, false, Din, nh, M, 1, z.ptr, Din, 0, hp.gb, nh, 0, 0, hp.dh, nh, 0, 1)
				},
			}
			for _, s := range steps {
				if err := s(); err != nil {
					return err
				}
			}
			return nil
		}), nil
	}
	if wrt < 1 || wrt > 5 || (wrt < 5 && v.size != v.ins[wrt].size) || (wrt == 5 && v.size != 1) {
		return nil, nil
	}
	dA, dU := hp.dh, off(v, hp.dh, Din)
	return devFunc(func(x *Exec, v *value) error {
		b, dt := x.b, v.dt
		switch wrt {
		case 1: // dW_Q = dA W_K
			return b.Gemm(dt, false, false, Din, hp.dk, Din, 1, dA, nh, 0, wk.ptr, hp.dk, 0, 0, v.ptr, hp.dk, 0, 1)
		case 2: // dW_K = dAᵀ W_Q
			return b.Gemm(dt, true, false, Din, hp.dk, Din, 1, dA, nh, 0, wq.ptr, hp.dk, 0, 0, v.ptr, hp.dk, 0, 1)
		case 3: // dW_V = dU Pᵀ
			return b.Gemm(dt, false, true, Din, hp.dv, Dout, 1, dU, nh, 0, wo.ptr, Dout, 0, 0, v.ptr, hp.dv, 0, 1)
		case 4: // dP = W_Vᵀ dU
			return b.Gemm(dt, true, false, hp.dv, Dout, Din, 1, wv.ptr, hp.dv, 0, dU, nh, 0, 0, v.ptr, Dout, 0, 1)
		}
		return x.launch(v, "cast_acc", 1, hp.acc, v.ptr)
	}), nil
}

// lowerHeadQueryGrad is the dz op of a query head: what the full head's
// computes for a dout that is zero but at the last position, over the
// nonzero blocks (dout (B, Dout), one row of scores per sequence).
func lowerHeadQueryGrad(hp *headPlan, z, dout *value) devOp {
	M, T, Tk, Din, Dout, nh := hp.b*hp.t, hp.t, hp.tk, hp.din, hp.dout, hp.nh
	q := T - 1
	return devFunc(func(x *Exec, v *value) error {
		b, dt := x.b, v.dt
		steps := []func() error{
			// dw_b = dout_b (z U)_b[:Tk]ᵀ, then ds and dg
			func() error {
				return b.Gemm(dt, false, true, 1, Tk, Dout, 1, dout.ptr, Dout, int64(Dout), off(v, hp.zh, Din), nh, int64(T*nh), 0, hp.ds, Tk, int64(Tk), hp.b)
			},
			func() error { return b.Zero(hp.acc, 8) },
			func() error {
				return x.launch(v, hp.dscores, int64(hp.b), hp.kind, hp.gp(), int32(Tk), hp.s, hp.w, hp.ds, hp.dg)
			},
			func() error { return hp.addG(x, int64(hp.b)) },
			// gb = [ds_b z_b[:Tk] at the query row | w_bᵀ dout_b (rows < Tk)]
			func() error { return b.Zero(hp.gb, int64(M*nh)*int64(v.dt.Size())) },
			func() error {
				return b.Gemm(dt, true, false, Tk, Dout, 1, 1, hp.w, Tk, int64(Tk), dout.ptr, Dout, int64(Dout), 0, off(v, hp.gb, Din), nh, int64(T*nh), hp.b)
			},
			func() error {
				return b.Gemm(dt, false, false, 1, Din, Tk, 1, hp.ds, Tk, int64(Tk), z.ptr, Din, int64(T*Din), 0, off(v, hp.gb, q*nh), nh, int64(T*nh), hp.b)
			},
			// dz_b[:Tk] = ds_bᵀ (z A)_{b,T-1}, dz += gb hᵀ
			func() error { return b.Zero(v.ptr, v.bytes) },
			func() error {
				return b.Gemm(dt, true, false, Tk, Din, 1, 1, hp.ds, Tk, int64(Tk), off(v, hp.zh, q*nh), nh, int64(T*nh), 0, v.ptr, Din, int64(T*Din), hp.b)
			},
			func() error {
				return b.Gemm(dt, false, true, M, Din, nh, 1, hp.gb, nh, 0, hp.h, nh, 0, 1, v.ptr, Din, 0, 1)
			},
			// dh = zᵀ gb = [dA | dU]
			func() error {
				return b.Gemm(dt, true, false, Din, nh, M, 1, z.ptr, Din, 0, hp.gb, nh, 0, 0, hp.dh, nh, 0, 1)
			},
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return err
			}
		}
		return nil
	})
}
