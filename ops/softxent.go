package ops

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// SoftmaxCrossEntropy returns the mean cross-entropy
//
//	L = −(1/B) Σ_i Σ_c targets[i, c] · log softmax(logits[i, :])_c
//
// of logits (B, C) against dense targets (B, C) of the same dtype (one-hot
// rows, or rows of a distribution), as one [SoftmaxCrossEntropyOp] node:
// the computation of losses.CrossEntropy (log-softmax, product with the
// targets, sum, scaling) in one op, as PyTorch's F.cross_entropy does it.
// The forward pass computes each row's exponentials exp(x − m) once (m the
// row's maximum, or in float32 the block's while the row is within about
// 20 of it) and keeps them; the backward pass turns them into the gradient
// (softmax·Σ_c t_c − t)·dL/B without another exponential. Terms with a
// zero target are skipped (a −∞ logit of a class with target 0 costs
// nothing). The loss is accumulated in float64.
//
// float32 rows take the fast single-precision exponential of the attention
// rows (relative error below 2e-7), float64 rows math.Exp: the loss and the
// gradient equal the chain's within rounding (1e-12 in float64, 1e-6 in
// float32 at the GD model's sizes), not bit for bit.
func SoftmaxCrossEntropy(logits, targets *G.Node) (*G.Node, error) {
	if logits == nil || targets == nil {
		return nil, fmt.Errorf("ops: softmax cross-entropy: nil input")
	}
	if err := checkFloat(logits.Dtype()); err != nil || logits.Shape().Dims() != 2 {
		return nil, fmt.Errorf("ops: softmax cross-entropy: logits %q (%v %v) must be a float (B, C) matrix", logits.Name(), logits.Dtype(), logits.Shape())
	}
	if targets.Dtype() != logits.Dtype() || !targets.Shape().Eq(logits.Shape()) {
		return nil, fmt.Errorf("ops: softmax cross-entropy: targets %q (%v %v) must have the logits' dtype and shape (%v %v)", targets.Name(), targets.Dtype(), targets.Shape(), logits.Dtype(), logits.Shape())
	}
	if targets.Graph() != logits.Graph() {
		return nil, fmt.Errorf("ops: softmax cross-entropy: logits and targets belong to different graphs")
	}
	sh := logits.Shape()
	if sh[0] <= 0 || sh[1] <= 0 {
		return nil, fmt.Errorf("ops: softmax cross-entropy: logits of shape %v, want at least one row and one column", sh)
	}
	return G.ApplyOp(&SoftmaxCrossEntropyOp{b: sh[0], c: sh[1]}, logits, targets)
}

// SoftmaxCrossEntropyOp is (logits (B, C), targets (B, C)) → mean
// cross-entropy (scalar) ([SoftmaxCrossEntropy]); with Backward it is its
// gradient op, (logits, targets, dL) → dlogits (B, C).
//
// The forward op keeps each row's exponentials exp(x − m) and Σ in
// buffers it owns (reused from run to run). The backward op of the same run
// turns the exponentials into the gradient in place, so the gradient value
// aliases the forward buffer: valid until the op runs again, which is all a
// tape machine needs (the gradient is consumed within the run that makes
// it). When the buffer does not hold this run's exponentials (a backward op
// run on its own, or on other logits) the backward op computes them again.
type SoftmaxCrossEntropyOp struct {
	b, c int
	back bool
	fwd  *SoftmaxCrossEntropyOp // the forward op, for a backward op

	// Forward op state, from its last Do.
	e     any       // []float32 or []float64 (B·C): exp(x − m_i), m_i each row's shift
	sum   []float64 // Σ_j exp(x_j − m_i) of each row
	mx    []float64 // each row's shift m_i (scratch)
	ready bool      // e holds the exponentials of the last forward run, not yet consumed
	src   any       // the logits slice e was computed from
	tsrc  any       // the targets slice of that run
	hot   []int32   // the hot column of each row of those targets (−1: a zero row), when hotOK
	hotOK bool      // every row of the targets is one-hot or zero
}

// Dims are the logits' shape (B, C).
func (op *SoftmaxCrossEntropyOp) Dims() (b, c int) { return op.b, op.c }

// Backward reports whether the op is the gradient op.
func (op *SoftmaxCrossEntropyOp) Backward() bool { return op.back }

