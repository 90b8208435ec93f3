package ops

import (
	"fmt"
	"hash"
	"math"
	"sync/atomic"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ExpectationOp is E = softmax(f K) Vᵀ in one op: f (M, d'), keys K (d', C),
// values V (d', C), E (M, d'). It keeps the probabilities between the
// forward and the backward pass of a run (checking, as [HeadOp] does, that
// they belong to the values the backward pass is given, recomputing them
// otherwise). Backward: [ExpectationGradOp] gives df and computes dK and dV,
// which [ExpectationParamGradOp] nodes (taking df as an input, so they run
// after it) return.
type ExpectationOp struct {
	id    uint64
	rankF int // rank of f (2, or more for a tensor of rows)
	st    any // *expectState[F]
}

var expectOpIDs atomic.Uint64

// Expectation returns E = softmax(f K) Vᵀ (…, d') for f (M, d') — or a
// tensor (…, d') of rows f, such as (B, T, d') — keys K (d', C) and values
// V (d', C), as one [ExpectationOp] node: row i of E is Σ_c p_ic v_c with
// p_i = softmax(f_i K), the expectation E(v | f_i) under the softmax
// likelihood.
func Expectation(f, keys, values *G.Node) (*G.Node, error) {
	if f == nil || keys == nil || values == nil {
		return nil, fmt.Errorf("ops: expectation: nil input")
	}
	fs, ks, vs := f.Shape(), keys.Shape(), values.Shape()
	if len(fs) < 2 || len(ks) != 2 || !ks.Eq(vs) || ks[0] != fs[len(fs)-1] {
		return nil, fmt.Errorf("ops: expectation: shapes f %v, keys %v, values %v; want (…, d'), (d', C), (d', C)", fs, ks, vs)
	}
	if err := checkFloat(f.Dtype()); err != nil || keys.Dtype() != f.Dtype() || values.Dtype() != f.Dtype() {
		return nil, fmt.Errorf("ops: expectation: dtypes %v, %v, %v; want one of float32, float64", f.Dtype(), keys.Dtype(), values.Dtype())
	}
	return G.ApplyOp(&ExpectationOp{id: expectOpIDs.Add(1), rankF: len(fs)}, f, keys, values)
}

type expectState[F float32 | float64] struct {
	m, dp, c  int
	p         []F // (M, C) probabilities
	f, out    *F
	k, v      []F
	valid     bool
	dpb       []F // (M, C) scratch
	dk, dv    []F
	df        *F
	gradValid bool
	// The lane kernels' buffers (float32, expectlanes.go): the
	// probabilities of the first M &^ 3 rows four rows at a time, row i
	// of a group in lane i; four rows of f or dE as lanes; four rows of
	// the logits' gradient as lanes.
	pl, ft, dll []F
}

func expectStateOf[F float32 | float64](p *any) *expectState[F] {
	if st, ok := (*p).(*expectState[F]); ok {
		return st
	}
	st := &expectState[F]{}
	*p = st
	return st
}

func (op *ExpectationOp) Arity() int { return 3 }
func (op *ExpectationOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t, tf := &G.TensorType{Dims: 2, Of: a}, &G.TensorType{Dims: op.rankF, Of: a}
	return hm.NewFnType(tf, t, t, tf)
}
func (op *ExpectationOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	fs, ok := in[0].(tensor.Shape)
	if !ok || len(fs) != op.rankF {
		return nil, fmt.Errorf("ops: expectation op: cannot infer shape from %v", in[0])
	}
	return fs.Clone(), nil
}
func (op *ExpectationOp) ReturnsPtr() bool      { return false }
func (op *ExpectationOp) CallsExtern() bool     { return false }
func (op *ExpectationOp) OverwritesInput() int  { return -1 }
func (op *ExpectationOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "gdattn.expect#%d", op.id) }
func (op *ExpectationOp) Hashcode() uint32      { return hashOf(op) }
func (op *ExpectationOp) String() string        { return "Expectation" }
func (op *ExpectationOp) DiffWRT(int) []bool    { return []bool{true, true, true} }

