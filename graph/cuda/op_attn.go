package cuda

import (
	G "gorgonia.org/gorgonia"
)

// lowerKernel maps layers' fused kernel op (W = κ(q, k)) and its gradient
// op (wrt 0: q, 1: k, 2: g). Inputs: q, k, then g if learned, then the keep
// mask if masked; the gradient op adds W and dW.
func lowerKernel(x *Exec, v *value, op G.Op, grad bool) (devOp, error) {
	kindI, ok1 := fieldInt(op, "kind")
	learnG, ok2 := fieldBool(op, "learnG")
	masked, ok3 := fieldBool(op, "masked")
	gFixed, ok4 := fieldFloat(op, "g")
	// layers' kernelKind order (linear, rbf, exp, laplacian, softmax) is
	// the kind code of kernels/attn.cu.
	kind := int32(kindI)
	if !ok1 || !ok2 || !ok3 || !ok4 || kind < 0 || kind > 4 {
		return nil, nil
	}
	wrt := -1
	if grad {
		w, ok := fieldInt(op, "wrt")
		if !ok || w < 0 || w > 2 {
			return nil, nil
		}
		wrt = w
	}
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
	if !grad {
		if v.size != B*int(tq)*int(tk) {
			return nil, nil
		}
		if kind == 4 {
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
		if kind != 4 {
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
	return devFunc(func(x *Exec, v *value) error {
		if err := rowsum(x, v); err != nil {
			return err
		}
		if err := x.b.Zero(acc, 8); err != nil {
			return err
		}
		if err := x.launch(v, "attn_bwd_q", rows, kind, gp(), tq, tk, d, q.ptr, k.ptr, mflag, keep(), w.ptr, dw.ptr, rs, int32(0), v.ptr, int32(1), acc); err != nil {
			return err
		}
		return x.launch(v, "cast_acc", 1, acc, v.ptr)
	}), nil
}
