package cuda

import (
	"gorgonia.org/tensor"
)

// unaryCodes maps Gorgonia's unary op names to the op codes of ew_unary in
// kernels/elem.cu.
var unaryCodes = map[string]int32{
	"neg": 0, "exp": 1, "ln": 2, "sqrt": 3, "square": 4, "cube": 5, "inv": 6,
	"sigmoid": 7, "tanh": 8, "abs": 9, "log1p": 10, "expm1": 11, "softplus": 12,
	"invSqrt": 13, "sign": 14, "log2": 15,
}

// binaryCodes maps Gorgonia's binary op symbols to the op codes of
// ew_binary (comparisons stay on the fallback).
var binaryCodes = map[string]int32{"+": 0, "-": 1, "⊙": 2, "÷": 3, "^": 4}

// lowerUnary maps Gorgonia's elemUnaryOp, whose String is the op's name.
func lowerUnary(v *value, name string) devOp {
	code, ok := unaryCodes[name]
	if !ok || len(v.ins) != 1 || v.ins[0].size != v.size {
		return nil
	}
	v.inPlace = v.ins[:1] // y[i] from x[i] alone
	v.ew = &ewNode{code: code}
	return devFunc(func(x *Exec, v *value) error {
		return x.launch(v, "ew_unary", int64(v.size), code, v.ins[0].ptr, v.ptr)
	})
}

// lowerGELU maps ops.GELU (x) and, with grad, its gradient (x, dy) to the
// kernels gelu and gelu_grad of kernels/elem.cu.
func lowerGELU(v *value, grad bool) devOp {
	if !grad {
		if len(v.ins) != 1 || v.ins[0].size != v.size {
			return nil
		}
		v.inPlace = v.ins[:1] // y[i] from x[i] alone
		v.ew = &ewNode{code: chainGELU}
		return devFunc(func(x *Exec, v *value) error {
			return x.launch(v, "gelu", int64(v.size), v.ins[0].ptr, v.ptr)
		})
	}
	if len(v.ins) != 2 || v.ins[0].size != v.size || v.ins[1].size != v.size {
		return nil
	}
	v.inPlace = v.ins[:2] // y[i] from x[i] and dy[i] alone
	v.ew = &ewNode{binary: true, code: chainGELUGrad}
	return devFunc(func(x *Exec, v *value) error {
		return x.launch(v, "gelu_grad", int64(v.size), v.ins[0].ptr, v.ins[1].ptr, v.ptr)
	})
}

// lowerBinary handles same-size operands and a scalar (size-1) operand
// broadcast against a tensor; Gorgonia's broadcasts of other shapes reach
// elemBinOp through repeatOp. s is the op's String.
func lowerBinary(v *value, s string) devOp {
	if len(v.ins) != 2 {
		return nil
	}
	// elemBinOp prints as "<symbol> <retSame>".
	sym := s
	for i, r := range s {
		if r == ' ' {
			sym = s[:i]
			break
		}
	}
	code, ok := binaryCodes[sym]
	if !ok {
		return nil
	}
	a, b := v.ins[0], v.ins[1]
	stride := func(in *value) (int64, bool) {
		switch {
		case in.size == v.size:
			return 1, true
		case in.size == 1:
			return 0, true
		}
		return 0, false
	}
	sa, ok1 := stride(a)
	sb, ok2 := stride(b)
	if !ok1 || !ok2 {
		return nil
	}
	// y[i] from a[i·sa] and b[i·sb] alone: either same-size operand may be
	// overwritten.
	for _, in := range v.ins {
		if in.size == v.size {
			v.inPlace = append(v.inPlace, in)
		}
	}
	v.ew = &ewNode{binary: true, code: code}
	return devFunc(func(x *Exec, v *value) error {
		return x.launch(v, "ew_binary", int64(v.size), code, v.ins[0].ptr, sa, v.ins[1].ptr, sb, v.ptr)
	})
}

