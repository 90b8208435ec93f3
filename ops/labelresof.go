package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LabelResidualsOf returns the residuals of a later GD step of the GD
// model's structured construction, r = step·(w_{e,y_i} − E_i) for the N
// context rows of every sequence, as one [LabelResidualsOfOp] node: for W_e
// (d', C), the int labels ids (B·T, T = N+1 rows a sequence, −1 for a row
// without a label, whose w_{e,y} is zero), a scalar step and the
// expectations e (B, N, d'), the (B, N, d') tensor whose row (b, i) is
// step·(W_e[:, ids[b·T+i]] − e[b, i]). The query rows' ids are checked, not
// read.
//
// It computes in one pass what the chain GatherCols, Slice, Sub and Mul
// computes in four, the same values bit for bit, and the gradient of e,
// −(step·dr), bit for bit too. The gradients of W_e (step times the sums of
// dr's rows per label, [LabelSumsOp]) and of the step (accumulated in
// float64) are those of the chain within rounding. An id outside [−1, C)
// fails the run with an error naming it.
func LabelResidualsOf(we, ids, step, e *G.Node, n int) (*G.Node, error) {
	if we == nil || ids == nil || step == nil || e == nil {
		return nil, fmt.Errorf("ops: label residuals of: nil input")
	}
	if we.Shape().Dims() != 2 {
		return nil, fmt.Errorf("ops: label residuals of: matrix %q has shape %v, want (d', C)", we.Name(), we.Shape())
	}
	if err := checkFloat(we.Dtype()); err != nil {
		return nil, fmt.Errorf("ops: label residuals of: matrix %q: %w", we.Name(), err)
	}
	if ids.Dtype() != tensor.Int || ids.Shape().Dims() != 1 {
		return nil, fmt.Errorf("ops: label residuals of: ids %q must be an int vector", ids.Name())
	}
	if !step.IsScalar() || step.Dtype() != we.Dtype() {
		return nil, fmt.Errorf("ops: label residuals of: step %q must be a %v scalar", step.Name(), we.Dtype())
	}
	r := ids.Shape()[0]
	if n <= 0 || r%(n+1) != 0 {
		return nil, fmt.Errorf("ops: label residuals of: %d ids are not whole sequences of N+1 = %d rows", r, n+1)
	}
	op := &LabelResidualsOfOp{dp: we.Shape()[0], c: we.Shape()[1], b: r / (n + 1), n: n}
	if es := e.Shape(); e.Dtype() != we.Dtype() || !es.Eq(tensor.Shape{op.b, n, op.dp}) {
		return nil, fmt.Errorf("ops: label residuals of: expectations %q are %v %v, want %v (%d, %d, %d)", e.Name(), e.Dtype(), es, we.Dtype(), op.b, n, op.dp)
	}
	return G.ApplyOp(op, we, ids, step, e)
}

// LabelResidualsOfOp is (W_e (d', C), ids (B·T), step, e (B, N, d')) -> (B,
// N, d') ([LabelResidualsOf]).
type LabelResidualsOfOp struct {
	dp, c, b, n int
}

func (op *LabelResidualsOfOp) Arity() int { return 4 }
func (op *LabelResidualsOfOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t3 := &G.TensorType{Dims: 3, Of: a}
	return hm.NewFnType(&G.TensorType{Dims: 2, Of: a}, &G.TensorType{Dims: 1, Of: tensor.Int}, a, t3, t3)
}
func (op *LabelResidualsOfOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.b, op.n, op.dp}, nil
}
func (op *LabelResidualsOfOp) ReturnsPtr() bool     { return false }
func (op *LabelResidualsOfOp) CallsExtern() bool    { return false }
func (op *LabelResidualsOfOp) OverwritesInput() int { return -1 }
func (op *LabelResidualsOfOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.labelresidualsof (%d,%d) B %d N %d", op.dp, op.c, op.b, op.n)
}
func (op *LabelResidualsOfOp) Hashcode() uint32 { return hashOf(op) }
func (op *LabelResidualsOfOp) String() string {
	return fmt.Sprintf("LabelResidualsOf(%d,%d,N=%d)", op.dp, op.c, op.n)
}
func (op *LabelResidualsOfOp) DiffWRT(int) []bool { return []bool{true, false, true, true} }

