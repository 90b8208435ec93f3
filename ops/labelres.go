package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LabelResiduals returns the first GD step's residuals of the GD model's
// structured construction, r = step·(w_{e,y_i} − w̄_e) for the N context
// rows of every sequence, as one [LabelResidualsOp] node: for W_e (d', C),
// the int labels ids (B·T, T = N+1 rows a sequence, −1 for a row without a
// label, whose w_{e,y} is zero) and a scalar step, the (B, N, d') tensor
// whose row (b, i) is step·(W_e[:, ids[b·T+i]] − w̄_e), w̄_e the mean of
// W_e's columns. The query rows (i = N) are not read.
//
// It computes in one pass what the chain GatherCols, Slice, MatMul by the
// mean column, its broadcast to every context row, Sub and Mul computes in
// six, with the same values bit for bit (w̄_e from the same Gemm call as
// the product's). Its backward pass reads the output gradient once
// ([LabelSumsOp]: its sums per label and over all rows) and derives the
// gradients of W_e and of the step from those d'·(C+1) sums
// ([LabelResidualsGradOp]), so they are those of the chain within
// rounding, not bit for bit: the step multiplies the sums instead of each
// element. An id outside [−1, C) fails the run with an error naming it.
func LabelResiduals(we, ids, step *G.Node, n int) (*G.Node, error) {
	if we == nil || ids == nil || step == nil {
		return nil, fmt.Errorf("ops: label residuals: nil input")
	}
	if we.Shape().Dims() != 2 {
		return nil, fmt.Errorf("ops: label residuals: matrix %q has shape %v, want (d', C)", we.Name(), we.Shape())
	}
	if err := checkFloat(we.Dtype()); err != nil {
		return nil, fmt.Errorf("ops: label residuals: matrix %q: %w", we.Name(), err)
	}
	if ids.Dtype() != tensor.Int || ids.Shape().Dims() != 1 {
		return nil, fmt.Errorf("ops: label residuals: ids %q must be an int vector", ids.Name())
	}
	if !step.IsScalar() || step.Dtype() != we.Dtype() {
		return nil, fmt.Errorf("ops: label residuals: step %q must be a %v scalar", step.Name(), we.Dtype())
	}
	r := ids.Shape()[0]
	if n <= 0 || r%(n+1) != 0 {
		return nil, fmt.Errorf("ops: label residuals: %d ids are not whole sequences of N+1 = %d rows", r, n+1)
	}
	op := &LabelResidualsOp{dp: we.Shape()[0], c: we.Shape()[1], b: r / (n + 1), n: n}
	return G.ApplyOp(op, we, ids, step)
}

// LabelResidualsOp is (W_e (d', C), ids (B·T), step) -> (B, N, d')
// ([LabelResiduals]).
type LabelResidualsOp struct {
	dp, c, b, n int
}

// Dims are d', C, the batch B and the context size N.
func (op *LabelResidualsOp) Dims() (dp, c, b, n int) { return op.dp, op.c, op.b, op.n }

func (op *LabelResidualsOp) Arity() int { return 3 }
func (op *LabelResidualsOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(&G.TensorType{Dims: 2, Of: a}, &G.TensorType{Dims: 1, Of: tensor.Int}, a, &G.TensorType{Dims: 3, Of: a})
}
func (op *LabelResidualsOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.b, op.n, op.dp}, nil
}
func (op *LabelResidualsOp) ReturnsPtr() bool     { return false }
func (op *LabelResidualsOp) CallsExtern() bool    { return false }
func (op *LabelResidualsOp) OverwritesInput() int { return -1 }
func (op *LabelResidualsOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.labelresiduals (%d,%d) B %d N %d", op.dp, op.c, op.b, op.n)
}
func (op *LabelResidualsOp) Hashcode() uint32 { return hashOf(op) }
func (op *LabelResidualsOp) String() string {
	return fmt.Sprintf("LabelResiduals(%d,%d,N=%d)", op.dp, op.c, op.n)
}
func (op *LabelResidualsOp) DiffWRT(int) []bool { return []bool{true, false, true} }
func (op *LabelResidualsOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	sums, err := G.ApplyOp(&LabelSumsOp{fwd: *op}, inputs[1], grad)
	if err != nil {
		return nil, err
	}
	dwe, err := G.ApplyOp(&LabelResidualsGradOp{fwd: *op}, inputs[0], inputs[2], sums)
	if err != nil {
		return nil, err
	}
	dstep, err := G.ApplyOp(&LabelResidualsGradOp{fwd: *op, step: true}, inputs[0], inputs[2], sums)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dwe, nil, dstep}, nil
}

func (op *LabelResidualsOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *LabelResidualsOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) {
	return op.do(p, vals)
}

