package graph

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
		return nil, fmt.Errorf("graph: Reshape of a nil node")
	}
	if shape.TotalSize() != x.Shape().TotalSize() || len(shape) == 0 {
		return nil, fmt.Errorf("graph: cannot reshape %q from %v to %v", x.Name(), x.Shape(), shape)
	}
	if x.Shape().Eq(shape) && x.Shape().Dims() == shape.Dims() {
		return x, nil
	}
	return G.ApplyOp(&reshapeOp{from: x.Shape().Clone(), to: shape.Clone()}, x)
}

type reshapeOp struct{ from, to tensor.Shape }

func (op *reshapeOp) Arity() int { return 1 }
func (op *reshapeOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	if op.from.Dims() == op.to.Dims() {
		t := &G.TensorType{Dims: op.from.Dims(), Of: a}
		return hm.NewFnType(t, t)
	}
	return hm.NewFnType(&G.TensorType{Dims: op.from.Dims(), Of: a}, &G.TensorType{Dims: op.to.Dims(), Of: a})
}
func (op *reshapeOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.to.Clone(), nil }
func (op *reshapeOp) ReturnsPtr() bool                               { return false }
func (op *reshapeOp) CallsExtern() bool                              { return false }
func (op *reshapeOp) OverwritesInput() int                           { return -1 }
func (op *reshapeOp) WriteHash(h hash.Hash)                          { fmt.Fprintf(h, "gdattn.reshape %v->%v", op.from, op.to) }
func (op *reshapeOp) Hashcode() uint32                               { return hashOf(op) }
func (op *reshapeOp) String() string                                 { return fmt.Sprintf("ReshapeCopy%v", op.to) }
func (op *reshapeOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 1 {
		return nil, fmt.Errorf("graph: reshape: %d inputs, want 1", len(vals))
	}
	return copyDense(vals[0], op.to)
}
func (op *reshapeOp) DiffWRT(int) []bool { return []bool{true} }
func (op *reshapeOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	g, err := G.ApplyOp(&reshapeOp{from: op.to, to: op.from}, grad)
	return G.Nodes{g}, err
}

// copyDense returns a contiguous copy of v's data with the given shape.
func copyDense(v G.Value, shape tensor.Shape) (G.Value, error) {
	t, ok := v.(tensor.Tensor)
	if !ok {
		return nil, fmt.Errorf("graph: expected a tensor, got %T", v)
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
	return nil, fmt.Errorf("graph: unsupported data %T", t.Data())
}

// Slice returns x[..., lo:hi, ...] along axis as a fresh copy (same rank as
// x). Like Reshape it never aliases its input; see Reshape for why.
func Slice(x *G.Node, axis, lo, hi int) (*G.Node, error) {
	if x == nil {
		return nil, fmt.Errorf("graph: Slice of a nil node")
	}
	sh := x.Shape()
	if axis < 0 || axis >= len(sh) {
		return nil, fmt.Errorf("graph: Slice of %q (shape %v): axis %d out of range", x.Name(), sh, axis)
	}
	if lo < 0 || hi > sh[axis] || lo >= hi {
		return nil, fmt.Errorf("graph: Slice of %q (shape %v): range [%d, %d) invalid on axis %d", x.Name(), sh, lo, hi, axis)
	}
	return G.ApplyOp(&sliceOp{shape: sh.Clone(), axis: axis, lo: lo, hi: hi}, x)
}

type sliceOp struct {
	shape        tensor.Shape
	axis, lo, hi int
	backward     bool // scatter a slice gradient into zeros of shape
}

func (op *sliceOp) outShape() tensor.Shape {
	if op.backward {
		return op.shape.Clone()
	}
	s := op.shape.Clone()
	s[op.axis] = op.hi - op.lo
	return s
}
func (op *sliceOp) Arity() int { return 1 }
func (op *sliceOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (op *sliceOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.outShape(), nil }
func (op *sliceOp) ReturnsPtr() bool                               { return false }
func (op *sliceOp) CallsExtern() bool                              { return false }
func (op *sliceOp) OverwritesInput() int                           { return -1 }
func (op *sliceOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.slice %v axis %d [%d,%d) back %v", op.shape, op.axis, op.lo, op.hi, op.backward)
}
func (op *sliceOp) Hashcode() uint32 { return hashOf(op) }
func (op *sliceOp) String() string {
	if op.backward {
		return fmt.Sprintf("SliceGrad{%d,%d:%d}", op.axis, op.lo, op.hi)
	}
	return fmt.Sprintf("SliceCopy{%d,%d:%d}", op.axis, op.lo, op.hi)
}
func (op *sliceOp) DiffWRT(int) []bool { return []bool{!op.backward} }
func (op *sliceOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	back := *op
	back.backward = true
	g, err := G.ApplyOp(&back, grad)
	return G.Nodes{g}, err
}

func (op *sliceOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 1 {
		return nil, fmt.Errorf("graph: slice: %d inputs, want 1", len(vals))
	}
	t, ok := vals[0].(tensor.Tensor)
	if !ok {
		return nil, fmt.Errorf("graph: slice: expected a tensor, got %T", vals[0])
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
		y := make([]float64, out.TotalSize())
		sliceCopy(x, y, outer, inner, full, part, op.lo, op.backward)
		return tensor.New(tensor.WithShape(out...), tensor.WithBacking(y)), nil
	case []float32:
		y := make([]float32, out.TotalSize())
		sliceCopy(x, y, outer, inner, full, part, op.lo, op.backward)
		return tensor.New(tensor.WithShape(out...), tensor.WithBacking(y)), nil
	}
	return nil, fmt.Errorf("graph: slice: unsupported data %T", t.Data())
}

// sliceCopy copies the [lo, lo+part) band of the axis (forward) or scatters
// x into that band of a zero y (backward).
func sliceCopy[F float32 | float64](x, y []F, outer, inner, full, part, lo int, backward bool) {
	for o := 0; o < outer; o++ {
		for a := 0; a < part; a++ {
			src := (o*full + lo + a) * inner
			dst := (o*part + a) * inner
			if backward {
				copy(y[src:src+inner], x[dst:dst+inner])
			} else {
				copy(y[dst:dst+inner], x[src:src+inner])
			}
		}
	}
}
