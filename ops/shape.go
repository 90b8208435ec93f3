package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Reshape returns x reshaped to shape, as a fresh copy.
//
// gdattn uses it instead of G.Reshape: Gorgonia v0.9.18's reshape returns a
// view sharing x's memory while its register allocator believes the two are
// independent, so an in-place op that later overwrites x's register (an
// elementwise Add on a dead input, say) silently corrupts the reshaped value
// still needed by the backward pass. Measured: the gradient of α in a
// two-head GD block was off by 10-60% until reshapes stopped aliasing.
func Reshape(x *G.Node, shape tensor.Shape) (*G.Node, error) {
	if x == nil {
		return nil, fmt.Errorf("ops: Reshape of a nil node")
	}
	if shape.TotalSize() != x.Shape().TotalSize() || len(shape) == 0 {
		return nil, fmt.Errorf("ops: cannot reshape %q from %v to %v", x.Name(), x.Shape(), shape)
	}
	if x.Shape().Eq(shape) && x.Shape().Dims() == shape.Dims() {
		return x, nil
	}
	return G.ApplyOp(&ReshapeOp{from: x.Shape().Clone(), to: shape.Clone()}, x)
}

// ReshapeOp is [Reshape]'s op (and its gradient, the reshape back): a copy
// of its input with another shape.
type ReshapeOp struct{ from, to tensor.Shape }

// From is the input's shape (a copy).
func (op *ReshapeOp) From() tensor.Shape { return op.from.Clone() }

// To is the output's shape (a copy).
func (op *ReshapeOp) To() tensor.Shape { return op.to.Clone() }

func (op *ReshapeOp) Arity() int { return 1 }
func (op *ReshapeOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	if op.from.Dims() == op.to.Dims() {
		t := &G.TensorType{Dims: op.from.Dims(), Of: a}
		return hm.NewFnType(t, t)
	}
	return hm.NewFnType(&G.TensorType{Dims: op.from.Dims(), Of: a}, &G.TensorType{Dims: op.to.Dims(), Of: a})
}
func (op *ReshapeOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.to.Clone(), nil }
func (op *ReshapeOp) ReturnsPtr() bool                               { return false }
func (op *ReshapeOp) CallsExtern() bool                              { return false }
func (op *ReshapeOp) OverwritesInput() int                           { return -1 }
func (op *ReshapeOp) WriteHash(h hash.Hash)                          { fmt.Fprintf(h, "gdattn.reshape %v->%v", op.from, op.to) }
func (op *ReshapeOp) Hashcode() uint32                               { return hashOf(op) }
func (op *ReshapeOp) String() string                                 { return fmt.Sprintf("ReshapeCopy%v", op.to) }
func (op *ReshapeOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 1 {
		return nil, fmt.Errorf("ops: reshape: %d inputs, want 1", len(vals))
	}
	return copyDense(vals[0], op.to)
}
func (op *ReshapeOp) DiffWRT(int) []bool { return []bool{true} }
func (op *ReshapeOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	g, err := G.ApplyOp(&ReshapeOp{from: op.to, to: op.from}, grad)
	return G.Nodes{g}, err
}

// copyDense returns a contiguous copy of v's data with the given shape.
func copyDense(v G.Value, shape tensor.Shape) (G.Value, error) {
	t, ok := v.(tensor.Tensor)
	if !ok {
		return nil, fmt.Errorf("ops: expected a tensor, got %T", v)
	}
	if d, ok := t.(*tensor.Dense); ok && d.IsView() {
		t = d.Materialize()
	}
	switch x := t.Data().(type) {
	case []float64:
		return tensor.New(tensor.WithShape(shape.Clone()...), tensor.WithBacking(append([]float64(nil), x...))), nil
	case []float32:
		return tensor.New(tensor.WithShape(shape.Clone()...), tensor.WithBacking(append([]float32(nil), x...))), nil
	}
	return nil, fmt.Errorf("ops: unsupported data %T", t.Data())
}

// Slice returns x[..., lo:hi, ...] along axis as a fresh copy (same rank as
// x). Like Reshape it never aliases its input; see Reshape for why.
func Slice(x *G.Node, axis, lo, hi int) (*G.Node, error) {
	if x == nil {
		return nil, fmt.Errorf("ops: Slice of a nil node")
	}
	sh := x.Shape()
	if axis < 0 || axis >= len(sh) {
		return nil, fmt.Errorf("ops: Slice of %q (shape %v): axis %d out of range", x.Name(), sh, axis)
	}
	if lo < 0 || hi > sh[axis] || lo >= hi {
		return nil, fmt.Errorf("ops: Slice of %q (shape %v): range [%d, %d) invalid on axis %d", x.Name(), sh, lo, hi, axis)
	}
	return G.ApplyOp(&SliceOp{shape: sh.Clone(), axis: axis, lo: lo, hi: hi}, x)
}