func (op *SoftmaxCrossEntropyOp) Arity() int {
	if op.back {
		return 3
	}
	return 2
}
func (op *SoftmaxCrossEntropyOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	m := &G.TensorType{Dims: 2, Of: a}
	if op.back {
		return hm.NewFnType(m, m, a, m)
	}
	return hm.NewFnType(m, m, a)
}
func (op *SoftmaxCrossEntropyOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if op.back {
		return tensor.Shape{op.b, op.c}, nil
	}
	return tensor.ScalarShape(), nil
}
func (op *SoftmaxCrossEntropyOp) ReturnsPtr() bool     { return false }
func (op *SoftmaxCrossEntropyOp) CallsExtern() bool    { return false }
func (op *SoftmaxCrossEntropyOp) OverwritesInput() int { return -1 }
func (op *SoftmaxCrossEntropyOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.softxent (%d,%d) back %v", op.b, op.c, op.back)
}
func (op *SoftmaxCrossEntropyOp) Hashcode() uint32 { return hashOf(op) }
func (op *SoftmaxCrossEntropyOp) String() string {
	if op.back {
		return "SoftXentGrad"
	}
	return "SoftXent"
}
func (op *SoftmaxCrossEntropyOp) DiffWRT(int) []bool {
	if op.back {
		return []bool{false, false, false}
	}
	return []bool{true, false}
}
func (op *SoftmaxCrossEntropyOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if op.back {
		return nil, fmt.Errorf("ops: the softmax cross-entropy has no second derivative (unsupported)")
	}
	g, err := G.ApplyOp(&SoftmaxCrossEntropyOp{b: op.b, c: op.c, back: true, fwd: op}, inputs[0], inputs[1], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{g, nil}, nil
}

func (op *SoftmaxCrossEntropyOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != op.Arity() {
		return nil, fmt.Errorf("ops: softmax cross-entropy: %d inputs, want %d", len(vals), op.Arity())
	}
	var g float64
	if op.back {
		var err error
		if g, err = scalarOf(vals[2]); err != nil {
			return nil, err
		}
	}
	switch x := denseData(vals[0]).(type) {
	case []float64:
		t, ok := denseData(vals[1]).([]float64)
		if !ok || len(t) != len(x) || len(x) != op.b*op.c {
			return nil, fmt.Errorf("ops: softmax cross-entropy: logits %d float64, targets %T, want %d each", len(x), vals[1].Data(), op.b*op.c)
		}
		if !op.back {
			return G.NewF64(softXentLoss(op, x, t)), nil
		}
		return tensor.New(tensor.WithShape(op.b, op.c), tensor.WithBacking(softXentGrad(op, x, t, g))), nil
	case []float32:
		t, ok := denseData(vals[1]).([]float32)
		if !ok || len(t) != len(x) || len(x) != op.b*op.c {
			return nil, fmt.Errorf("ops: softmax cross-entropy: logits %d float32, targets %T, want %d each", len(x), vals[1].Data(), op.b*op.c)
		}
		if !op.back {
			return G.NewF32(float32(softXentLoss(op, x, t))), nil
		}
		return tensor.New(tensor.WithShape(op.b, op.c), tensor.WithBacking(softXentGrad(op, x, t, g))), nil
	}
	return nil, fmt.Errorf("ops: softmax cross-entropy: unsupported logits %T", vals[0].Data())
}

// softXentExp writes e = exp(x − m_i) of every row i and each row's shift
// m_i and Σ_j e_j (in float64) into mx and sum. float64 rows take
// math.Exp with m_i the row's maximum. float32 rows take the fast
// exponential (expSum8) over the whole (B, C) block at once, shifted by the
// block's maximum M: a row whose sum is then below softXentLow (its maximum
// more than about 20 below M, where its exponentials would lose precision
// or vanish) is computed again, shifted by its own maximum, as is every row
// when M is not finite.
func softXentExp[F float32 | float64](x, e []F, mx, sum []float64, c int) {
	if x32, ok := any(x).([]float32); ok {
		softXentExp32(x32, any(e).([]float32), mx, sum, c)
		return
	}
	for i := range mx {
		row, er := x[i*c:(i+1)*c], e[i*c:(i+1)*c]
		m := row[0]
		for _, v := range row[1:] {
			if v > m || v != v {
				m = v
			}
		}
		s := 0.0
		for j, v := range row {
			a := math.Exp(float64(v - m))
			er[j] = F(a)
			s += a
		}
		mx[i], sum[i] = float64(m), s
	}
}

// softXentLow is the smallest row sum of exponentials shifted by the
// block's maximum that softXentExp32 keeps: 2^−30, e^−20.8.
const softXentLow = 0x1p-30

// softXentExp32 is softXentExp for float32 rows.
func softXentExp32(x, e []float32, mx, sum []float64, c int) {
	m := maxScaledF32(x, 1)
	if math.IsInf(float64(m), 0) || m != m {
		for i := range mx {
			r, er := x[i*c:(i+1)*c], e[i*c:(i+1)*c]
			mi := maxScaledF32(r, 1)
			mx[i], sum[i] = float64(mi), expRowFast32(er, r, 1, mi)
		}
		return
	}
	k := 0
	if haveExp8 && len(x) >= 8 {
		k, _ = expSum8(&e[0], &x[0], len(x)&^7, 1, m)
	}
	for ; k < len(x); k++ { // the tail, and from a NaN argument on
		if a := x[k] - m; a <= exp8Hi {
			e[k] = exp8(a)
		} else {
			e[k] = float32(Exp32(float64(a)))
		}
	}
	for i := range sum {
		var s0, s1 float64
		er := e[i*c : (i+1)*c]
		j := 0
		for ; j+1 < len(er); j += 2 {
			s0 += float64(er[j])
			s1 += float64(er[j+1])
		}
		if j < len(er) {
			s0 += float64(er[j])
		}
		s := s0 + s1
		if !(s >= softXentLow) { // far below the block's maximum (or NaN): shifted by its own
			r := x[i*c : (i+1)*c]
			mi := maxScaledF32(r, 1)
			mx[i], sum[i] = float64(mi), expRowFast32(er, r, 1, mi)
			continue
		}
		mx[i], sum[i] = float64(m), s
	}
}

// softXentLoss computes every row's exponentials into op.e and their sums
// into op.sum and returns the mean cross-entropy
// (1/B) Σ_i [Σ_j t_ij·(max_i + log Σ_i − x_ij)] over the non-zero targets.
// The logarithms of the rows whose targets sum to 1 (one-hot rows) are one
// logarithm of the product of their sums, its exponent kept apart. When
// every row of t is one-hot or zero (hotRows) the op keeps the hot columns
// for the backward pass instead of reading t again.
func softXentLoss[F float32 | float64](op *SoftmaxCrossEntropyOp, x, t []F) float64 {
	c := op.c
	e, ok := op.e.([]F)
	if !ok || len(e) != len(x) {
		e = make([]F, len(x))
		op.e = e
	}
	if len(op.sum) != op.b {
		op.sum = make([]float64, op.b)
		op.hot = make([]int32, op.b)
	}
	if len(op.mx) != op.b {
		op.mx = make([]float64, op.b)
	}
	mx := op.mx
	softXentExp(x, e, mx, op.sum, c)
	op.hotOK = hotRows(t, op.b, c, op.hot)
	op.ready, op.src, op.tsrc = true, x, t
	total, prod, exp2 := 0.0, 1.0, 0
	for i := range op.b {
		var st, tx float64
		if op.hotOK {
			h := op.hot[i]
			if h < 0 {
				continue
			}
			st, tx = 1, float64(x[i*c+int(h)])
		} else {
			xr, tr := x[i*c:(i+1)*c], t[i*c:(i+1)*c]
			for j, tv := range tr {
				if tv != 0 {
					st += float64(tv)
					tx += float64(tv) * float64(xr[j])
				}
			}
		}
		total += st*mx[i] - tx
		if st == 1 {
			var ex int
			prod, ex = math.Frexp(prod * op.sum[i])
			exp2 += ex
		} else if st != 0 {
			total += st * math.Log(op.sum[i])
		}
	}
	total += math.Log(prod) + float64(exp2)*math.Ln2
	return total / float64(op.b)
}

// softXentGrad is (softmax(x)·Σ_c t_c − t)·g/B, written in place into the
// forward op's exponentials when they are this run's (see
// SoftmaxCrossEntropyOp).
func softXentGrad[F float32 | float64](op *SoftmaxCrossEntropyOp, x, t []F, g float64) []F {
	c, f := op.c, op.fwd
	e, ok := f.e.([]F)
	if !ok || !f.ready || len(e) != len(x) || len(f.sum) != op.b || !sameSlice(f.src, x) {
		// No exponentials of these logits at hand: compute them, into
		// the forward op's own buffer.
		if !ok || len(e) != len(x) {
			e = make([]F, len(x))
			f.e = e
		}
		if len(f.sum) != op.b {
			f.sum = make([]float64, op.b)
		}
		if len(f.mx) != op.b {
			f.mx = make([]float64, op.b)
		}
		softXentExp(x, e, f.mx, f.sum, c)
	}
	hot := f.hotOK && f.ready && sameSlice(f.tsrc, t) && len(f.hot) == op.b
	f.ready, f.src, f.tsrc = false, nil, nil // the buffer now becomes the gradient
	scale := g / float64(op.b)
	ks := F(scale)
	for i := range op.b {
		o := e[i*c : (i+1)*c]
		if hot {
			h := f.hot[i]
			if h < 0 {
				clear(o)
				continue
			}
			k := F(scale / f.sum[i])
			for j := range o {
				o[j] *= k
			}
			o[h] -= ks
			continue
		}
		tr := t[i*c : (i+1)*c]
		st := 0.0
		for _, v := range tr {
			st += float64(v)
		}
		k := F(st * scale / f.sum[i])
		for j, tv := range tr {
			o[j] = o[j]*k - tv*ks
		}
	}
	return e
}
