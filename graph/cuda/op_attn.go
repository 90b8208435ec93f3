package cuda

import (
	"github.com/gdattn/gdattn/ops"
)

// The kind codes the kernels of kernels/attn.cu and kernels/head.cu take
// for the built-in kernels (their "int kind" parameter; the C sources
// compare it with these literals).
const (
	kernLinear    int32 = 0 // q·k
	kernRBF       int32 = 1 // exp(−g ‖q−k‖²)
	kernExp       int32 = 2 // exp(g q·k)
	kernLaplacian int32 = 3 // exp(−g ‖q−k‖)
	kernSoftmax   int32 = 4 // exp(g q·k) / Σ_keys
)

// kernelCode is the kind code of kernels/attn.cu for a built-in kernel.
func kernelCode(k ops.KernelKind) (int32, bool) {
	switch k {
	case ops.KindLinear:
		return kernLinear, true
	case ops.KindRBF:
		return kernRBF, true
	case ops.KindExp:
		return kernExp, true
	case ops.KindLaplacian:
		return kernLaplacian, true
	case ops.KindSoftmax:
		return kernSoftmax, true
	}
	return 0, false
}

// lowerKernel maps the fused kernel op (ops.KernelOp: W = κ(q, k)) and,
// with wrt >= 0, its gradient op (ops.KernelGradOp, whose Forward is op;
// wrt 0: q, 1: k, 2: g). Inputs: q, k, then g if learned, then the keep
// mask if masked; the gradient op adds W and dW.
func lowerKernel(x *Exec, v *value, op *ops.KernelOp, wrt int) (devOp, error) {
	kind, ok := kernelCode(op.Kind())
	if !ok || wrt < -1 || wrt > 2 {
		return nil, nil
	}
	grad := wrt >= 0
	learnG, masked, gFixed := op.LearnG(), op.Masked(), op.FixedG()
	nf := 2
	if learnG {
		nf++
	}
	if masked {
		nf++
	}
	want := nf
	if grad {
		want += 2
	}
	if len(v.ins) != want {
		return nil, nil
	}
	q, k := v.ins[0], v.ins[1]
	qs, ks := q.shape, k.shape
	if len(qs) != 3 || len(ks) != 3 || qs[0] != ks[0] || qs[2] != ks[2] {
		return nil, nil
	}
	B, tq, tk, d := qs[0], int32(qs[1]), int32(ks[1]), int32(qs[2])
	// g: the learned scalar node, or a constant buffer holding the fixed g.
	gp, err := x.scalarArg(v, learnG, 2, gFixed)
	if err != nil {
		return nil, nil // a malformed g input: leave the op to the fallback
	}
	keep := func() Ptr { return q.ptr } // any valid pointer when unmasked
	mflag := int32(0)
	if masked {
		mv := v.ins[nf-1]
		if mv.size != B*int(tq)*int(tk) {
			return nil, nil
		}
		keep = func() Ptr { return mv.ptr }
		mflag = 1
	}
	if kind == kernLinear || kind == kernExp || kind == kernSoftmax {
		return lowerKernelDot(x, v, kernelDot{kind: kind, grad: grad, wrt: wrt, learnG: learnG, nf: nf,
			b: B, tq: int(tq), tk: int(tk), d: int(d), gp: gp, keep: keep, mflag: mflag})
	}
	if !grad {
		if v.size != B*int(tq)*int(tk) {
			return nil, nil
		}
		if kind == kernSoftmax {
			return devFunc(func(x *Exec, v *value) error {
				return x.launch(v, "attn_fwd_softmax", int64(B)*int64(tq), gp(), tq, tk, d, q.ptr, k.ptr, mflag, keep(), v.ptr)
			}), nil
		}
		return devFunc(func(x *Exec, v *value) error {
			return x.launch(v, "attn_fwd", int64(v.size), kind, gp(), tq, tk, d, q.ptr, k.ptr, mflag, keep(), v.ptr)
		}), nil
	}
	w, dw := v.ins[nf], v.ins[nf+1]
	if w.size != B*int(tq)*int(tk) || dw.size != w.size {
		return nil, nil
	}
	rows := int64(B) * int64(tq)
	// Row sums Σ_i W dW of the softmax kernel (dk needs them per row).
	// Allocated for every kind: the kernels take the pointer either way.
	rs, err := x.alloc(rows * 8)
	if err != nil {
		return nil, err
	}
	rowsum := func(x *Exec, v *value) error {
		if kind != kernSoftmax {
			return nil
		}
		return x.launch(v, "attn_rowsum", rows, tk, w.ptr, dw.ptr, rs)
	}
	switch wrt {
	case 0:
		if v.size != q.size {
			return nil, nil
		}
		return devFunc(func(x *Exec, v *value) error {
			if err := rowsum(x, v); err != nil {
				return err
			}
			return x.launch(v, "attn_bwd_q", rows, kind, gp(), tq, tk, d, q.ptr, k.ptr, mflag, keep(), w.ptr, dw.ptr, rs, int32(1), v.ptr, int32(0), rs)
		}), nil
	case 1:
		if v.size != k.size {
			return nil, nil
		}
		return devFunc(func(x *Exec, v *value) error {
			if err := rowsum(x, v); err != nil {
				return err
			}
			return x.launch(v, "attn_bwd_k", int64(B)*int64(tk), kind, gp(), tq, tk, d, q.ptr, k.ptr, mflag, keep(), w.ptr, dw.ptr, rs, v.ptr)
		}), nil
	}
	if v.size != 1 {
		return nil, nil
	}
	acc, err := x.alloc(8)
	if err != nil {
		return nil, err
	}
	dg, err := x.alloc(rows * 8) // the rows' dL/dg, summed in row order
	if err != nil {
		return nil, err
	}
	return devFunc(func(x *Exec, v *value) error {
		if err := rowsum(x, v); err != nil {
			return err
		}
		if err := x.b.Zero(acc, 8); err != nil {
			return err
		}
		if err := x.launch(v, "attn_bwd_q", rows, kind, gp(), tq, tk, d, q.ptr, k.ptr, mflag, keep(), w.ptr, dw.ptr, rs, int32(0), v.ptr, int32(1), dg); err != nil {
			return err
		}
		if err := x.b.Launch("attn_g_add", 1, int64(1), rows, dg, acc); err != nil {
			return err
		}
		return x.launch(v, "cast_acc", 1, acc, v.ptr)
	}), nil
}

