package ops

import (
	"fmt"
	"hash"
	"math"
	"runtime"
	"sync"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// SparseCrossEntropy returns the mean negative log-likelihood
//
//	L = −(1/n) Σ_{i: labels[i] ≥ 0} log softmax(logits[i, :])_{labels[i]}
//
// of integer labels under logits (N, C), as one [SparseCrossEntropyOp]
// node, where n counts the labels that are not −1 (−1 marks a position not
// scored, such as padding; with none scored L = 0). labels is an int node of
// shape (N); a label outside [−1, C) fails the run with an error. The
// gradient w.r.t. the logits is (softmax − onehot)/n, computed stably (each
// row's maximum is subtracted). losses.SparseSoftmaxCrossEntropy is the
// loss built on it.
func SparseCrossEntropy(logits, labels *G.Node) (*G.Node, error) {
	return SparseCrossEntropyWith(logits, labels, SparseCrossEntropyOptions{})
}

// SparseCrossEntropyOverwrite is [SparseCrossEntropy] for a caller that
// never reads the logits' value after a run (a training loop): when the
// logits are a [TiedLogits] output that no other node reads, the op writes
// its softmax and then its gradient over them instead of into a buffer of
// its own, so a language model's step keeps one (N, C) buffer instead of
// two. The logits' value then holds the loss's gradient after a run with
// gradients (the softmax after one without). Loss and gradients are bit
// for bit SparseCrossEntropy's.
func SparseCrossEntropyOverwrite(logits, labels *G.Node) (*G.Node, error) {
	return SparseCrossEntropyWith(logits, labels, SparseCrossEntropyOptions{Overwrite: true})
}

// SparseCrossEntropyOptions are the options of [SparseCrossEntropyWith].
// The zero value is [SparseCrossEntropy].
type SparseCrossEntropyOptions struct {
	// Overwrite lets the op write its softmax and gradient over the logits
	// (see [SparseCrossEntropyOverwrite]).
	Overwrite bool
	// Float32 computes the softmax of float32 logits in float32
	// arithmetic, as PyTorch's CPU cross_entropy does for float32 logits:
	// each row's maximum subtracted in float32, the exponentials by a
	// single-precision polynomial (eight per AVX2 instruction; a few ulp,
	// 0 below exp(−87.3)), their sum in float64. The default computes the
	// exponentials in float64 (Exp32) from x − max taken in float64, so
	// that they round alike on every machine; Float32 changes the loss and
	// the gradient in their last bits (relative differences of order 1e-6)
	// and is faster. The forward op then also writes the gradient for
	// dL = 1, which the backward op returns as it is (scaled by dL
	// otherwise). The same bits with or without AVX2 (the portable loops
	// perform the same operations). float64 logits ignore it.
	Float32 bool
}

// SparseCrossEntropyWith is [SparseCrossEntropy] with options; the zero
// options are SparseCrossEntropy itself.
func SparseCrossEntropyWith(logits, labels *G.Node, o SparseCrossEntropyOptions) (*G.Node, error) {
	if logits == nil || labels == nil {
		return nil, fmt.Errorf("ops: sparse cross-entropy: nil input")
	}
	if err := checkFloat(logits.Dtype()); err != nil || logits.Shape().Dims() != 2 {
		return nil, fmt.Errorf("ops: sparse cross-entropy: logits %q (%v %v) must be a float (N, C) matrix", logits.Name(), logits.Dtype(), logits.Shape())
	}
	if labels.Dtype() != tensor.Int || !labels.Shape().Eq(tensor.Shape{logits.Shape()[0]}) {
		return nil, fmt.Errorf("ops: sparse cross-entropy: labels %q (%v %v) must be int of shape (%d)", labels.Name(), labels.Dtype(), labels.Shape(), logits.Shape()[0])
	}
	if labels.Graph() != logits.Graph() {
		return nil, fmt.Errorf("ops: sparse cross-entropy: logits and labels belong to different graphs")
	}
	op := &SparseCrossEntropyOp{n: logits.Shape()[0], c: logits.Shape()[1], f32: o.Float32 && logits.Dtype() == tensor.Float32}
	if o.Overwrite {
		op.logits = logits
	}
	return G.ApplyOp(op, logits, labels)
}

// SparseCrossEntropyOp is (logits (N, C), labels (N)) -> mean NLL (scalar)
// ([SparseCrossEntropy]); with Backward it is its gradient op, (logits,
// labels, dL) -> dlogits (N, C).
//
// The forward op computes each row's softmax once and keeps it in a buffer
// it owns (reused from run to run): the exponentials exp(x − max) in prob
// and each row's 1/Σ in inv. The backward op of the same run turns that
// buffer into the gradient in place, (softmax − onehot)·dL/n, so a training
// step computes one exponential per logit and allocates nothing of size
// (N, C). The gradient value therefore aliases the forward buffer: it is
// valid until the op runs again, which is all a tape machine needs (the
// gradient is consumed within the run that makes it). When the forward
// buffer does not hold this run's logits (a backward op run on its own), the
// backward op recomputes the softmax.
//
// With the Float32 option (float32 logits) the forward op writes the
// gradient for dL = 1 into that buffer instead of the exponentials, row by
// row while each row is in cache, and the backward op returns it (scaled by
// dL unless dL is 1): see [SparseCrossEntropyOptions].
//
// Made by [SparseCrossEntropyOverwrite], when the logits are the output of
// a [TiedLogitsOp] (a buffer that op owns and rewrites on every run) and
// this op's forward and backward nodes are their only consumers in the
// graph, the forward op writes the exponentials over the logits themselves
// instead of into a buffer of its own: a training step of a language model
// then keeps one (N, C) buffer (logits, then softmax, then gradient)
// instead of two.
type SparseCrossEntropyOp struct {
	n, c   int
	back   bool
	f32    bool                  // the Float32 option, float32 logits
	fwd    *SparseCrossEntropyOp // the forward op, for a backward op
	logits *G.Node               // the logits node, for a forward op made by SparseCrossEntropyOverwrite

	// Forward op state, from its last Do.
	prob  any       // []float32 or []float64 (N·C): exp(x − row max)
	inv   []float64 // 1/Σ_j exp(x_j − row max) of each row
	ready bool      // prob holds the softmax of the last forward run, not yet consumed
	grad  bool      // with f32: prob holds the gradient for dL = 1 instead of the exponentials
	src   any       // the logits slice prob was computed from
	// dirty is the logits slice the last forward run overwrote (in place,
	// see above), whose softmax therefore cannot be recomputed; nil if none.
	dirty any
}

// overwritesLogits reports whether the forward op may write the softmax
// over its logits: they come from a TiedLogitsOp (forward) and no node
// other than this op's forward and backward nodes reads them.
func (op *SparseCrossEntropyOp) overwritesLogits() bool {
	x := op.logits
	if x == nil || x.Graph() == nil {
		return false
	}
	if t, ok := x.Op().(*TiedLogitsOp); !ok || t.mode != TiedForward {
		return false
	}
	users := x.Graph().To(x.ID())
	for users.Next() {
		u, ok := users.Node().(*G.Node)
		if !ok {
			return false
		}
		xo, ok := u.Op().(*SparseCrossEntropyOp)
		if !ok || (xo != op && xo.fwd != op) {
			return false
		}
	}
	return true
}

// Dims are the logits' shape (N, C).
func (op *SparseCrossEntropyOp) Dims() (n, c int) { return op.n, op.c }

// Float32 reports whether the op computes the softmax of its float32
// logits in float32 arithmetic (SparseCrossEntropyOptions.Float32; false
// for float64 logits).
func (op *SparseCrossEntropyOp) Float32() bool { return op.f32 }

// Backward reports whether the op is the gradient op.
func (op *SparseCrossEntropyOp) Backward() bool { return op.back }

func (op *SparseCrossEntropyOp) Arity() int {
	if op.back {
		return 3
	}
	return 2
}
func (op *SparseCrossEntropyOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	m := &G.TensorType{Dims: 2, Of: a}
	l := &G.TensorType{Dims: 1, Of: tensor.Int}
	if op.back {
		return hm.NewFnType(m, l, a, m)
	}
	return hm.NewFnType(m, l, a)
}
func (op *SparseCrossEntropyOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if op.back {
		return tensor.Shape{op.n, op.c}, nil
	}
	return tensor.ScalarShape(), nil
}
func (op *SparseCrossEntropyOp) ReturnsPtr() bool     { return false }
func (op *SparseCrossEntropyOp) CallsExtern() bool    { return false }
func (op *SparseCrossEntropyOp) OverwritesInput() int { return -1 }
func (op *SparseCrossEntropyOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.sparsexent (%d,%d) back %v", op.n, op.c, op.back)
	if op.f32 {
		fmt.Fprint(h, " float32")
	}
}
func (op *SparseCrossEntropyOp) Hashcode() uint32 { return hashOf(op) }
func (op *SparseCrossEntropyOp) String() string {
	if op.back {
		return "SparseXentGrad"
	}
	return "SparseXent"
}
func (op *SparseCrossEntropyOp) DiffWRT(int) []bool {
	if op.back {
		return []bool{false, false, false}
	}
	return []bool{true, false}
}
func (op *SparseCrossEntropyOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if op.back {
		return nil, fmt.Errorf("ops: the sparse cross-entropy has no second derivative (unsupported)")
	}
	g, err := G.ApplyOp(&SparseCrossEntropyOp{n: op.n, c: op.c, back: true, f32: op.f32, fwd: op}, inputs[0], inputs[1], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{g, nil}, nil
}

func (op *SparseCrossEntropyOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != op.Arity() {
		return nil, fmt.Errorf("ops: sparse cross-entropy: %d inputs, want %d", len(vals), op.Arity())
	}
	labels, ok := denseData(vals[1]).([]int)
	if !ok || len(labels) != op.n {
		return nil, fmt.Errorf("ops: sparse cross-entropy: labels %T, want %d ints", vals[1].Data(), op.n)
	}
	scored := 0
	for i, l := range labels {
		if l < -1 || l >= op.c {
			return nil, fmt.Errorf("ops: sparse cross-entropy: label %d at position %d is outside [-1, %d)", l, i, op.c)
		}
		if l >= 0 {
			scored++
		}
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
		if !op.back {
			return G.NewF64(xentLoss(op, x, labels, scored)), nil
		}
		gr, err := xentGrad(op, x, labels, scored, g)
		if err != nil {
			return nil, err
		}
		return tensor.New(tensor.WithShape(op.n, op.c), tensor.WithBacking(gr)), nil
	case []float32:
		if op.f32 {
			if !op.back {
				return G.NewF32(float32(xentLoss32(op, x, labels, scored))), nil
			}
			gr, err := xentGrad32(op, x, labels, scored, g)
			if err != nil {
				return nil, err
			}
			return tensor.New(tensor.WithShape(op.n, op.c), tensor.WithBacking(gr)), nil
		}
		if !op.back {
			return G.NewF32(float32(xentLoss(op, x, labels, scored))), nil
		}
		gr, err := xentGrad(op, x, labels, scored, g)
		if err != nil {
			return nil, err
		}
		return tensor.New(tensor.WithShape(op.n, op.c), tensor.WithBacking(gr)), nil
	}
	return nil, fmt.Errorf("ops: sparse cross-entropy: unsupported logits %T", vals[0].Data())
}

func scalarOf(v G.Value) (float64, error) {
	switch x := v.Data().(type) {
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	case []float64:
		if len(x) == 1 {
			return x[0], nil
		}
	case []float32:
		if len(x) == 1 {
			return float64(x[0]), nil
		}
	}
	return 0, fmt.Errorf("ops: sparse cross-entropy: gradient %T is not a scalar", v.Data())
}

// parallelRows calls f on two halves of [0, n) concurrently (the rows of a
// (N, C) softmax are independent) when more than one thread may run Go
// code, or once for small n or GOMAXPROCS = 1.
func parallelRows(n, c int, f func(lo, hi int)) {
	if n < 2 || n*c < 1<<16 || runtime.GOMAXPROCS(0) < 2 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	mid := n / 2
	wg.Add(1)
	go func() { defer wg.Done(); f(mid, n) }()
	f(0, mid)
	wg.Wait()
}

// rowExp writes e[j] = exp(row[j] − max(row)) and returns max(row) and
// Σ_j e[j]. float32 rows use Exp32 (exact to 1e-9, for results
// stored as float32), float64 rows math.Exp.
func rowExp[F float32 | float64](row, e []F) (float64, float64) {
	var m F
	if r, ok := any(row).([]float32); ok {
		m = F(maxScaledF32(r, 1)) // the loop below's maximum, eight at a time
	} else {
		m = row[0]
		for _, v := range row[1:] {
			if v > m {
				m = v
			}
		}
	}
	e = e[:len(row)]
	s := 0.0
	switch r := any(row).(type) {
	case []float32:
		e32 := any(e).([]float32)
		m64 := float64(m)
		var s0, s1 float64 // two sums: independent additions
		j := 0
		if haveExpAVX2 && !haveExpAVX512 && len(r) >= 4 {
			// Four exponentials per AVX2 instruction, summed as they are
			// computed, the two chains below side by side in one register
			// (expChunk32S2: the same operations, the same bits).
			sums := [2]float64{}
			j = expChunk32S2(&e32[0], &r[0], len(r)&^3, 1, m64, &sums)
			s0, s1 = sums[0], sums[1]
		} else if haveExpAVX2 {
			// Four exponentials per AVX2 instruction (expChunk32: Exp32's
			// operations, the same bits), in place when e is r, summed here
			// as the loop below sums them: even indices into s0, odd into
			// s1 (chunks start at multiples of 4).
			var buf [256]float64
			for j+4 <= len(r) {
				n := min(len(buf), (len(r)-j)&^3)
				k := expChunk32E(&e32[j], &r[j], n, 1, m64, &buf[0])
				for q := 0; q < k; q += 2 {
					s0 += buf[q]
					s1 += buf[q+1]
				}
				j += k
				if k < n {
					break // a value outside Exp32's fast range: the rest below
				}
			}
		}
		for ; j+1 < len(r); j += 2 {
			a, b := Exp32(float64(r[j])-m64), Exp32(float64(r[j+1])-m64)
			e32[j], e32[j+1] = float32(a), float32(b)
			s0 += a
			s1 += b
		}
		if j < len(r) {
			a := Exp32(float64(r[j]) - m64)
			e32[j] = float32(a)
			s0 += a
		}
		s = s0 + s1
	case []float64:
		e64 := any(e).([]float64)
		m64 := float64(m)
		for j, v := range r {
			a := math.Exp(v - m64)
			e64[j] = a
			s += a
		}
	}
	return float64(m), s
}

// xentLoss computes every row's softmax into op.prob (the logits
// themselves when overwritesLogits) and op.inv and returns the mean NLL of
// the scored rows.
func xentLoss[F float32 | float64](op *SparseCrossEntropyOp, x []F, labels []int, scored int) float64 {
	c := op.c
	inPlace := op.overwritesLogits()
	var prob []F
	if inPlace {
		prob = x // the op's own buffer, if any, is kept for a backward run on other logits
	} else {
		var ok bool
		if prob, ok = op.prob.([]F); !ok || len(prob) != len(x) {
			prob = make([]F, len(x))
			op.prob = prob
		}
	}
	if len(op.inv) != op.n {
		op.inv = make([]float64, op.n)
	}
	nll := make([]float64, op.n) // log Σ exp − x_label of each scored row
	parallelRows(op.n, c, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			var xl F // read before the row is overwritten
			if l := labels[i]; l >= 0 {
				xl = x[i*c+l]
			}
			m, s := rowExp(x[i*c:(i+1)*c], prob[i*c:(i+1)*c])
			op.inv[i] = 1 / s
			nll[i] = m + math.Log(s) - float64(xl)
		}
	})
	op.ready, op.src, op.dirty = true, x, nil
	if inPlace {
		op.dirty = x
	}
	return scoredMean(nll, labels, scored)
}