func (op *ExpectationOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	in := append(append(G.Nodes{}, inputs...), output, grad)
	df, err := G.ApplyOp(&ExpectationGradOp{e: op}, in...)
	if err != nil {
		return nil, err
	}
	out := G.Nodes{df}
	for w := 1; w <= 2; w++ {
		n, err := G.ApplyOp(&ExpectationParamGradOp{e: op, wrt: w}, append(append(G.Nodes{}, in...), df)...)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// expectDims checks the shapes of f, K, V.
func expectDims(vals []G.Value) (m, dp, c int, err error) {
	fs, ks, vs := vals[0].Shape(), vals[1].Shape(), vals[2].Shape()
	if len(fs) < 2 || len(ks) != 2 || !ks.Eq(vs) || ks[0] != fs[len(fs)-1] {
		return 0, 0, 0, fmt.Errorf("ops: expectation op: shapes %v %v %v", fs, ks, vs)
	}
	dp = fs[len(fs)-1]
	return fs.TotalSize() / dp, dp, ks[1], nil
}

func expectInputs[F float32 | float64](vals []G.Value) (f, k, v []F, err error) {
	var ok1, ok2, ok3 bool
	f, ok1 = vals[0].Data().([]F)
	k, ok2 = vals[1].Data().([]F)
	v, ok3 = vals[2].Data().([]F)
	if !ok1 || !ok2 || !ok3 {
		return nil, nil, nil, fmt.Errorf("ops: expectation op: mixed dtypes")
	}
	return f, k, v, nil
}

func (op *ExpectationOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *ExpectationOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) { return op.do(p, vals) }

func (op *ExpectationOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 3 {
		return nil, fmt.Errorf("ops: expectation op: %d inputs, want 3", len(vals))
	}
	m, dp, c, err := expectDims(vals)
	if err != nil {
		return nil, err
	}
	switch vals[0].Data().(type) {
	case []float64:
		return expectDo[float64](op, p, vals, m, dp, c)
	case []float32:
		return expectDo[float32](op, p, vals, m, dp, c)
	}
	return nil, fmt.Errorf("ops: expectation op: unsupported data %T", vals[0].Data())
}

func expectDo[F float32 | float64](op *ExpectationOp, p G.Value, vals []G.Value, m, dp, c int) (G.Value, error) {
	f, k, v, err := expectInputs[F](vals)
	if err != nil {
		return nil, err
	}
	out := outBuf[F](p, m*dp, true)
	expectForward(expectStateOf[F](&op.st), m, dp, c, f, k, v, out)
	return wrapOut(p, vals[0].Shape(), out), nil
}

func expectForward[F float32 | float64](st *expectState[F], m, dp, c int, f, k, v, out []F) {
	st.valid, st.gradValid = false, false
	st.m, st.dp, st.c = m, dp, c
	st.p = grow(st.p, m*c)
	if st32, ok := any(st).(*expectState[float32]); ok && expectLanes(dp, c) {
		expectForwardLanes(st32, m, dp, c, any(f).([]float32), any(k).([]float32), any(v).([]float32), any(out).([]float32))
	} else {
		expectRowsGemm(m, dp, c, f, k, st.p)
		gemm(false, true, m, dp, c, st.p, c, v, c, 0, out, dp) // p Vᵀ
	}
	st.f, st.out = &f[0], &out[0]
	st.k = append(st.k[:0], k...)
	st.v = append(st.v[:0], v...)
	st.valid = true
}

// softmaxRowInPlace replaces x by softmax(x), stably.
func softmaxRowInPlace[F float32 | float64](x []F) {
	if x32, ok := any(x).([]float32); ok && haveExpAVX2 {
		// The max (1·x_i is x_i; a NaN or +Inf entry makes the row NaN
		// whichever maximum is taken), e_i = Exp32(float64(x_i − mx))
		// summed in index order on the fused exponential (g = 1: 1·x_i −
		// mx rounds as x_i − mx), and x_i·inv in float32, which
		// scaleRow32's float64 product of two float32 values rounds the
		// same way: the same bits as the loops below, eight or four at a
		// time.
		mx := maxScaled32(&x32[0], len(x32), 1)
		sum := expRowSumF32(x32, x32, 1, mx)
		scaleRowF(x32, float64(float32(1/sum)))
		return
	}
	mx := x[0]
	for _, v := range x[1:] {
		if v > mx {
			mx = v
		}
	}
	var sum float64
	if x32, ok := any(x).([]float32); ok {
		// e_i = Exp32(float64(x_i − mx)), summed in index order: the
		// fused exponential (four at a time on AVX2) gives the same bits
		// (g = 1: 1·x_i − mx rounds as x_i − mx).
		sum = expRowSumF32(x32, x32, 1, float32(any(mx).(float32)))
	} else {
		for i, v := range x {
			e := math.Exp(float64(v - mx))
			x[i] = F(e)
			sum += e
		}
	}
	inv := F(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

func (st *expectState[F]) matches(m, dp, c int, f, k, v, out []F) bool {
	return st.valid && st.m == m && st.dp == dp && st.c == c && st.f == &f[0] && st.out == &out[0] &&
		equalF(st.k, k) && equalF(st.v, v)
}

// expectBackward writes df and keeps dK, dV in st.
func expectBackward[F float32 | float64](st *expectState[F], m, dp, c int, f, k, v, out, dout, df []F) {
	if !st.matches(m, dp, c, f, k, v, out) {
		expectForward(st, m, dp, c, f, k, v, make([]F, len(out)))
		st.out = &out[0]
	}
	p := st.p
	st.dpb = grow(st.dpb, m*c)
	dl := st.dpb
	if st32, ok := any(st).(*expectState[float32]); ok && expectLanes(dp, c) {
		expectBackwardLanes(st32, m, dp, c, any(k).([]float32), any(v).([]float32), any(dout).([]float32), any(df).([]float32))
	} else {
		expectRowsGradGemm(m, dp, c, k, v, p, dout, dl, df)
	}
	st.dk = grow(st.dk, dp*c)
	st.dv = grow(st.dv, dp*c)
	gemm(true, false, dp, c, m, f, dp, dl, c, 0, st.dk, c)   // dK = fᵀ dl
	gemm(true, false, dp, c, m, dout, dp, p, c, 0, st.dv, c) // dV = doutᵀ p
	st.df = &df[0]
	st.gradValid = true
}

// ExpectationGradOp returns df. Inputs: f, K, V, E, dE.
type ExpectationGradOp struct{ e *ExpectationOp }

// Forward is the forward op.
func (op *ExpectationGradOp) Forward() *ExpectationOp { return op.e }

func (op *ExpectationGradOp) Arity() int { return 5 }
func (op *ExpectationGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t, tf := &G.TensorType{Dims: 2, Of: a}, &G.TensorType{Dims: op.e.rankF, Of: a}
	return hm.NewFnType(tf, t, t, tf, tf, tf)
}
func (op *ExpectationGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("ops: expectation gradient: cannot infer shape from %v", in[0])
	}
	return s.Clone(), nil
}
func (op *ExpectationGradOp) ReturnsPtr() bool     { return false }
func (op *ExpectationGradOp) CallsExtern() bool    { return false }
func (op *ExpectationGradOp) OverwritesInput() int { return -1 }
func (op *ExpectationGradOp) WriteHash(h hash.Hash) {
	op.e.WriteHash(h)
	fmt.Fprint(h, " grad f")
}
func (op *ExpectationGradOp) Hashcode() uint32     { return hashOf(op) }
func (op *ExpectationGradOp) String() string       { return "ExpectationGrad{f}" }
func (op *ExpectationGradOp) DiffWRT(n int) []bool { return make([]bool, n) }
func (op *ExpectationGradOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("ops: expectation gradients are not differentiable")
}
func (op *ExpectationGradOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *ExpectationGradOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) {
	return op.do(p, vals)
}

func (op *ExpectationGradOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 5 {
		return nil, fmt.Errorf("ops: expectation gradient: %d inputs, want 5", len(vals))
	}
	m, dp, c, err := expectDims(vals)
	if err != nil {
		return nil, err
	}
	switch vals[0].Data().(type) {
	case []float64:
		return expectGradDo[float64](op.e, p, vals, m, dp, c)
	case []float32:
		return expectGradDo[float32](op.e, p, vals, m, dp, c)
	}
	return nil, fmt.Errorf("ops: expectation gradient: unsupported data %T", vals[0].Data())
}

func expectGradDo[F float32 | float64](e *ExpectationOp, p G.Value, vals []G.Value, m, dp, c int) (G.Value, error) {
	f, k, v, err := expectInputs[F](vals)
	if err != nil {
		return nil, err
	}
	out, ok1 := vals[3].Data().([]F)
	dout, ok2 := vals[4].Data().([]F)
	if !ok1 || !ok2 || len(out) != m*dp || len(dout) != m*dp {
		return nil, fmt.Errorf("ops: expectation gradient: output or its gradient has the wrong type or size")
	}
	df := outBuf[F](p, m*dp, true)
	expectBackward(expectStateOf[F](&e.st), m, dp, c, f, k, v, out, dout, df)
	return wrapOut(p, vals[0].Shape(), df), nil
}

// ExpectationParamGradOp returns dK (wrt 1) or dV (wrt 2). Inputs: f, K, V, E,
// dE, df.
type ExpectationParamGradOp struct {
	e   *ExpectationOp
	wrt int
}

// Forward is the forward op.
func (op *ExpectationParamGradOp) Forward() *ExpectationOp { return op.e }

// Wrt is the input the gradient is taken with respect to: 1 the keys K,
// 2 the values V.
func (op *ExpectationParamGradOp) Wrt() int { return op.wrt }

func (op *ExpectationParamGradOp) Arity() int { return 6 }
func (op *ExpectationParamGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t, tf := &G.TensorType{Dims: 2, Of: a}, &G.TensorType{Dims: op.e.rankF, Of: a}
	return hm.NewFnType(tf, t, t, tf, tf, tf, t)
}
func (op *ExpectationParamGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[op.wrt].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("ops: expectation gradient: cannot infer shape from %v", in[op.wrt])
	}
	return s.Clone(), nil
}
func (op *ExpectationParamGradOp) ReturnsPtr() bool     { return false }
func (op *ExpectationParamGradOp) CallsExtern() bool    { return false }
func (op *ExpectationParamGradOp) OverwritesInput() int { return -1 }
func (op *ExpectationParamGradOp) WriteHash(h hash.Hash) {
	op.e.WriteHash(h)
	fmt.Fprintf(h, " grad %d", op.wrt)
}
func (op *ExpectationParamGradOp) Hashcode() uint32     { return hashOf(op) }
func (op *ExpectationParamGradOp) String() string       { return fmt.Sprintf("ExpectationGrad{%d}", op.wrt) }
func (op *ExpectationParamGradOp) DiffWRT(n int) []bool { return make([]bool, n) }
func (op *ExpectationParamGradOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("ops: expectation gradients are not differentiable")
}
func (op *ExpectationParamGradOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 6 {
		return nil, fmt.Errorf("ops: expectation gradient: %d inputs, want 6", len(vals))
	}
	m, dp, c, err := expectDims(vals)
	if err != nil {
		return nil, err
	}
	switch vals[0].Data().(type) {
	case []float64:
		return expectParamGradDo[float64](op, vals, m, dp, c)
	case []float32:
		return expectParamGradDo[float32](op, vals, m, dp, c)
	}
	return nil, fmt.Errorf("ops: expectation gradient: unsupported data %T", vals[0].Data())
}

func expectParamGradDo[F float32 | float64](op *ExpectationParamGradOp, vals []G.Value, m, dp, c int) (G.Value, error) {
	f, k, v, err := expectInputs[F](vals)
	if err != nil {
		return nil, err
	}
	out, ok1 := vals[3].Data().([]F)
	dout, ok2 := vals[4].Data().([]F)
	df, ok3 := vals[5].Data().([]F)
	if !ok1 || !ok2 || !ok3 || len(out) != m*dp || len(dout) != m*dp || len(df) != m*dp {
		return nil, fmt.Errorf("ops: expectation gradient: inputs have the wrong type or size")
	}
	st := expectStateOf[F](&op.e.st)
	if !st.gradValid || st.df != &df[0] || !st.matches(m, dp, c, f, k, v, out) {
		expectBackward(st, m, dp, c, f, k, v, out, dout, make([]F, m*dp))
	}
	src := st.dk
	if op.wrt == 2 {
		src = st.dv
	}
	return tensor.New(tensor.WithShape(dp, c), tensor.WithBacking(append([]F(nil), src...))), nil
}
