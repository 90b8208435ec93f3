package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ConcatLast concatenates nodes of equal rank along their last axis; all
// other dimensions must agree. It is G.Concat on the last axis without
// Gorgonia's element-by-element strided copy: rows are copied whole, and the
// backward pass copies each input's band of the gradient back.
func ConcatLast(xs ...*G.Node) (*G.Node, error) {
	if len(xs) == 0 {
		return nil, fmt.Errorf("graph: ConcatLast of no nodes")
	}
	for _, x := range xs {
		if x == nil {
			return nil, fmt.Errorf("graph: ConcatLast of a nil node")
		}
	}
	first := xs[0].Shape()
	if len(first) == 0 {
		return nil, fmt.Errorf("graph: ConcatLast of scalar %q", xs[0].Name())
	}
	widths := make([]int, len(xs))
	for i, x := range xs {
		s := x.Shape()
		if len(s) != len(first) {
			return nil, fmt.Errorf("graph: ConcatLast: shapes %v and %v have different ranks", first, s)
		}
		for d := 0; d+1 < len(s); d++ {
			if s[d] != first[d] {
				return nil, fmt.Errorf("graph: ConcatLast: shapes %v and %v differ outside the last axis", first, s)
			}
		}
		if x.Dtype() != xs[0].Dtype() {
			return nil, fmt.Errorf("graph: ConcatLast: dtypes %v and %v differ", xs[0].Dtype(), x.Dtype())
		}
		widths[i] = s[len(s)-1]
	}
	if len(xs) == 1 {
		return xs[0], nil
	}
	return G.ApplyOp(&concatOp{lead: first[:len(first)-1].Clone(), widths: widths}, xs...)
}

// concatOp concatenates along the last axis; lead are the other dims.
type concatOp struct {
	lead   tensor.Shape
	widths []int
}

func (op *concatOp) rows() int {
	r := 1
	for _, d := range op.lead {
		r *= d
	}
	return r
}
func (op *concatOp) total() int {
	t := 0
	for _, w := range op.widths {
		t += w
	}
	return t
}
func (op *concatOp) Arity() int { return len(op.widths) }
func (op *concatOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	ts := make([]hm.Type, len(op.widths)+1)
	for i := range ts {
		ts[i] = a
	}
	return hm.NewFnType(ts...)
}
func (op *concatOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return append(op.lead.Clone(), op.total()), nil
}
func (op *concatOp) ReturnsPtr() bool     { return false }
func (op *concatOp) CallsExtern() bool    { return false }
func (op *concatOp) OverwritesInput() int { return -1 }
func (op *concatOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.concatlast %v %v", op.lead, op.widths)
}
func (op *concatOp) Hashcode() uint32 { return hashOf(op) }
func (op *concatOp) String() string   { return fmt.Sprintf("ConcatLast%v", op.widths) }

func (op *concatOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != len(op.widths) {
		return nil, fmt.Errorf("graph: concat: %d inputs, want %d", len(vals), len(op.widths))
	}
	shape := append(op.lead.Clone(), op.total())
	switch vals[0].Data().(type) {
	case []float64:
		out, err := concatRows[float64](vals, op.rows(), op.widths)
		if err != nil {
			return nil, err
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(out)), nil
	case []float32:
		out, err := concatRows[float32](vals, op.rows(), op.widths)
		if err != nil {
			return nil, err
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(out)), nil
	}
	return nil, fmt.Errorf("graph: concat: unsupported data %T", vals[0].Data())
}

func concatRows[F float32 | float64](vals []G.Value, rows int, widths []int) ([]F, error) {
	total := 0
	for _, w := range widths {
		total += w
	}
	out := make([]F, rows*total)
	off := 0
	for i, v := range vals {
		x, ok := v.Data().([]F)
		w := widths[i]
		if !ok || len(x) != rows*w {
			return nil, fmt.Errorf("graph: concat: input %d has data %T of the wrong type or size", i, v.Data())
		}
		for r := 0; r < rows; r++ {
			copy(out[r*total+off:r*total+off+w], x[r*w:(r+1)*w])
		}
		off += w
	}
	return out, nil
}

func (op *concatOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	for i := range d {
		d[i] = true
	}
	return d
}

// SymDiff slices each input's band out of the gradient.
func (op *concatOp) SymDiff(in G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	out := make(G.Nodes, len(in))
	axis, off := len(op.lead), 0
	for i, w := range op.widths {
		g, err := Slice(grad, axis, off, off+w)
		if err != nil {
			return nil, err
		}
		out[i] = g
		off += w
	}
	return out, nil
}