// SliceOp is [Slice]'s op, or with Backward its gradient: the band
// [Lo, Hi) of axis Axis of a tensor of shape Shape, copied out (forward)
// or scattered into zeros of shape Shape (backward).
type SliceOp struct {
	shape        tensor.Shape
	axis, lo, hi int
	backward     bool // scatter a slice gradient into zeros of shape
}

// Shape is the shape of the sliced tensor (the forward input, the backward
// output), a copy.
func (op *SliceOp) Shape() tensor.Shape { return op.shape.Clone() }

// Axis is the sliced axis.
func (op *SliceOp) Axis() int { return op.axis }

// Band is the slice [lo, hi) of the axis.
func (op *SliceOp) Band() (lo, hi int) { return op.lo, op.hi }

// Backward reports whether the op is the gradient of a slice (the band
// scattered into zeros).
func (op *SliceOp) Backward() bool { return op.backward }

func (op *SliceOp) outShape() tensor.Shape {
	if op.backward {
		return op.shape.Clone()
	}
	s := op.shape.Clone()
	s[op.axis] = op.hi - op.lo
	return s
}
func (op *SliceOp) Arity() int { return 1 }
func (op *SliceOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (op *SliceOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.outShape(), nil }
func (op *SliceOp) ReturnsPtr() bool                               { return false }
func (op *SliceOp) CallsExtern() bool                              { return false }
func (op *SliceOp) OverwritesInput() int                           { return -1 }
func (op *SliceOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.slice %v axis %d [%d,%d) back %v", op.shape, op.axis, op.lo, op.hi, op.backward)
}
func (op *SliceOp) Hashcode() uint32 { return hashOf(op) }
func (op *SliceOp) String() string {
	if op.backward {
		return fmt.Sprintf("SliceGrad{%d,%d:%d}", op.axis, op.lo, op.hi)
	}
	return fmt.Sprintf("SliceCopy{%d,%d:%d}", op.axis, op.lo, op.hi)
}
func (op *SliceOp) DiffWRT(int) []bool { return []bool{!op.backward} }
func (op *SliceOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	back := *op
	back.backward = true
	g, err := G.ApplyOp(&back, grad)
	return G.Nodes{g}, err
}

func (op *SliceOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *SliceOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) { return op.do(p, vals) }

func (op *SliceOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 1 {
		return nil, fmt.Errorf("ops: slice: %d inputs, want 1", len(vals))
	}
	t, ok := vals[0].(tensor.Tensor)
	if !ok {
		return nil, fmt.Errorf("ops: slice: expected a tensor, got %T", vals[0])
	}
	if d, ok := t.(*tensor.Dense); ok && d.IsView() {
		t = d.Materialize()
	}
	// outer × axis × inner layout.
	outer, inner := 1, 1
	for i := 0; i < op.axis; i++ {
		outer *= op.shape[i]
	}
	for i := op.axis + 1; i < len(op.shape); i++ {
		inner *= op.shape[i]
	}
	full, part := op.shape[op.axis], op.hi-op.lo
	out := op.outShape()
	switch x := t.Data().(type) {
	case []float64:
		y := outBuf[float64](p, out.TotalSize(), false) // sliceCopy writes every element
		sliceCopy(x, y, outer, inner, full, part, op.lo, op.backward)
		return wrapOut(p, out, y), nil
	case []float32:
		y := outBuf[float32](p, out.TotalSize(), false)
		sliceCopy(x, y, outer, inner, full, part, op.lo, op.backward)
		return wrapOut(p, out, y), nil
	}
	return nil, fmt.Errorf("ops: slice: unsupported data %T", t.Data())
}

// sliceCopy copies the [lo, lo+part) band of the axis (forward) or scatters
// x into that band of y and zeroes the rest of y (backward). The band of
// one outer index is contiguous (part·inner elements), so it is one copy
// (a slice of the covariates along the positions: one per sequence, not
// one per position).
func sliceCopy[F float32 | float64](x, y []F, outer, inner, full, part, lo int, backward bool) {
	band, head := part*inner, lo*inner
	for o := 0; o < outer; o++ {
		if backward {
			row := y[o*full*inner : (o+1)*full*inner]
			clear(row[:head])
			copy(row[head:head+band], x[o*band:(o+1)*band])
			clear(row[head+band:])
		} else {
			src := (o*full + lo) * inner
			copy(y[o*band:(o+1)*band], x[src:src+band])
		}
	}
}