// lowerRepeat maps Gorgonia's repeatOp (numpy.repeat along one axis; the
// broadcasts of BroadcastAdd and friends), whose repeat count comes from
// the static output shape.
func lowerRepeat(v *value, along int) devOp {
	if len(v.ins) < 1 {
		return nil
	}
	in, out := v.ins[0], v.shape
	if along < 0 || along >= len(out) {
		return nil
	}
	outer, inner := 1, 1
	for i := 0; i < along; i++ {
		outer *= out[i]
	}
	for i := along + 1; i < len(out); i++ {
		inner *= out[i]
	}
	dout := out[along]
	if outer*inner == 0 || in.size%(outer*inner) != 0 {
		return nil
	}
	din := in.size / (outer * inner)
	if din == 0 || dout%din != 0 {
		return nil
	}
	reps := dout / din
	v.rep = &repeatMap{din: int64(din), reps: int64(reps), inner: int64(inner)}
	return devFunc(func(x *Exec, v *value) error {
		return x.launch(v, "repeat", int64(v.size), v.ins[0].ptr, v.ptr, int64(din), int64(reps), int64(inner))
	})
}

// collapse4 pads shape s to 4 dims with leading ones, merging leading axes
// when there are more than 4 (only if none of them is in axes; ok false
// otherwise). It returns the dims and the axes renumbered.
func collapse4(s tensor.Shape, axes []int) (d [4]int64, mask int32, ok bool) {
	dims := []int(s)
	if len(dims) == 0 {
		dims = []int{1}
	}
	red := make([]bool, len(dims))
	for _, a := range axes {
		if a < 0 || a >= len(dims) {
			return d, 0, false
		}
		red[a] = true
	}
	for len(dims) > 4 {
		if red[0] != red[1] {
			return d, 0, false
		}
		dims = append([]int{dims[0] * dims[1]}, dims[2:]...)
		red = red[1:]
	}
	off := 4 - len(dims)
	for i := 0; i < 4; i++ {
		d[i] = 1
	}
	for i, n := range dims {
		d[off+i] = int64(n)
		if red[i] {
			mask |= 1 << (off + i)
		}
	}
	return d, mask, true
}

// reduceChunks is the number of items a sum of reduced elements into outs
// outputs is split into per output: enough for about 2^16 items in all,
// each summing at least 8 elements, at most 1024 (the join sums them one
// by one); 1 means one item per output (reduce4).
func reduceChunks(outs, reduced int64) int64 {
	return max(1, min(reduced/8, (1<<16)/max(outs, 1), 1024))
}

// warpSumMax is the most elements a sum (a column of a parameter
// gradient, of a layer norm's parameters, of the centered lookup's mean)
// adds in a warp of its own, at most warpSumMax/32 per lane, in one launch
// (reduce4_warp, ln_param_warp, col_mean_warp); longer sums are split
// over chunks and joined in a second launch. A variable so that tests can
// take both paths on small models.
var warpSumMax int64 = 4096

// lowerSum maps Gorgonia's sumOp (sum along axes).
func lowerSum(x *Exec, v *value, along []int) (devOp, error) {
	if len(v.ins) != 1 {
		return nil, nil
	}
	in := v.ins[0]
	d, mask, ok := collapse4(in.shape, along)
	if !ok {
		return nil, nil
	}
	reduced := int64(in.size / v.size)
	if int64(v.size)*reduced != int64(in.size) {
		return nil, nil
	}
	chunks := reduceChunks(int64(v.size), reduced)
	if chunks > 1 && reduced <= warpSumMax {
		// Sums of moderate length: a warp per output, in one launch.
		return devFunc(func(x *Exec, v *value) error {
			return x.launch(v, "reduce4_warp", int64(v.size), v.ins[0].ptr, v.ptr, d[0], d[1], d[2], d[3], mask)
		}), nil
	}
	if chunks > 1 {
		// Few outputs over many inputs: each output's sum split over
		// chunks items, then joined, in a fixed order.
		part, err := x.alloc(int64(v.size) * chunks * 8)
		if err != nil {
			return nil, err
		}
		omajor := int32(0)
		if mask&8 != 0 {
			omajor = 1
		}
		return devFunc(func(x *Exec, v *value) error {
			if err := x.launch(v, "reduce4_part", int64(v.size)*chunks, v.ins[0].ptr, part, d[0], d[1], d[2], d[3], mask, chunks, omajor); err != nil {
				return err
			}
			return x.launch(v, "reduce_join", int64(v.size), chunks, part, v.ptr)
		}), nil
	}
	return devFunc(func(x *Exec, v *value) error {
		return x.launch(v, "reduce4", int64(v.size), v.ins[0].ptr, v.ptr, d[0], d[1], d[2], d[3], mask)
	}), nil
}