// kernelDot describes one node of a dot-product kernel op (linear, exp,
// softmax) for lowerKernelDot.
type kernelDot struct {
	kind         int32
	grad         bool
	wrt, nf      int
	learnG       bool
	b, tq, tk, d int
	gp, keep     func() Ptr
	mflag        int32
}

// attnLongRow is the number of keys from which the dot-product kernels'
// rows take a warp each (attn_rows_warp, attn_coef_warp) instead of a
// thread (a variable so that tests can take the long path on short
// contexts).
var attnLongRow = 64

// kernelDotKey identifies the gradient nodes of one kernel op: they read the
// same q, k, W and dW.
type kernelDotKey struct{ q, k, w, dw *value }

// lowerKernelDot runs the dot-product kernels on Gemm: forward S = Q Kᵀ then
// W = κ(S) row by row; backward C = dL/dS row by row, dQ = C K, dK = Cᵀ Q
// and dg = Σ e S. The first gradient node of the op (in run order) computes
// S, C and dg into buffers its sibling nodes reuse.
func lowerKernelDot(x *Exec, v *value, kd kernelDot) (devOp, error) {
	q, k := v.ins[0], v.ins[1]
	B, tq, tk, d := kd.b, kd.tq, kd.tk, kd.d
	n := B * tq * tk
	rows := int64(B * tq)
	scores := func(x *Exec, v *value, dst Ptr) error {
		return x.b.Gemm(v.dt, false, true, tq, tk, d, 1, q.ptr, d, int64(tq*d), k.ptr, d, int64(tk*d), 0, dst, tk, int64(tq*tk), B)
	}
	if !kd.grad {
		if v.size != n {
			return nil, nil
		}
		if tk < attnLongRow {
			return devFunc(func(x *Exec, v *value) error {
				if err := scores(x, v, v.ptr); err != nil {
					return err
				}
				return x.launch(v, "attn_dot_rows", rows, kd.kind, kd.gp(), int32(tk), kd.mflag, kd.keep(), v.ptr)
			}), nil
		}
		// Long rows: a warp per row.
		return devFunc(func(x *Exec, v *value) error {
			if err := scores(x, v, v.ptr); err != nil {
				return err
			}
			return x.launch(v, "attn_rows_warp", rows, kd.kind, kd.gp(), int32(tk), kd.mflag, kd.keep(), v.ptr)
		}), nil
	}
	w, dw := v.ins[kd.nf], v.ins[kd.nf+1]
	if w.size != n || dw.size != n {
		return nil, nil
	}
	switch kd.wrt {
	case 0:
		if v.size != q.size {
			return nil, nil
		}
	case 1:
		if v.size != k.size {
			return nil, nil
		}
	default:
		if v.size != 1 || !kd.learnG {
			return nil, nil
		}
	}
	// From here the node runs on the device.
	sh := x.sharedOf(kernelDotKey{q, k, w, dw})
	first := !sh.fwd // no sibling lowered yet: this node computes
	sh.fwd = true
	s, err := x.buf(sh, "s", v, n)
	if err != nil {
		return nil, err
	}
	c, err := x.buf(sh, "c", v, n)
	if err != nil {
		return nil, err
	}
	acc, err := x.buf(sh, "acc", v, 8/int(v.dt.Size()))
	if err != nil {
		return nil, err
	}
	wantg := int32(0)
	if kd.learnG {
		wantg = 1
	}
	// The rows' dL/dg (float64), when learned, summed by attn_g_add in
	// row order.
	var dg Ptr
	if wantg != 0 {
		if dg, err = x.buf(sh, "dg", v, int(rows)*int(8/v.dt.Size())); err != nil {
			return nil, err
		}
	}
	prepare := func(x *Exec, v *value) error {
		if !first {
			return nil
		}
		if err := scores(x, v, s); err != nil {
			return err
		}
		if err := x.b.Zero(acc, 8); err != nil {
			return err
		}
		dgp := dg
		if wantg == 0 {
			dgp = acc // not written
		}
		// C and each row's dL/dg: a thread per row, or a warp per long
		// row; then dL/dg summed in row order.
		name := "attn_dot_coef"
		if tk >= attnLongRow {
			name = "attn_coef_warp"
		}
		if err := x.launch(v, name, rows, kd.kind, kd.gp(), int32(tk), kd.mflag, kd.keep(), w.ptr, dw.ptr, s, c, wantg, dgp); err != nil {
			return err
		}
		if wantg == 0 {
			return nil
		}
		return x.b.Launch("attn_g_add", 1, int64(1), rows, dg, acc)
	}
	switch kd.wrt {
	case 0:
		return devFunc(func(x *Exec, v *value) error {
			if err := prepare(x, v); err != nil {
				return err
			}
			return x.b.Gemm(v.dt, false, false, tq, d, tk, 1, c, tk, int64(tq*tk), k.ptr, d, int64(tk*d), 0, v.ptr, d, int64(tq*d), B)
		}), nil
	case 1:
		return devFunc(func(x *Exec, v *value) error {
			if err := prepare(x, v); err != nil {
				return err
			}
			return x.b.Gemm(v.dt, true, false, tk, d, tq, 1, c, tk, int64(tq*tk), q.ptr, d, int64(tq*d), 0, v.ptr, d, int64(tk*d), B)
		}), nil
	}
	return devFunc(func(x *Exec, v *value) error {
		if err := prepare(x, v); err != nil {
			return err
		}
		return x.launch(v, "cast_acc", 1, acc, v.ptr)
	}), nil
}
