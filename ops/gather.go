package ops

import (
	"cmp"
	"fmt"
	"hash"
	"slices"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Gather returns w[ids]: for a (V, D) matrix w and an int node ids of any
// shape S, the (S..., D) tensor of the rows of w, as one [GatherOp] node.
// Its gradient ([ScatterOp]) scatters the output gradient into a (V, D)
// buffer the op owns and reuses from run to run (repeated ids add up), so a
// training step makes no V-sized allocation for the lookup. An id outside
// [0, V) fails the run with an error naming it.
func Gather(w, ids *G.Node) (*G.Node, error) { return gather(w, ids, false) }

// GatherCentered returns w[ids] − w̄ with w̄ = (1/V) Σ_c w_c the mean row of
// w (the values w_{e,t} − E(w_e|f=0) of the GD language model), as one
// [GatherOp] node; its gradient adds −(1/V) Σ_i g_i to every row in the pass
// that clears the scatter buffer.
func GatherCentered(w, ids *G.Node) (*G.Node, error) { return gather(w, ids, true) }

func gather(w, ids *G.Node, center bool) (*G.Node, error) {
	if w == nil || ids == nil {
		return nil, fmt.Errorf("ops: gather: nil input")
	}
	if w.Shape().Dims() != 2 {
		return nil, fmt.Errorf("ops: gather: table %q has shape %v, want (V, D)", w.Name(), w.Shape())
	}
	if err := checkFloat(w.Dtype()); err != nil {
		return nil, fmt.Errorf("ops: gather: table %q: %w", w.Name(), err)
	}
	if ids.Dtype() != tensor.Int || ids.Shape().Dims() == 0 {
		return nil, fmt.Errorf("ops: gather: ids %q must be an int tensor of rank >= 1", ids.Name())
	}
	return G.ApplyOp(&GatherOp{v: w.Shape()[0], d: w.Shape()[1], ids: ids.Shape().Clone(), center: center}, w, ids)
}

// GatherOp is (w (V, D), ids S) -> (S..., D): the rows w[ids], minus the
// mean row of w when Centered ([Gather], [GatherCentered]).
type GatherOp struct {
	v, d   int
	ids    tensor.Shape
	center bool
}

// Vocab and Dim are the table's shape (V, D).
func (op *GatherOp) Vocab() int { return op.v }

// Dim: see Vocab.
func (op *GatherOp) Dim() int { return op.d }

// Centered reports whether the mean row of the table is subtracted.
func (op *GatherOp) Centered() bool { return op.center }

func (op *GatherOp) Arity() int { return 2 }
func (op *GatherOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(&G.TensorType{Dims: 2, Of: a}, &G.TensorType{Dims: op.ids.Dims(), Of: tensor.Int}, &G.TensorType{Dims: op.ids.Dims() + 1, Of: a})
}
func (op *GatherOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return append(op.ids.Clone(), op.d), nil
}
func (op *GatherOp) ReturnsPtr() bool     { return false }
func (op *GatherOp) CallsExtern() bool    { return false }
func (op *GatherOp) OverwritesInput() int { return -1 }
func (op *GatherOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.gather (%d,%d) ids %v center %v", op.v, op.d, op.ids, op.center)
}
func (op *GatherOp) Hashcode() uint32 { return hashOf(op) }
func (op *GatherOp) String() string   { return fmt.Sprintf("Gather(%d,%d)", op.v, op.d) }
func (op *GatherOp) DiffWRT(int) []bool {
	return []bool{true, false}
}
func (op *GatherOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	g, err := G.ApplyOp(&ScatterOp{v: op.v, d: op.d, ids: op.ids.Clone(), center: op.center}, inputs[1], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{g, nil}, nil
}

func (op *GatherOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("ops: gather: %d inputs, want 2", len(vals))
	}
	ids, err := intData(vals[1], op.v)
	if err != nil {
		return nil, fmt.Errorf("ops: gather: %w", err)
	}
	shape := append(op.ids.Clone(), op.d)
	switch w := denseData(vals[0]).(type) {
	case []float64:
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(gatherRows(w, ids, op.d, op.center))), nil
	case []float32:
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(gatherRows(w, ids, op.d, op.center))), nil
	}
	return nil, fmt.Errorf("ops: gather: unsupported table data %T", vals[0].Data())
}