// SymDiff: the sums of dr per label (LabelSumsOp), then dW_e = step·S,
// dstep and de = −(step·dr) ([LabelResidualsOfGradOp]).
func (op *LabelResidualsOfOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	sums, err := G.ApplyOp(&LabelSumsOp{fwd: LabelResidualsOp{dp: op.dp, c: op.c, b: op.b, n: op.n}}, inputs[1], grad)
	if err != nil {
		return nil, err
	}
	out := G.Nodes{nil, nil, nil, nil}
	for _, wrt := range []int{0, 2, 3} {
		if out[wrt], err = G.ApplyOp(&LabelResidualsOfGradOp{fwd: *op, wrt: wrt}, inputs[0], inputs[2], inputs[3], grad, sums); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (op *LabelResidualsOfOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *LabelResidualsOfOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) {
	return op.do(p, vals)
}

func (op *LabelResidualsOfOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 4 {
		return nil, fmt.Errorf("ops: label residuals of: %d inputs, want 4", len(vals))
	}
	ids, err := labelIDs(vals[1], op.b*(op.n+1), op.c)
	if err != nil {
		return nil, fmt.Errorf("ops: label residuals of: %w", err)
	}
	step, err := scalarOf(vals[2])
	if err != nil {
		return nil, fmt.Errorf("ops: label residuals of: step: %w", err)
	}
	switch w := denseData(vals[0]).(type) {
	case []float64:
		e, ok := denseData(vals[3]).([]float64)
		if !ok {
			return nil, fmt.Errorf("ops: label residuals of: mixed dtypes")
		}
		return labelResidualsOfDo(op, p, ids, w, e, step)
	case []float32:
		e, ok := denseData(vals[3]).([]float32)
		if !ok {
			return nil, fmt.Errorf("ops: label residuals of: mixed dtypes")
		}
		return labelResidualsOfDo(op, p, ids, w, e, float32(step))
	}
	return nil, fmt.Errorf("ops: label residuals of: unsupported matrix data %T", vals[0].Data())
}

// labelResidualsOfDo sets row (b, i) to step·(W_e[:, y] − e[b, i]) (w_{e,y}
// zero for −1): the chain's Sub, then its Mul.
func labelResidualsOfDo[F float32 | float64](op *LabelResidualsOfOp, p G.Value, ids []int, w, e []F, step F) (G.Value, error) {
	dp, c, n, t := op.dp, op.c, op.n, op.n+1
	if len(w) != dp*c || len(e) != op.b*n*dp {
		return nil, fmt.Errorf("ops: label residuals of: %d and %d values, want %d·%d and %d·%d·%d", len(w), len(e), dp, c, op.b, n, dp)
	}
	tab := make([]F, (c+1)*dp) // row y: w_{e,y}; row c: −1's, zero
	for y := range c {
		for j := range dp {
			tab[y*dp+j] = w[j*c+y]
		}
	}
	out := outBuf[F](p, op.b*n*dp, false)
	k := 0
	for b := range op.b {
		for _, y := range ids[b*t : b*t+n] {
			if y < 0 {
				y = c
			}
			o, er, wy := out[k:k+dp], e[k:k+dp], tab[y*dp:(y+1)*dp]
			er, wy = er[:len(o)], wy[:len(o)]
			for j := range o {
				o[j] = step * (wy[j] - er[j])
			}
			k += dp
		}
	}
	return wrapOut(p, tensor.Shape{op.b, n, dp}, out), nil
}

// LabelResidualsOfGradOp is a gradient of a [LabelResidualsOfOp]: inputs
// W_e, step, e, dr and S (the sums of dr's rows per label, [LabelSumsOp]):
//
//	wrt 0: dW_e[j, y] = step·S[j, y]
//	wrt 2: dstep = Σ_j Σ_{y<C} S[j, y]·W_e[j, y] − Σ dr·e (in float64)
//	wrt 3: de = −(step·dr)
type LabelResidualsOfGradOp struct {
	fwd LabelResidualsOfOp
	wrt int
}

// Wrt is the forward input the gradient is taken with respect to: 0 W_e, 2
// the step, 3 the expectations.
func (op *LabelResidualsOfGradOp) Wrt() int { return op.wrt }

func (op *LabelResidualsOfGradOp) Arity() int { return 5 }
func (op *LabelResidualsOfGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	m, t3 := &G.TensorType{Dims: 2, Of: a}, &G.TensorType{Dims: 3, Of: a}
	var out hm.Type = m
	switch op.wrt {
	case 2:
		out = a
	case 3:
		out = t3
	}
	return hm.NewFnType(m, a, t3, t3, m, out)
}
func (op *LabelResidualsOfGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	switch op.wrt {
	case 2:
		return tensor.ScalarShape(), nil
	case 3:
		return tensor.Shape{op.fwd.b, op.fwd.n, op.fwd.dp}, nil
	}
	return tensor.Shape{op.fwd.dp, op.fwd.c}, nil
}
func (op *LabelResidualsOfGradOp) ReturnsPtr() bool     { return false }
func (op *LabelResidualsOfGradOp) CallsExtern() bool    { return false }
func (op *LabelResidualsOfGradOp) OverwritesInput() int { return -1 }
func (op *LabelResidualsOfGradOp) WriteHash(h hash.Hash) {
	op.fwd.WriteHash(h)
	fmt.Fprintf(h, " grad %d", op.wrt)
}
func (op *LabelResidualsOfGradOp) Hashcode() uint32 { return hashOf(op) }
func (op *LabelResidualsOfGradOp) String() string {
	return fmt.Sprintf("LabelResidualsOfGrad{%d}", op.wrt)
}
func (op *LabelResidualsOfGradOp) DiffWRT(int) []bool { return make([]bool, 5) }
func (op *LabelResidualsOfGradOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("ops: label residuals' gradients are not differentiable")
}

func (op *LabelResidualsOfGradOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *LabelResidualsOfGradOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) {
	return op.do(p, vals)
}

func (op *LabelResidualsOfGradOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 5 {
		return nil, fmt.Errorf("ops: label residuals of gradient: %d inputs, want 5", len(vals))
	}
	step, err := scalarOf(vals[1])
	if err != nil {
		return nil, fmt.Errorf("ops: label residuals of gradient: step: %w", err)
	}
	switch w := denseData(vals[0]).(type) {
	case []float64:
		e, ok1 := denseData(vals[2]).([]float64)
		dr, ok2 := denseData(vals[3]).([]float64)
		s, ok3 := denseData(vals[4]).([]float64)
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("ops: label residuals of gradient: mixed dtypes")
		}
		return labelResidualsOfGradDo(op, p, w, e, dr, s, step)
	case []float32:
		e, ok1 := denseData(vals[2]).([]float32)
		dr, ok2 := denseData(vals[3]).([]float32)
		s, ok3 := denseData(vals[4]).([]float32)
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("ops: label residuals of gradient: mixed dtypes")
		}
		return labelResidualsOfGradDo(op, p, w, e, dr, s, float32(step))
	}
	return nil, fmt.Errorf("ops: label residuals of gradient: unsupported matrix data %T", vals[0].Data())
}