func (op *LabelResidualsOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 3 {
		return nil, fmt.Errorf("ops: label residuals: %d inputs, want 3", len(vals))
	}
	ids, err := labelIDs(vals[1], op.b*(op.n+1), op.c)
	if err != nil {
		return nil, fmt.Errorf("ops: label residuals: %w", err)
	}
	step, err := scalarOf(vals[2])
	if err != nil {
		return nil, fmt.Errorf("ops: label residuals: step: %w", err)
	}
	switch w := denseData(vals[0]).(type) {
	case []float64:
		return labelResidualsDo(op, p, ids, w, step)
	case []float32:
		return labelResidualsDo(op, p, ids, w, float32(step))
	}
	return nil, fmt.Errorf("ops: label residuals: unsupported matrix data %T", vals[0].Data())
}

// meanCols sets wbar to the means of the rows of the (dp, c) matrix w as
// the product w·(1/c, …, 1/c)ᵀ of a MatMul computes them: the same Gemm
// call, the mean column's entries 1/c rounded to F as a constant node's.
func meanCols[F float32 | float64](w []F, dp, c int, wbar []F) {
	inv := make([]F, c)
	for i := range inv {
		inv[i] = F(1 / float64(c))
	}
	Gemm(false, false, dp, 1, c, 1, w, c, inv, 1, 0, wbar, 1)
}

// badID returns the error of the id at position i, outside [−1, c).
func badID(i, id, c int) error {
	return fmt.Errorf("id %d at position %d is outside [-1, %d)", id, i, c)
}

// labelResidualsDo computes the residual row of each label y (and of −1,
// row c) once, step·(W_e[:, y] − w̄_e), then copies the row of each
// context position's label.
func labelResidualsDo[F float32 | float64](op *LabelResidualsOp, p G.Value, ids []int, w []F, step F) (G.Value, error) {
	dp, c, n, t := op.dp, op.c, op.n, op.n+1
	if len(w) != dp*c {
		return nil, fmt.Errorf("ops: label residuals: matrix of %d values, want %d·%d", len(w), dp, c)
	}
	wbar := make([]F, dp)
	meanCols(w, dp, c, wbar)
	tab := make([]F, (c+1)*dp) // row y: the residual of label y; row c: of −1
	for y := range c + 1 {
		row := tab[y*dp : (y+1)*dp]
		for j := range row {
			var v F // w_{e,y} is zero for −1
			if y < c {
				v = w[j*c+y]
			}
			row[j] = step * (v - wbar[j])
		}
	}
	out := outBuf[F](p, op.b*n*dp, false)
	k := 0
	if dp <= 8 {
		// Rows of 8 copied whole while they end within out, each
		// spilling into the next row, which overwrites the spill.
		tab8 := make([][8]F, c+1)
		for y := range tab8 {
			copy(tab8[y][:], tab[y*dp:(y+1)*dp])
		}
		for b := range op.b {
			for _, y := range ids[b*t : b*t+n] {
				if y < 0 {
					y = c
				}
				if k+8 <= len(out) {
					*(*[8]F)(out[k : k+8]) = tab8[y]
				} else {
					copy(out[k:k+dp], tab8[y][:dp])
				}
				k += dp
			}
		}
		return wrapOut(p, tensor.Shape{op.b, n, dp}, out), nil
	}
	for b := range op.b {
		for _, y := range ids[b*t : b*t+n] {
			if y < 0 {
				y = c
			}
			o, src := out[k:k+dp], tab[y*dp:(y+1)*dp]
			src = src[:len(o)]
			for j := range o {
				o[j] = src[j]
			}
			k += dp
		}
	}
	return wrapOut(p, tensor.Shape{op.b, n, dp}, out), nil
}

// LabelSumsOp is (ids (B·T), dr (B, N, d')) -> S (d', C+1): column y < C
// of S the sum of the rows (b, i) of dr with ids[b·T+i] = y, column C the
// sum of those with id −1, each in row order from +0. It is the one pass
// over the output gradient of a [LabelResidualsOp].
type LabelSumsOp struct {
	fwd LabelResidualsOp
	lab []int32 // scratch: the rows' labels (labelSums8), reused from run to run
}

func (op *LabelSumsOp) Arity() int { return 2 }
func (op *LabelSumsOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(&G.TensorType{Dims: 1, Of: tensor.Int}, &G.TensorType{Dims: 3, Of: a}, &G.TensorType{Dims: 2, Of: a})
}
func (op *LabelSumsOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.fwd.dp, op.fwd.c + 1}, nil
}
func (op *LabelSumsOp) ReturnsPtr() bool     { return false }
func (op *LabelSumsOp) CallsExtern() bool    { return false }
func (op *LabelSumsOp) OverwritesInput() int { return -1 }
func (op *LabelSumsOp) WriteHash(h hash.Hash) {
	op.fwd.WriteHash(h)
	fmt.Fprint(h, " sums")
}
func (op *LabelSumsOp) Hashcode() uint32   { return hashOf(op) }
func (op *LabelSumsOp) String() string     { return fmt.Sprintf("LabelSums(%d,%d)", op.fwd.dp, op.fwd.c) }
func (op *LabelSumsOp) DiffWRT(int) []bool { return []bool{false, false} }
func (op *LabelSumsOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("ops: label residuals' gradients are not differentiable")
}

