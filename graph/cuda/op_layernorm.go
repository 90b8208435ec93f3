package cuda

import (
	"github.com/gdattn/gdattn/ops"
)

// Device versions of ops.LayerNorm's ops (kernels/layernorm.cu): the
// forward op (inputs x, x, scale[, bias]), the gradient through the
// centring (x, scale, dy), the gradient through the mean (dc) and the
// parameter gradients ((x, dy) for the scale, (dy) for the bias). Rows are
// the elements of x over its last dimension, the width of scale.

// Long rows (the language models' d' = 512) take the warp kernels: one
// warp per row, a launch per op; the parameter gradients' column sums over
// lnRowChunks(rows) items per column. Variables so that tests can take
// those paths on small models.
var (
	lnLongRow   = 128 // row width from which rows take a warp each
	lnManyRows  = 128 // rows from which the column sums are chunked
	lnChunkRows = 16  // rows per item, about
)

func lnRowChunks(rows int64) int64 { return max(1, min(64, rows/int64(lnChunkRows))) }

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
func lowerLayerNorm(x *Exec, v *value, op *ops.LayerNormOp) (devOp, error) {
	want := 3
	if op.Bias() {
		want = 4
	}
	if len(v.ins) != want || v.ins[0].size != v.size {
		return nil, nil
	}
	rows, d, ok := lnRows(v.ins[0])
	if !ok || v.ins[2].size != d || (op.Bias() && v.ins[3].size != d) {
		return nil, nil
	}
	eps := op.Eps()
	if d < lnLongRow {
		return devFunc(func(x *Exec, v *value) error {
			bias, has := v.ins[2].ptr, int32(0) // no bias: the scale stands in, unread
			if op.Bias() {
				bias, has = v.ins[3].ptr, 1
			}
			return x.launch(v, "ln_fwd", rows, int32(d), eps, has, v.ins[0].ptr, v.ins[2].ptr, bias, v.ptr)
		}), nil
	}
	return devFunc(func(x *Exec, v *value) error {
		bias, has := v.ins[2].ptr, int32(0) // no bias: the scale stands in, unread
		if op.Bias() {
			bias, has = v.ins[3].ptr, 1
		}
		return x.launch(v, "ln_fwd_warp", rows, int32(d), eps, has, v.ins[0].ptr, v.ins[2].ptr, bias, v.ptr)
	}), nil
}

// lowerLayerNormGrad maps ops.LayerNormGradOp (x, scale, dy).
func lowerLayerNormGrad(x *Exec, v *value, op *ops.LayerNormGradOp) (devOp, error) {
	if len(v.ins) != 3 || v.ins[0].size != v.size || v.ins[2].size != v.size {
		return nil, nil
	}
	rows, d, ok := lnRows(v.ins[0])
	if !ok || v.ins[1].size != d {
		return nil, nil
	}
	eps := op.Forward().Eps()
	if d < lnLongRow {
		return devFunc(func(x *Exec, v *value) error {
			return x.launch(v, "ln_grad", rows, int32(d), eps, v.ins[0].ptr, v.ins[1].ptr, v.ins[2].ptr, v.ptr)
		}), nil
	}
	return devFunc(func(x *Exec, v *value) error {
		return x.launch(v, "ln_grad_warp", rows, int32(d), eps, v.ins[0].ptr, v.ins[1].ptr, v.ins[2].ptr, v.ptr)
	}), nil
}

// lowerLayerNormMeanGrad maps ops.LayerNormMeanGradOp (dc).
func lowerLayerNormMeanGrad(x *Exec, v *value) (devOp, error) {
	if len(v.ins) != 1 || v.ins[0].size != v.size {
		return nil, nil
	}
	rows, d, ok := lnRows(v.ins[0])
	if !ok {
		return nil, nil
	}
	if d < lnLongRow {
		return devFunc(func(x *Exec, v *value) error {
			return x.launch(v, "ln_mean_grad", rows, int32(d), v.ins[0].ptr, v.ptr)
		}), nil
	}
	return devFunc(func(x *Exec, v *value) error {
		return x.launch(v, "ln_mean_grad_warp", rows, int32(d), v.ins[0].ptr, v.ptr)
	}), nil
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
	if rows >= int64(lnManyRows) {
		return lowerLayerNormParamGradLong(x, v, op, rows, d)
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

// lowerLayerNormParamGradLong is lowerLayerNormParamGrad for many rows: the
// rows' statistics (ln_s4_warp, a warp per row), then the column sums, a
// warp per column (ln_param_warp) up to warpSumMax rows, else in
// lnRowChunks(rows) chunks joined by reduce_join.
func lowerLayerNormParamGradLong(x *Exec, v *value, op *ops.LayerNormParamGradOp, rows int64, d int) (devOp, error) {
	if rows <= warpSumMax {
		return lowerLayerNormParamGradWarp(x, v, op, rows, d)
	}
	rc := lnRowChunks(rows)
	cpart, err := x.alloc(rc * int64(d) * 8)
	if err != nil {
		return nil, err
	}
	if op.Bias() {
		return devFunc(func(x *Exec, v *value) error {
			p := v.ins[0].ptr
			if err := x.launch(v, "ln_param_part", rc*int64(d), rows, int32(d), int32(rc), int32(1), p, p, p, cpart); err != nil {
				return err
			}
			return x.launch(v, "reduce_join", int64(d), rc, cpart, v.ptr)
		}), nil
	}
	// s4: 4 values per row in v's dtype (−mean, 1/s, s, unused), as
	// ln_param_part reads them.
	s4, err := x.alloc(4 * rows * int64(v.dt.Size()))
	if err != nil {
		return nil, err
	}
	eps := op.Forward().Eps()
	return devFunc(func(x *Exec, v *value) error {
		xp, dy := v.ins[0].ptr, v.ins[1].ptr
		if err := x.launch(v, "ln_s4_warp", rows, int32(d), eps, xp, s4); err != nil {
			return err
		}
		if err := x.launch(v, "ln_param_part", rc*int64(d), rows, int32(d), int32(rc), int32(0), xp, s4, dy, cpart); err != nil {
			return err
		}
		return x.launch(v, "reduce_join", int64(d), rc, cpart, v.ptr)
	}), nil
}

// lowerLayerNormParamGradWarp is lowerLayerNormParamGradLong with a warp
// per column: the bias's gradient in one launch, the scale's in two (the
// rows' statistics, then the sums).
func lowerLayerNormParamGradWarp(x *Exec, v *value, op *ops.LayerNormParamGradOp, rows int64, d int) (devOp, error) {
	if op.Bias() {
		return devFunc(func(x *Exec, v *value) error {
			p := v.ins[0].ptr
			return x.launch(v, "ln_param_warp", int64(d), rows, int32(1), p, p, p, v.ptr)
		}), nil
	}
	s4, err := x.alloc(4 * rows * int64(v.dt.Size()))
	if err != nil {
		return nil, err
	}
	eps := op.Forward().Eps()
	return devFunc(func(x *Exec, v *value) error {
		xp, dy := v.ins[0].ptr, v.ins[1].ptr
		if err := x.launch(v, "ln_s4_warp", rows, int32(d), eps, xp, s4); err != nil {
			return err
		}
		return x.launch(v, "ln_param_warp", int64(d), rows, int32(0), xp, s4, dy, v.ptr)
	}), nil
}