func gatherRows[F float32 | float64](w []F, ids []int, d int, center bool) []F {
	out := make([]F, len(ids)*d)
	for i, id := range ids {
		copy(out[i*d:(i+1)*d], w[id*d:(id+1)*d])
	}
	if center {
		mean := colMean(w, d)
		for i := range ids {
			row := out[i*d : (i+1)*d]
			for j, m := range mean {
				row[j] -= F(m)
			}
		}
	}
	return out
}

// colMean returns the mean row of the row-major (·, d) matrix w, summed in
// float64.
func colMean[F float32 | float64](w []F, d int) []float64 {
	sum := make([]float64, d)
	rows := len(w) / d
	if rows == 0 {
		return sum
	}
	j0 := 0 // the columns summed below
	if w32, ok := any(w).([]float32); ok && haveExpAVX2 && d >= 4 {
		// Four columns a vector in AVX2, each summed in row order as
		// below (the same additions, the same bits).
		j0 = d &^ 3
		_ = w32[(rows-1)*d+j0-1]
		colSums32(&sum[0], &w32[0], rows, j0, d)
	}
	for r := 0; r < rows; r++ {
		for j, x := range w[r*d+j0 : (r+1)*d] {
			sum[j0+j] += float64(x)
		}
	}
	for j := range sum {
		sum[j] /= float64(rows)
	}
	return sum
}

// ScatterOp is (ids S, grad (S..., D)) -> (V, D): the gradient of a
// [GatherOp] w.r.t. the table, accumulated into a buffer the op reuses;
// when Centered, −(1/V) Σ_i grad_i is added to every row (the gradient
// through the mean).
type ScatterOp struct {
	v, d   int
	ids    tensor.Shape
	center bool
	buf    *tensor.Dense
	perm   []int // AddTo's positions grouped by id, reused
	row    any   // AddTo's starting row and row sum ([]float32 or []float64), reused
}

// Vocab and Dim are the table's shape (V, D), the op's output shape.
func (op *ScatterOp) Vocab() int { return op.v }

// Dim: see Vocab.
func (op *ScatterOp) Dim() int { return op.d }

// Centered reports whether every row starts at −(1/V) Σ_i grad_i instead
// of zero.
func (op *ScatterOp) Centered() bool { return op.center }

func (op *ScatterOp) Arity() int { return 2 }
func (op *ScatterOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(&G.TensorType{Dims: op.ids.Dims(), Of: tensor.Int}, &G.TensorType{Dims: op.ids.Dims() + 1, Of: a}, &G.TensorType{Dims: 2, Of: a})
}
func (op *ScatterOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.v, op.d}, nil
}
func (op *ScatterOp) ReturnsPtr() bool     { return false }
func (op *ScatterOp) CallsExtern() bool    { return false }
func (op *ScatterOp) OverwritesInput() int { return -1 }
func (op *ScatterOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.scatter (%d,%d) ids %v center %v", op.v, op.d, op.ids, op.center)
}
func (op *ScatterOp) Hashcode() uint32   { return hashOf(op) }
func (op *ScatterOp) String() string     { return fmt.Sprintf("ScatterAdd(%d,%d)", op.v, op.d) }
func (op *ScatterOp) DiffWRT(int) []bool { return []bool{false, false} }
func (op *ScatterOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("ops: a gather's gradient has no gradient of its own (second derivatives are unsupported)")
}

