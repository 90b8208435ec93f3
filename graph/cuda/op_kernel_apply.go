package cuda

import (
	"fmt"

	"github.com/gdattn/gdattn/ops"
	"gorgonia.org/tensor"
)

// lowerKernelApply maps the fused kernel-apply op (ops.KernelApplyOp: out =
// κ(q, k)·r) and, with wrt >= 0, its gradient op (wrt: r, the last forward
// input, or 2 for g) onto the kernel op's device code (lowerKernel) and
// Gemm: the node computes the weights W into a buffer of its own (the host
// op's sequence-at-a-time blocks are a CPU cache strategy; on the device W
// is one tensor), then out = W·r, dr = Wᵀ·dout, or dL/dW = dout·rᵀ into a
// second buffer and dg from W and dL/dW as the kernel op's gradient does.
// Inputs: q, k, then g if learned, then r; the gradient op adds out and
// dout.
func lowerKernelApply(x *Exec, v *value, op *ops.KernelApplyOp, wrt int) (devOp, error) {
	kop := op.Kernel()
	if kop.Masked() {
		return nil, nil
	}
	nk := 2
	if kop.LearnG() {
		nk++
	}
	grad := wrt >= 0
	want := nk + 1
	if grad {
		want += 2
	}
	if len(v.ins) != want || v.size <= 0 {
		return nil, nil
	}
	q, k, r := v.ins[0], v.ins[1], v.ins[nk]
	qs, ks, rs := q.shape, k.shape, r.shape
	if len(qs) != 3 || len(ks) != 3 || len(rs) != 3 || qs[0] != ks[0] || rs[0] != ks[0] || rs[1] != ks[1] {
		return nil, nil
	}
	B, tq, tk, p := qs[0], qs[1], ks[1], rs[2]
	esz := int64(v.dt.Size())
	wv, err := x.scratchValue(v.dt, tensor.Shape{B, tq, tk}, esz, v.ins[:nk])
	if err != nil {
		return nil, err
	}
	wdev, err := lowerKernel(x, wv, kop, -1)
	if err != nil || wdev == nil {
		return nil, err
	}
	// product runs c = op(a)·op(b) (gemm3's shapes) into out.
	product := func(x *Exec, a, b *value, tA, tB bool, shape tensor.Shape, out Ptr) error {
		pv := &value{shape: shape, dt: v.dt, size: shape.TotalSize(), ins: []*value{a, b}, ptr: out}
		g := gemm3(pv, tA, tB)
		if g == nil {
			return fmt.Errorf("cuda: kernel apply: product of %v and %v", a.shape, b.shape)
		}
		return g.run(x, pv)
	}
	switch {
	case !grad:
		if v.size != B*tq*p {
			return nil, nil
		}
		return devFunc(func(x *Exec, v *value) error {
			if err := wdev.run(x, wv); err != nil {
				return err
			}
			return product(x, wv, r, false, false, v.shape, v.ptr)
		}), nil
	case wrt == nk: // dr = Wᵀ·dout
		dout := v.ins[nk+2]
		if v.size != r.size || dout.size != B*tq*p {
			return nil, nil
		}
		return devFunc(func(x *Exec, v *value) error {
			if err := wdev.run(x, wv); err != nil {
				return err
			}
			return product(x, wv, dout, true, false, v.shape, v.ptr)
		}), nil
	case wrt == 2 && kop.LearnG():
		dout := v.ins[nk+2]
		if v.size != 1 || dout.size != B*tq*p {
			return nil, nil
		}
		dwv, err := x.scratchValue(v.dt, tensor.Shape{B, tq, tk}, esz, nil)
		if err != nil {
			return nil, err
		}
		// The kernel op's gradient node for g, reading W and dL/dW from
		// the buffers above and writing this node's scalar.
		gv := &value{shape: v.shape, dt: v.dt, size: v.size, bytes: v.bytes, kind: kindOp,
			ins: append(append([]*value{}, v.ins[:nk]...), wv, dwv)}
		gdev, err := lowerKernel(x, gv, kop, 2)
		if err != nil || gdev == nil {
			return nil, err
		}
		return devFunc(func(x *Exec, v *value) error {
			if err := wdev.run(x, wv); err != nil {
				return err
			}
			if err := product(x, dout, r, false, true, dwv.shape, dwv.ptr); err != nil {
				return err
			}
			gv.ptr = v.ptr
			return gdev.run(x, gv)
		}), nil
	}
	return nil, nil
}

// scratchValue returns an op value of the given shape backed by a device
// buffer of the executor (allocated now), with inputs ins: an intermediate
// of a fused op's device implementation.
func (x *Exec) scratchValue(dt tensor.Dtype, shape tensor.Shape, esz int64, ins []*value) (*value, error) {
	size := shape.TotalSize()
	ptr, err := x.alloc(int64(size) * esz)
	if err != nil {
		return nil, err
	}
	return &value{shape: shape, dt: dt, size: size, bytes: int64(size) * esz, ptr: ptr, kind: kindOp, ins: ins}, nil
}
