package cuda

import (
	"github.com/gdattn/gdattn/ops"
)

// Device versions of ops.LayerNorm's ops (kernels/layernorm.cu): the
// forward op (inputs x, x, scale[, bias]), the gradient through the
// centring (x, scale, dy), the gradient through the mean (dc) and the
// parameter gradients ((x, dy) for the scale, (dy) for the bias). Rows are
// the elements of x over its last dimension, the width of scale.

// lnRows returns the rows and width of a layer-norm tensor value of which
// the node's output (or, for the parameter gradients, its input) is made.
func lnRows(in *value) (rows int64, d int, ok bool) {
	if len(in.shape) < 2 {
		return 0, 0, false
	}
	d = in.shape[len(in.shape)-1]
	if d <= 0 || in.size%d != 0 {
		return 0, 0, false
	}
	return int64(in.size / d), d, true
}

// lowerLayerNorm maps ops.LayerNormOp.
func lowerLayerNorm(v *value, op *ops.LayerNormOp) devOp {
	want := 3
	if op.Bias() {
		want = 4
	}
	if len(v.ins) != want || v.ins[0].size != v.size {
		return nil
	}
	rows, d, ok := lnRows(v.ins[0])
	if !ok || v.ins[2].size != d || (op.Bias() && v.ins[3].size != d) {
		return nil
	}
	eps := op.Eps()
	return devFunc(func(x *Exec, v *value) error {
		bias, has := v.ins[2].ptr, int32(0) // no bias: the scale stands in, unread
		if op.Bias() {
			bias, has = v.ins[3].ptr, 1
		}
		return x.launch(v, "ln_fwd", rows, int32(d), eps, has, v.ins[0].ptr, v.ins[2].ptr, bias, v.ptr)
	})
}

// lowerLayerNormGrad maps ops.LayerNormGradOp (x, scale, dy).
func lowerLayerNormGrad(v *value, op *ops.LayerNormGradOp) devOp {
	if len(v.ins) != 3 || v.ins[0].size != v.size || v.ins[2].size != v.size {
		return nil
	}
	rows, d, ok := lnRows(v.ins[0])
	if !ok || v.ins[1].size != d {
		return nil
	}
	eps := op.Forward().Eps()
	return devFunc(func(x *Exec, v *value) error {
		return x.launch(v, "ln_grad", rows, int32(d), eps, v.ins[0].ptr, v.ins[1].ptr, v.ins[2].ptr, v.ptr)
	})
}

// lowerLayerNormMeanGrad maps ops.LayerNormMeanGradOp (dc).
func lowerLayerNormMeanGrad(v *value) devOp {
	if len(v.ins) != 1 || v.ins[0].size != v.size {
		return nil
	}
	rows, d, ok := lnRows(v.ins[0])
	if !ok {
		return nil
	}
	return devFunc(func(x *Exec, v *value) error {
		return x.launch(v, "ln_mean_grad", rows, int32(d), v.ins[0].ptr, v.ptr)
	})
}

// lowerLayerNormParamGrad maps ops.LayerNormParamGradOp: the scale's
// gradient from (x, dy) through the rows' statistics (a shared scratch of
// two values per row, computed by ln_stats in the same run), the bias's
// from (dy).
func lowerLayerNormParamGrad(x *Exec, v *value, op *ops.LayerNormParamGradOp) (devOp, error) {
	want := 2
	if op.Bias() {
		want = 1
	}
	if len(v.ins) != want {
		return nil, nil
	}
	dy := v.ins[want-1]
	rows, d, ok := lnRows(dy)
	if !ok || v.size != d || (!op.Bias() && v.ins[0].size != dy.size) {
		return nil, nil
	}
	if op.Bias() {
		return devFunc(func(x *Exec, v *value) error {
			p := v.ins[0].ptr
			return x.launch(v, "ln_param_grad", int64(d), rows, int32(1), p, p, p, v.ptr)
		}), nil
	}
	st, err := x.buf(x.sharedOf(op), "stats", v, int(2*rows))
	if err != nil {
		return nil, err
	}
	eps := op.Forward().Eps()
	return devFunc(func(x *Exec, v *value) error {
		if err := x.launch(v, "ln_stats", rows, int32(d), eps, v.ins[0].ptr, st); err != nil {
			return err
		}
		return x.launch(v, "ln_param_grad", int64(d), rows, int32(0), v.ins[0].ptr, st, v.ins[1].ptr, v.ptr)
	}), nil
}
