package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ConcatLast concatenates nodes along their last axis. The nodes must have
// the same number of rows (the product of all but the last dimension); the
// result has the first node's leading dimensions, so a (B, T, d) tensor and
// (B·T, d') matrices concatenate to (B, T, d+d') without a reshape. It is
// G.Concat on the last axis without Gorgonia's element-by-element strided
// copy: rows are copied whole, and the backward pass copies each input's
// band of the gradient back.
func ConcatLast(xs ...*G.Node) (*G.Node, error) {
	if len(xs) == 0 {
		return nil, fmt.Errorf("ops: ConcatLast of no nodes")
	}
	for _, x := range xs {
		if x == nil {
			return nil, fmt.Errorf("ops: ConcatLast of a nil node")
		}
		if len(x.Shape()) == 0 {
			return nil, fmt.Errorf("ops: ConcatLast of scalar %q", x.Name())
		}
	}
	first := xs[0].Shape()
	op := &ConcatLastOp{lead: first[:len(first)-1].Clone()}
	for _, x := range xs {
		s := x.Shape()
		if rows(s) != rows(first) {
			return nil, fmt.Errorf("ops: ConcatLast: shapes %v and %v have different numbers of rows", first, s)
		}
		if x.Dtype() != xs[0].Dtype() {
			return nil, fmt.Errorf("ops: ConcatLast: dtypes %v and %v differ", xs[0].Dtype(), x.Dtype())
		}
		op.widths = append(op.widths, s[len(s)-1])
		op.shapes = append(op.shapes, s.Clone())
		op.data = append(op.data, IsData(x))
	}
	if len(xs) == 1 {
		return xs[0], nil
	}
	return G.ApplyOp(op, xs...)
}

// ConcatLastOp is [ConcatLast]'s op: it concatenates along the last axis;
// lead are the other dims.
type ConcatLastOp struct {
	lead   tensor.Shape
	widths []int
	shapes []tensor.Shape // the inputs' shapes
	data   []bool         // IsData of the inputs: no gradient for them
}

// Widths are the inputs' last dimensions (a copy), in input order.
func (op *ConcatLastOp) Widths() []int { return append([]int(nil), op.widths...) }

func (op *ConcatLastOp) rows() int {
	r := 1
	for _, d := range op.lead {
		r *= d
	}
	return r
}
func (op *ConcatLastOp) total() int {
	t := 0
	for _, w := range op.widths {
		t += w
	}
	return t
}
func (op *ConcatLastOp) Arity() int { return len(op.widths) }
func (op *ConcatLastOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	ts := make([]hm.Type, 0, len(op.shapes)+1)
	for _, s := range op.shapes {
		ts = append(ts, &G.TensorType{Dims: len(s), Of: a})
	}
	return hm.NewFnType(append(ts, &G.TensorType{Dims: len(op.lead) + 1, Of: a})...)
}
func (op *ConcatLastOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return append(op.lead.Clone(), op.total()), nil
}
func (op *ConcatLastOp) ReturnsPtr() bool     { return false }
func (op *ConcatLastOp) CallsExtern() bool    { return false }
func (op *ConcatLastOp) OverwritesInput() int { return -1 }
func (op *ConcatLastOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.concatlast %v %v", op.lead, op.shapes)
	for _, d := range op.data {
		if d {
			fmt.Fprintf(h, " data %v", op.data)
			break
		}
	}
}
func (op *ConcatLastOp) Hashcode() uint32 { return hashOf(op) }
func (op *ConcatLastOp) String() string   { return fmt.Sprintf("ConcatLast%v", op.widths) }

func (op *ConcatLastOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *ConcatLastOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) {
	return op.do(p, vals)
}

func (op *ConcatLastOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != len(op.widths) {
		return nil, fmt.Errorf("ops: concat: %d inputs, want %d", len(vals), len(op.widths))
	}
	shape := append(op.lead.Clone(), op.total())
	switch vals[0].Data().(type) {
	case []float64:
		out, err := concatRows[float64](p, vals, op.rows(), op.widths)
		if err != nil {
			return nil, err
		}
		return wrapOut(p, shape, out), nil
	case []float32:
		out, err := concatRows[float32](p, vals, op.rows(), op.widths)
		if err != nil {
			return nil, err
		}
		return wrapOut(p, shape, out), nil
	}
	return nil, fmt.Errorf("ops: concat: unsupported data %T", vals[0].Data())
}

func concatRows[F float32 | float64](p G.Value, vals []G.Value, rows int, widths []int) ([]F, error) {
	total := 0
	for _, w := range widths {
		total += w
	}
	out := outBuf[F](p, rows*total, false)
	off := 0
	for i, v := range vals {
		x, ok := v.Data().([]F)
		w := widths[i]
		if !ok || len(x) != rows*w {
			return nil, fmt.Errorf("ops: concat: input %d has data %T of the wrong type or size", i, v.Data())
		}
		for r := 0; r < rows; r++ {
			copy(out[r*total+off:r*total+off+w], x[r*w:(r+1)*w])
		}
		off += w
	}
	return out, nil
}

func (op *ConcatLastOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	for i := range d {
		d[i] = i >= len(op.data) || !op.data[i]
	}
	return d
}

// SymDiff slices each input's band out of the gradient (none for a data
// input).
func (op *ConcatLastOp) SymDiff(in G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	out := make(G.Nodes, len(in))
	axis, off := len(op.lead), 0
	for i, w := range op.widths {
		if op.data[i] {
			off += w
			continue
		}
		g, err := Slice(grad, axis, off, off+w)
		if err != nil {
			return nil, err
		}
		if !g.Shape().Eq(op.shapes[i]) {
			if g, err = Reshape(g, op.shapes[i]); err != nil {
				return nil, err
			}
		}
		out[i] = g
		off += w
	}
	return out, nil
}