// lowerTranspose maps Gorgonia's transposeOp (an axis permutation of a
// tensor of rank <= 4).
func lowerTranspose(v *value, pattern []int) devOp {
	if len(v.ins) != 1 {
		return nil
	}
	in := v.ins[0].shape
	r := len(in)
	if r == 0 || r > 4 || len(pattern) != r || len(v.shape) != r {
		return nil
	}
	strides := make([]int64, r)
	st := int64(1)
	for i := r - 1; i >= 0; i-- {
		strides[i] = st
		st *= int64(in[i])
	}
	var e, s [4]int64
	off := 4 - r
	for i := 0; i < 4; i++ {
		e[i] = 1
	}
	for k := 0; k < r; k++ {
		p := pattern[k]
		if p < 0 || p >= r || v.shape[k] != in[p] {
			return nil
		}
		e[off+k] = int64(v.shape[k])
		s[off+k] = strides[p]
	}
	return devFunc(func(x *Exec, v *value) error {
		return x.launch(v, "permute4", int64(v.size), v.ins[0].ptr, v.ptr, e[1], e[2], e[3], s[0], s[1], s[2], s[3])
	})
}

// band is one band_copy launch: part·inner elements of each of outer rows.
type band struct {
	outer, part, inner int64
	xfull, xoff        int64
	yfull, yoff        int64
}

func (x *Exec) bandCopy(v *value, src, dst Ptr, b band) error {
	return x.launch(v, "band_copy", b.outer*b.part*b.inner, src, dst, b.part, b.inner, b.xfull, b.xoff, b.yfull, b.yoff)
}

// outerInner returns the products of s's dims before and after axis.
func outerInner(s tensor.Shape, axis int) (int64, int64) {
	outer, inner := int64(1), int64(1)
	for i := 0; i < axis; i++ {
		outer *= int64(s[i])
	}
	for i := axis + 1; i < len(s); i++ {
		inner *= int64(s[i])
	}
	return outer, inner
}

// concatAlong concatenates v's inputs along axis (their other dims equal
// v's): Gorgonia's concatOp.
func concatAlong(v *value, axis int) devOp {
	out := v.shape
	if axis < 0 || axis >= len(out) {
		return nil
	}
	outer, inner := outerInner(out, axis)
	var bands []band
	off := int64(0)
	for _, in := range v.ins {
		s := in.shape
		if len(s) != len(out) {
			return nil
		}
		for i := range s {
			if i != axis && s[i] != out[i] {
				return nil
			}
		}
		bands = append(bands, band{outer: outer, part: int64(s[axis]), inner: inner,
			xfull: int64(s[axis]), yfull: int64(out[axis]), yoff: off})
		off += int64(s[axis])
	}
	if off != int64(out[axis]) {
		return nil
	}
	return devFunc(func(x *Exec, v *value) error {
		for i, b := range bands {
			if err := x.bandCopy(v, v.ins[i].ptr, v.ptr, b); err != nil {
				return err
			}
		}
		return nil
	})
}