func (op *LabelSumsOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *LabelSumsOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) { return op.do(p, vals) }

func (op *LabelSumsOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("ops: label sums: %d inputs, want 2", len(vals))
	}
	ids, ok := denseData(vals[0]).([]int)
	if !ok || len(ids) != op.fwd.b*(op.fwd.n+1) {
		return nil, fmt.Errorf("ops: label sums: ids have data %T, want %d ints", vals[0].Data(), op.fwd.b*(op.fwd.n+1))
	}
	switch g := denseData(vals[1]).(type) {
	case []float64:
		return labelSumsDo(op, p, ids, g)
	case []float32:
		return labelSumsDo(op, p, ids, g)
	}
	return nil, fmt.Errorf("ops: label sums: unsupported gradient data %T", vals[1].Data())
}

func labelSumsDo[F float32 | float64](op *LabelSumsOp, p G.Value, ids []int, g []F) (G.Value, error) {
	dp, c, n := op.fwd.dp, op.fwd.c, op.fwd.n
	if len(g) != op.fwd.b*n*dp {
		return nil, fmt.Errorf("ops: label sums: gradient of %d values, want %d·%d·%d", len(g), op.fwd.b, n, dp)
	}
	// The sums are gathered label-major (C+1, d'), rows contiguous, and
	// transposed into S at the end.
	acc := make([]F, (c+1)*dp)
	if dp <= 8 {
		if err := labelSums8(op, ids, g, acc); err != nil {
			return nil, err
		}
	} else if err := labelSumsRows(op, ids, g, acc); err != nil {
		return nil, err
	}
	out := outBuf[F](p, dp*(c+1), false)
	for y := range c + 1 {
		for j := range dp {
			out[j*(c+1)+y] = acc[y*dp+j]
		}
	}
	return wrapOut(p, tensor.Shape{dp, c + 1}, out), nil
}

// labelSums8 is labelSumsRows for d' ≤ 8: the sums in fixed rows of 8,
// the same additions in the same order. The rows' labels are checked and
// listed first; float32 rows are then added a row per vector addition
// (labelSums32) where the CPU allows.
func labelSums8[F float32 | float64](op *LabelSumsOp, ids []int, g, acc []F) error {
	dp, c, n, t := op.fwd.dp, op.fwd.c, op.fwd.n, op.fwd.n+1
	rows := make([][8]F, c+1)
	if len(op.lab) != op.fwd.b*n {
		op.lab = make([]int32, op.fwd.b*n)
	}
	lab := op.lab
	k := 0
	for b := range op.fwd.b {
		for i, y := range ids[b*t : b*t+n] {
			if y < -1 || y >= c {
				return fmt.Errorf("ops: label sums: %w", badID(b*t+i, y, c))
			}
			if y < 0 {
				y = c
			}
			lab[k] = int32(y)
			k++
		}
	}
	g = g[:len(lab)*dp]
	if g32, ok := any(g).([]float32); ok && haveLabelSums32 && len(lab) > 0 {
		labelSums32(&any(rows).([][8]float32)[0][0], &g32[0], &lab[0], len(lab), dp)
	} else {
		k = 0
		for _, y := range lab {
			s := &rows[y]
			for j, v := range g[k : k+dp] {
				s[j&7] += v
			}
			k += dp
		}
	}
	for y := range rows {
		copy(acc[y*dp:(y+1)*dp], rows[y][:dp])
	}
	return nil
}

// labelSumsRows adds the rows of g into the rows of acc (C+1, d') of their
// labels, in row order.
func labelSumsRows[F float32 | float64](op *LabelSumsOp, ids []int, g, acc []F) error {
	dp, c, n, t := op.fwd.dp, op.fwd.c, op.fwd.n, op.fwd.n+1
	k := 0
	for b := range op.fwd.b {
		for i, y := range ids[b*t : b*t+n] {
			if y < -1 || y >= c {
				return fmt.Errorf("ops: label sums: %w", badID(b*t+i, y, c))
			}
			if y < 0 {
				y = c
			}
			s := acc[y*dp : (y+1)*dp]
			row := g[k : k+dp]
			row = row[:len(s)]
			for j := range s {
				s[j] += row[j]
			}
			k += dp
		}
	}
	return nil
}