func labelResidualsOfGradDo[F float32 | float64](op *LabelResidualsOfGradOp, p G.Value, w, e, dr, s []F, step F) (G.Value, error) {
	dp, c, m := op.fwd.dp, op.fwd.c, op.fwd.b*op.fwd.n*op.fwd.dp
	if len(w) != dp*c || len(s) != dp*(c+1) || len(e) != m || len(dr) != m {
		return nil, fmt.Errorf("ops: label residuals of gradient: %d, %d, %d and %d values, want %d·%d, %d·%d and %d twice",
			len(w), len(s), len(e), len(dr), dp, c, dp, c+1, m)
	}
	switch op.wrt {
	case 2:
		var g float64
		for j := range dp {
			for y := range c {
				g += float64(s[j*(c+1)+y]) * float64(w[j*c+y])
			}
		}
		var de float64
		for i, v := range dr {
			de += float64(v) * float64(e[i])
		}
		g -= de
		if is32[F]() {
			return G.NewF32(float32(g)), nil
		}
		return G.NewF64(g), nil
	case 3:
		out := outBuf[F](p, m, false)
		dr = dr[:len(out)]
		for i, v := range dr {
			out[i] = -(step * v)
		}
		return wrapOut(p, tensor.Shape{op.fwd.b, op.fwd.n, dp}, out), nil
	}
	out := outBuf[F](p, dp*c, false)
	for j := range dp {
		for y := range c {
			out[j*c+y] = step * s[j*(c+1)+y]
		}
	}
	return wrapOut(p, tensor.Shape{dp, c}, out), nil
}