func (op *ScatterOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("ops: scatter: %d inputs, want 2", len(vals))
	}
	ids, err := intData(vals[0], op.v)
	if err != nil {
		return nil, fmt.Errorf("ops: scatter: %w", err)
	}
	g := denseData(vals[1])
	if op.buf == nil || op.buf.Dtype() != vals[1].Dtype() {
		op.buf = tensor.New(tensor.Of(vals[1].Dtype()), tensor.WithShape(op.v, op.d))
	}
	switch b := op.buf.Data().(type) {
	case []float64:
		gg, ok := g.([]float64)
		if !ok || len(gg) != len(ids)*op.d {
			return nil, fmt.Errorf("ops: scatter: gradient %T of %d values for %d ids", g, len(gg), len(ids))
		}
		scatterRows(b, gg, ids, op.d, op.center)
	case []float32:
		gg, ok := g.([]float32)
		if !ok || len(gg) != len(ids)*op.d {
			return nil, fmt.Errorf("ops: scatter: gradient %T of %d values for %d ids", g, len(gg), len(ids))
		}
		scatterRows(b, gg, ids, op.d, op.center)
	default:
		return nil, fmt.Errorf("ops: scatter: unsupported dtype %v", vals[1].Dtype())
	}
	return op.buf, nil
}

func scatterRows[F float32 | float64](buf, g []F, ids []int, d int, center bool) {
	if center {
		row0 := make([]F, d)
		scatterStart(row0, g, len(ids), len(buf)/d, true)
		for r := 0; r < len(buf); r += d {
			copy(buf[r:r+d], row0)
		}
	} else {
		clear(buf)
	}
	for i, id := range ids {
		row, gr := buf[id*d:(id+1)*d], g[i*d:(i+1)*d]
		for j := range row {
			row[j] += gr[j]
		}
	}
}

// scatterStart sets row0 to the row every row of a scatter's result starts
// from: +0, or, centred, −(1/V) Σ_i g_i over the n gradient rows g (the
// gradient through the table's mean; v is V).
func scatterStart[F float32 | float64](row0, g []F, n, v int, center bool) {
	if !center {
		clear(row0)
		return
	}
	fill := colMean(g, len(row0)) // (1/n) Σ_i g_i
	scale := float64(n) / float64(v)
	for j, m := range fill {
		row0[j] = F(-m * scale)
	}
}

// intData returns the ids of an int tensor value, checking each is in [0, v).
func intData(val G.Value, v int) ([]int, error) {
	ids, ok := denseData(val).([]int)
	if !ok {
		return nil, fmt.Errorf("ids have data %T, want []int", val.Data())
	}
	for i, id := range ids {
		if id < 0 || id >= v {
			return nil, fmt.Errorf("id %d at position %d is outside [0, %d)", id, i, v)
		}
	}
	return ids, nil
}