// LabelResidualsGradOp is (W_e (d', C), step, S (d', C+1)) -> the
// gradient of a [LabelResidualsOp] w.r.t. W_e (d', C) or, with step, w.r.t.
// the step (a scalar), from the sums S of its [LabelSumsOp]:
//
//	dW_e[j, y] = step·S[j, y] − step·(Σ_{y'≤C} S[j, y'])/C
//	dstep      = Σ_j (Σ_{y<C} S[j, y]·W_e[j, y] − (Σ_{y'≤C} S[j, y'])·w̄_e[j])
//
// (dstep accumulated in float64).
type LabelResidualsGradOp struct {
	fwd  LabelResidualsOp
	step bool
}

// WRTStep reports whether the op is the gradient w.r.t. the step.
func (op *LabelResidualsGradOp) WRTStep() bool { return op.step }

func (op *LabelResidualsGradOp) Arity() int { return 3 }
func (op *LabelResidualsGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	m := &G.TensorType{Dims: 2, Of: a}
	if op.step {
		return hm.NewFnType(m, a, m, a)
	}
	return hm.NewFnType(m, a, m, m)
}
func (op *LabelResidualsGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if op.step {
		return tensor.ScalarShape(), nil
	}
	return tensor.Shape{op.fwd.dp, op.fwd.c}, nil
}
func (op *LabelResidualsGradOp) ReturnsPtr() bool     { return false }
func (op *LabelResidualsGradOp) CallsExtern() bool    { return false }
func (op *LabelResidualsGradOp) OverwritesInput() int { return -1 }
func (op *LabelResidualsGradOp) WriteHash(h hash.Hash) {
	op.fwd.WriteHash(h)
	fmt.Fprintf(h, " grad step %v", op.step)
}
func (op *LabelResidualsGradOp) Hashcode() uint32 { return hashOf(op) }
func (op *LabelResidualsGradOp) String() string {
	if op.step {
		return "LabelResidualsGrad{step}"
	}
	return "LabelResidualsGrad{we}"
}
func (op *LabelResidualsGradOp) DiffWRT(int) []bool { return []bool{false, false, false} }
func (op *LabelResidualsGradOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("ops: label residuals' gradients are not differentiable")
}

func (op *LabelResidualsGradOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *LabelResidualsGradOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) {
	return op.do(p, vals)
}

func (op *LabelResidualsGradOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 3 {
		return nil, fmt.Errorf("ops: label residuals gradient: %d inputs, want 3", len(vals))
	}
	step, err := scalarOf(vals[1])
	if err != nil {
		return nil, fmt.Errorf("ops: label residuals gradient: step: %w", err)
	}
	switch w := denseData(vals[0]).(type) {
	case []float64:
		s, ok := denseData(vals[2]).([]float64)
		if !ok {
			return nil, fmt.Errorf("ops: label residuals gradient: mixed dtypes")
		}
		return labelResidualsGradDo(op, p, w, s, step)
	case []float32:
		s, ok := denseData(vals[2]).([]float32)
		if !ok {
			return nil, fmt.Errorf("ops: label residuals gradient: mixed dtypes")
		}
		return labelResidualsGradDo(op, p, w, s, float32(step))
	}
	return nil, fmt.Errorf("ops: label residuals gradient: unsupported matrix data %T", vals[0].Data())
}

func labelResidualsGradDo[F float32 | float64](op *LabelResidualsGradOp, p G.Value, w, s []F, step F) (G.Value, error) {
	dp, c := op.fwd.dp, op.fwd.c
	if len(w) != dp*c || len(s) != dp*(c+1) {
		return nil, fmt.Errorf("ops: label residuals gradient: %d and %d values, want %d·%d and %d·%d", len(w), len(s), dp, c, dp, c+1)
	}
	if op.step {
		wbar := make([]F, dp)
		meanCols(w, dp, c, wbar)
		var g float64
		for j := range dp {
			row := s[j*(c+1) : (j+1)*(c+1)]
			var tot, dot float64
			for y, v := range row {
				tot += float64(v)
				if y < c {
					dot += float64(v) * float64(w[j*c+y])
				}
			}
			g += dot - tot*float64(wbar[j])
		}
		if is32[F]() {
			return G.NewF32(float32(g)), nil
		}
		return G.NewF64(g), nil
	}
	out := outBuf[F](p, dp*c, false)
	for j := range dp {
		row := s[j*(c+1) : (j+1)*(c+1)]
		var tot F
		for _, v := range row {
			tot += v
		}
		m := step * tot / F(c)
		for y := range c {
			out[j*c+y] = step*row[y] - m
		}
	}
	return wrapOut(p, tensor.Shape{dp, c}, out), nil
}
