package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GatherCols returns the columns of w at ids as rows: for a (D, V) matrix w
// and an int node ids (R), the (R, D) matrix whose row r is column ids[r]
// of w, and zero for ids[r] = −1 (a position without a label), as one
// [GatherColsOp] node. It is the product of the one-hot matrix of ids (R,
// V) by wᵀ — the label embeddings w_{e,y_i} of the encoder (layers.Encoder)
// from W_e (d', C) — without the one-hot matrix, with the same values bit
// for bit (a product by a one-hot matrix, [MatMul], takes the same
// shortcut). Its gradient ([ScatterColsOp]) adds the output gradient's rows
// into the (D, V) columns, in row order from +0, as the product's gradient
// does. An id outside [−1, V) fails the run with an error naming it.
func GatherCols(w, ids *G.Node) (*G.Node, error) {
	if w == nil || ids == nil {
		return nil, fmt.Errorf("ops: gather columns: nil input")
	}
	if w.Shape().Dims() != 2 {
		return nil, fmt.Errorf("ops: gather columns: matrix %q has shape %v, want (D, V)", w.Name(), w.Shape())
	}
	if err := checkFloat(w.Dtype()); err != nil {
		return nil, fmt.Errorf("ops: gather columns: matrix %q: %w", w.Name(), err)
	}
	if ids.Dtype() != tensor.Int || ids.Shape().Dims() != 1 {
		return nil, fmt.Errorf("ops: gather columns: ids %q must be an int vector", ids.Name())
	}
	return G.ApplyOp(&GatherColsOp{d: w.Shape()[0], v: w.Shape()[1], r: ids.Shape()[0]}, w, ids)
}

// GatherColsOp is (w (D, V), ids (R)) -> (R, D): row r is column ids[r] of
// w, zero for ids[r] = −1 ([GatherCols]).
type GatherColsOp struct {
	d, v, r int
}

// Dims are w's shape (D, V) and the number of ids R.
func (op *GatherColsOp) Dims() (d, v, r int) { return op.d, op.v, op.r }

func (op *GatherColsOp) Arity() int { return 2 }
func (op *GatherColsOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(&G.TensorType{Dims: 2, Of: a}, &G.TensorType{Dims: 1, Of: tensor.Int}, &G.TensorType{Dims: 2, Of: a})
}
func (op *GatherColsOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.r, op.d}, nil
}
func (op *GatherColsOp) ReturnsPtr() bool     { return false }
func (op *GatherColsOp) CallsExtern() bool    { return false }
func (op *GatherColsOp) OverwritesInput() int { return -1 }
func (op *GatherColsOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.gathercols (%d,%d) ids %d", op.d, op.v, op.r)
}
func (op *GatherColsOp) Hashcode() uint32 { return hashOf(op) }
func (op *GatherColsOp) String() string   { return fmt.Sprintf("GatherCols(%d,%d)", op.d, op.v) }
func (op *GatherColsOp) DiffWRT(int) []bool {
	return []bool{true, false}
}
func (op *GatherColsOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	g, err := G.ApplyOp(&ScatterColsOp{d: op.d, v: op.v, r: op.r}, inputs[1], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{g, nil}, nil
}

func (op *GatherColsOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *GatherColsOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) { return op.do(p, vals) }

func (op *GatherColsOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("ops: gather columns: %d inputs, want 2", len(vals))
	}
	hot, err := labelIDs(vals[1], op.r, op.v)
	if err != nil {
		return nil, fmt.Errorf("ops: gather columns: %w", err)
	}
	switch w := denseData(vals[0]).(type) {
	case []float64:
		return gatherColsDo(p, hot, w, op.d, op.v)
	case []float32:
		return gatherColsDo(p, hot, w, op.d, op.v)
	}
	return nil, fmt.Errorf("ops: gather columns: unsupported matrix data %T", vals[0].Data())
}