// AddTo adds the op's result on inputs (ids, grad) — the (V, D) tensor S
// that Do returns — into dst, a plain (V, D) tensor of the same dtype, in
// place: dst[r] + S[r] element by element when dstFirst, S[r] + dst[r]
// otherwise, each element the one IEEE addition an elementwise Add of dst
// and Do's result computes, with S[r] summed exactly as Do sums it (the
// starting row, +0 or the centred −(1/V) Σ_i grad_i, then each position's
// gradient row in position order). Without the centring only the rows of
// the ids present are written: every other row of S is +0, and x + (+0) is
// x for every x but −0 (which it makes +0) and a signalling NaN (which it
// quiets), so dst must hold neither for the result to equal the Add's
// (graph.NoNegZeroOp). Centred, every row is written, with no (V, D)
// buffer filled: one pass over dst.
//
// ok is false, and dst untouched, where dst is not such a tensor; an id
// outside [0, V) or a gradient of the wrong size or dtype is an error, also
// with dst untouched. The host executor (package graph) uses it to sum a
// table's gradient from a tied output layer and from this lookup without
// the scatter's (V, D) buffer.
func (op *ScatterOp) AddTo(dst G.Value, dstFirst bool, inputs ...G.Value) (bool, error) {
	if len(inputs) != 2 || inputs[0] == nil || inputs[1] == nil {
		return false, fmt.Errorf("ops: scatter: %d inputs (or a nil one), want 2", len(inputs))
	}
	ids, err := intData(inputs[0], op.v)
	if err != nil {
		return false, fmt.Errorf("ops: scatter: %w", err)
	}
	dd, ok := dst.(*tensor.Dense)
	if !ok || dd.IsView() || dd.IsMasked() || !dd.DataOrder().IsRowMajor() || !dd.Shape().Eq(tensor.Shape{op.v, op.d}) || dd.DataSize() != op.v*op.d {
		return false, nil
	}
	g := denseData(inputs[1])
	switch b := dd.Data().(type) {
	case []float64:
		gg, ok := g.([]float64)
		if !ok || len(gg) != len(ids)*op.d {
			return false, fmt.Errorf("ops: scatter: gradient %T of %d values for %d ids, into %v", g, len(gg), len(ids), dd.Dtype())
		}
		scatterAddRows(op, b, gg, ids, dstFirst)
	case []float32:
		gg, ok := g.([]float32)
		if !ok || len(gg) != len(ids)*op.d {
			return false, fmt.Errorf("ops: scatter: gradient %T of %d values for %d ids, into %v", g, len(gg), len(ids), dd.Dtype())
		}
		scatterAddRows(op, b, gg, ids, dstFirst)
	default:
		return false, nil
	}
	return true, nil
}

// scatterAddRows is AddTo on slices: dst (V, d) += S, S[r] for the rows of
// ids summed in a row of scratch first, in position order.
func scatterAddRows[F float32 | float64](op *ScatterOp, dst, g []F, ids []int, dstFirst bool) {
	d := op.d
	// The positions grouped by id, in position order within each id.
	perm := op.perm[:0]
	for i := range ids {
		perm = append(perm, i)
	}
	op.perm = perm
	slices.SortFunc(perm, func(a, b int) int {
		if c := cmp.Compare(ids[a], ids[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	s, ok := op.row.([]F)
	if !ok || len(s) != 2*d {
		s = make([]F, 2*d)
		op.row = s
	}
	row0, sum := s[:d], s[d:]
	scatterStart(row0, g, len(ids), op.v, op.center)
	next := 0 // the first row not yet written
	for k := 0; k < len(perm); {
		id := ids[perm[k]]
		if op.center {
			for r := next; r < id; r++ {
				addRow(dst[r*d:(r+1)*d], row0, dstFirst)
			}
		}
		copy(sum, row0)
		for ; k < len(perm) && ids[perm[k]] == id; k++ {
			gr := g[perm[k]*d : (perm[k]+1)*d]
			for j := range sum {
				sum[j] += gr[j]
			}
		}
		addRow(dst[id*d:(id+1)*d], sum, dstFirst)
		next = id + 1
	}
	if op.center {
		for r := next; r < op.v; r++ {
			addRow(dst[r*d:(r+1)*d], row0, dstFirst)
		}
	}
}

// addRow sets dst[j] = dst[j] + s[j] (dstFirst) or s[j] + dst[j], the bulk
// in AVX2 where the CPU has it: each element the one IEEE addition with the
// same first operand (the one whose NaN a sum of two NaNs keeps), as the
// host executor's elementwise addition computes it.
func addRow[F float32 | float64](dst, s []F, dstFirst bool) {
	a, b := dst, s[:len(dst)]
	if !dstFirst {
		a, b = b, a
	}
	j := 0
	if haveAddAVX2 && len(dst) >= 8 {
		switch o := any(dst).(type) {
		case []float32:
			vaddF32(&o[0], &any(a).([]float32)[0], &any(b).([]float32)[0], len(o))
			j = len(o) &^ 7
		case []float64:
			vaddF64(&o[0], &any(a).([]float64)[0], &any(b).([]float64)[0], len(o))
			j = len(o) &^ 3
		}
	}
	for ; j < len(dst); j++ {
		dst[j] = a[j] + b[j]
	}
}