// lowerSlice maps ops.Slice (the band [lo, hi) of one axis of a tensor of
// shape full) and, with backward, its gradient (the band scattered into
// zeros).
func lowerSlice(v *value, full tensor.Shape, axis, lo, hi int, backward bool) devOp {
	if len(v.ins) != 1 {
		return nil
	}
	if axis < 0 || axis >= len(full) || lo < 0 || hi > full[axis] || lo >= hi {
		return nil
	}
	outer, inner := outerInner(full, axis)
	part := int64(hi - lo)
	if backward {
		if v.size != full.TotalSize() {
			return nil
		}
		b := band{outer: outer, part: part, inner: inner, xfull: part, yfull: int64(full[axis]), yoff: int64(lo)}
		return devFunc(func(x *Exec, v *value) error {
			if err := x.b.Zero(v.ptr, v.bytes); err != nil {
				return err
			}
			return x.bandCopy(v, v.ins[0].ptr, v.ptr, b)
		})
	}
	if v.ins[0].size != full.TotalSize() {
		return nil
	}
	b := band{outer: outer, part: part, inner: inner, xfull: int64(full[axis]), xoff: int64(lo), yfull: part}
	return devFunc(func(x *Exec, v *value) error {
		return x.bandCopy(v, v.ins[0].ptr, v.ptr, b)
	})
}

// lowerGorgoniaSlice maps Gorgonia's sliceOp when it selects a contiguous
// band of one axis with step 1 (the axis is kept or dropped): s is the
// op's IsSlice, along its axis.
func lowerGorgoniaSlice(v *value, s tensor.Slice, along int) devOp {
	if len(v.ins) != 1 {
		return nil
	}
	in := v.ins[0].shape
	if s == nil || along < 0 || along >= len(in) || s.Step() > 1 {
		return nil
	}
	lo, hi := s.Start(), s.End()
	if hi <= 0 || hi > in[along] {
		hi = in[along]
	}
	if lo < 0 || lo >= hi {
		return nil
	}
	outer, inner := outerInner(in, along)
	part := int64(hi - lo)
	if int64(v.size) != outer*part*inner {
		return nil
	}
	b := band{outer: outer, part: part, inner: inner, xfull: int64(in[along]), xoff: int64(lo), yfull: part}
	return devFunc(func(x *Exec, v *value) error {
		return x.bandCopy(v, v.ins[0].ptr, v.ptr, b)
	})
}

// softmaxLongRow is the row width from which the softmax kernels take a
// warp per row (softmax_rows_warp, softmax_grad_rows_warp) rather than a
// thread; a variable so that tests can take the warp path on small models.
var softmaxLongRow = 64

// softmaxKernel returns the softmax kernel name for rows of cols columns:
// base, or its warp form for long rows.
func softmaxKernel(base string, cols int) string {
	if cols >= softmaxLongRow {
		return base + "_warp"
	}
	return base
}

// lowerSoftmax maps ops.SoftMax / LogSoftMax (along the last axis, lg for
// the log variant) and, with grad, their gradient op.
func lowerSoftmax(v *value, lg, grad bool) devOp {
	s := v.shape
	if len(s) == 0 {
		return nil
	}
	cols := s[len(s)-1]
	if cols == 0 || v.size%cols != 0 {
		return nil
	}
	rows := int64(v.size / cols)
	flag := int32(0)
	if lg {
		flag = 1
	}
	if grad {
		if len(v.ins) != 2 || v.ins[0].size != v.size || v.ins[1].size != v.size {
			return nil
		}
		k := softmaxKernel("softmax_grad_rows", cols)
		return devFunc(func(x *Exec, v *value) error {
			return x.launch(v, k, rows, int32(cols), flag, v.ins[0].ptr, v.ins[1].ptr, v.ptr)
		})
	}
	if len(v.ins) != 1 || v.ins[0].size != v.size {
		return nil
	}
	k := softmaxKernel("softmax_rows", cols)
	return devFunc(func(x *Exec, v *value) error {
		return x.launch(v, k, rows, int32(cols), flag, v.ins[0].ptr, v.ptr)
	})
}