// gatherColsDo is GatherColsOp's output for the matrix w (D, V): into p
// when it fits (outBuf).
func gatherColsDo[F float32 | float64](p G.Value, hot []int, w []F, d, v int) (G.Value, error) {
	if len(w) != d*v {
		return nil, fmt.Errorf("ops: gather columns: matrix of %d values, want %d·%d", len(w), d, v)
	}
	c := outBuf[F](p, len(hot)*d, false)
	oneHotRows(hot, w, v, d, true, c)
	return wrapOut(p, tensor.Shape{len(hot), d}, c), nil
}

// ScatterColsOp is (ids (R), grad (R, D)) -> (D, V): the gradient of a
// [GatherColsOp] w.r.t. the matrix, column c the sum of the rows r of grad
// with ids[r] = c, in row order from +0 (rows with id −1 add nothing).
type ScatterColsOp struct {
	d, v, r int
}

// Dims are the output's shape (D, V) and the number of ids R.
func (op *ScatterColsOp) Dims() (d, v, r int) { return op.d, op.v, op.r }

func (op *ScatterColsOp) Arity() int { return 2 }
func (op *ScatterColsOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(&G.TensorType{Dims: 1, Of: tensor.Int}, &G.TensorType{Dims: 2, Of: a}, &G.TensorType{Dims: 2, Of: a})
}
func (op *ScatterColsOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.d, op.v}, nil
}
func (op *ScatterColsOp) ReturnsPtr() bool     { return false }
func (op *ScatterColsOp) CallsExtern() bool    { return false }
func (op *ScatterColsOp) OverwritesInput() int { return -1 }
func (op *ScatterColsOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.scattercols (%d,%d) ids %d", op.d, op.v, op.r)
}
func (op *ScatterColsOp) Hashcode() uint32   { return hashOf(op) }
func (op *ScatterColsOp) String() string     { return fmt.Sprintf("ScatterCols(%d,%d)", op.d, op.v) }
func (op *ScatterColsOp) DiffWRT(int) []bool { return []bool{false, false} }
func (op *ScatterColsOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("ops: a column gather's gradient has no gradient of its own (second derivatives are unsupported)")
}

func (op *ScatterColsOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *ScatterColsOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) { return op.do(p, vals) }

func (op *ScatterColsOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("ops: scatter columns: %d inputs, want 2", len(vals))
	}
	hot, err := labelIDs(vals[0], op.r, op.v)
	if err != nil {
		return nil, fmt.Errorf("ops: scatter columns: %w", err)
	}
	switch g := denseData(vals[1]).(type) {
	case []float64:
		return scatterColsDo(p, hot, g, op.d, op.v)
	case []float32:
		return scatterColsDo(p, hot, g, op.d, op.v)
	}
	return nil, fmt.Errorf("ops: scatter columns: unsupported gradient data %T", vals[1].Data())
}

// scatterColsDo is ScatterColsOp's output (D, V) for the gradient g (R,
// D): into p when it fits (outBuf).
func scatterColsDo[F float32 | float64](p G.Value, hot []int, g []F, d, v int) (G.Value, error) {
	if len(g) != len(hot)*d {
		return nil, fmt.Errorf("ops: scatter columns: gradient of %d values, want %d·%d", len(g), len(hot), d)
	}
	c := outBuf[F](p, d*v, false)
	oneHotCols(hot, g, d, v, c)
	return wrapOut(p, tensor.Shape{d, v}, c), nil
}

// labelIDs returns the r ids of an int tensor value, checking each is in
// [−1, v).
func labelIDs(val G.Value, r, v int) ([]int, error) {
	ids, ok := denseData(val).([]int)
	if !ok {
		return nil, fmt.Errorf("ids have data %T, want []int", val.Data())
	}
	if len(ids) != r {
		return nil, fmt.Errorf("%d ids, want %d", len(ids), r)
	}
	for i, id := range ids {
		if id < -1 || id >= v {
			return nil, badID(i, id, v)
		}
	}
	return ids, nil
}