// scoredMean is the mean of nll over the rows whose label is not −1 (scored
// of them), summed in row order; 0 when none is scored.
func scoredMean(nll []float64, labels []int, scored int) float64 {
	if scored == 0 {
		return 0
	}
	total := 0.0
	for i, l := range labels {
		if l >= 0 {
			total += nll[i]
		}
	}
	return total / float64(scored)
}

// xentGrad is (softmax(x) − onehot(labels))·g/scored for the scored rows
// (0 for the others), written in place into the forward op's softmax
// buffer when that holds the softmax of x (see SparseCrossEntropyOp).
func xentGrad[F float32 | float64](op *SparseCrossEntropyOp, x []F, labels []int, scored int, g float64) ([]F, error) {
	c, f := op.c, op.fwd
	var prob []F
	switch {
	case f.ready && sameSlice(f.dirty, x) && sameSlice(f.src, x) && len(f.inv) == op.n:
		prob = x // the forward op wrote this run's softmax over the logits
	case sameSlice(f.dirty, x):
		return nil, fmt.Errorf("ops: sparse cross-entropy: the logits were overwritten by the forward op's softmax and then by its gradient (run the forward op again)")
	default:
		var ok bool
		prob, ok = f.prob.([]F)
		if f.dirty != nil || !ok || !f.ready || len(prob) != len(x) || len(f.inv) != op.n || !sameSlice(f.src, x) {
			// No softmax of these logits at hand: compute it, into the
			// forward op's own buffer.
			if !ok || len(prob) != len(x) {
				prob = make([]F, len(x))
				f.prob = prob
			}
			if len(f.inv) != op.n {
				f.inv = make([]float64, op.n)
			}
			parallelRows(op.n, c, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					_, s := rowExp(x[i*c:(i+1)*c], prob[i*c:(i+1)*c])
					f.inv[i] = 1 / s
				}
			})
		}
	}
	f.ready, f.src = false, nil // the buffer now becomes the gradient
	if scored == 0 {
		clear(prob)
		return prob, nil
	}
	scale := g / float64(scored)
	parallelRows(op.n, c, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			o := prob[i*c : (i+1)*c]
			l := labels[i]
			if l < 0 {
				clear(o)
				continue
			}
			k := F(f.inv[i] * scale)
			for j := range o {
				o[j] *= k
			}
			o[l] -= F(scale)
		}
	})
	return prob, nil
}

// sameSlice reports whether a (a []float32 or []float64) starts at the same
// element as b and has its length.
func sameSlice[F float32 | float64](a any, b []F) bool {
	s, ok := a.([]F)
	return ok && len(s) == len(b) && len(s) > 0 && &s[0] == &b[0]
}
