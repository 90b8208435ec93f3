package layers

import (
	"fmt"
	"unsafe"

	"gorgonia.org/tensor"
)

// Contexts is a set of contexts prepared once for the minibatches of an
// encoder ([Encoder.PrepareContexts]): every value checked finite and every
// label checked in range once, the values held in the encoder's dtype and
// the labels as small integers, in a copy of its own (a later change to the
// slices it was prepared from does not reach it). [Encoder.FeedPrepared]
// loads a minibatch of its contexts without checking or converting them
// again: what a training loop over shuffled minibatches of a fixed set
// (train.Runner.Fit) feeds each step.
//
// A float32 encoder's Contexts holds half the bytes of the float64 set it
// was prepared from, a float64 encoder's as many.
type Contexts struct {
	n, t, d, c int
	dtype      tensor.Dtype
	x32        []float32
	x64        []float64
	y          []int32 // labels; −1 for an unknown query label
}

// Len is the number of contexts.
func (s *Contexts) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// PrepareContexts checks a set of n contexts, x (n, T, d) and y (n, T)
// row-major as in Feed, and copies it into a [Contexts] for this encoder's
// minibatches. It returns Feed's errors, naming the context: a length
// mismatch, an empty set, a NaN or ±Inf in x, a label out of range (the
// query label may be −1, unknown).
func (e *Encoder) PrepareContexts(x []float64, y []int) (*Contexts, error) {
	if e == nil {
		return nil, fmt.Errorf("layers: encoder: PrepareContexts: the encoder is nil")
	}
	T, d, C := e.N+1, e.D, e.C
	if len(y)%T != 0 || len(x) != len(y)/T*T*d {
		return nil, fmt.Errorf("layers: encoder: PrepareContexts: x has %d values and y %d labels, want n*T*d and n*T for T = %d, d = %d", len(x), len(y), T, d)
	}
	n := len(y) / T
	if n == 0 {
		return nil, fmt.Errorf("layers: encoder: PrepareContexts: no contexts")
	}
	if err := e.checkContexts("PrepareContexts", x, y, n, nil); err != nil {
		return nil, err
	}
	s := &Contexts{n: n, t: T, d: d, c: C, dtype: e.X.Dtype(), y: make([]int32, len(y))}
	for i, l := range y {
		s.y[i] = int32(l)
	}
	switch s.dtype {
	case tensor.Float32:
		s.x32 = make([]float32, len(x))
		for i, v := range x {
			s.x32[i] = float32(v)
		}
	case tensor.Float64:
		s.x64 = append([]float64(nil), x...)
	default:
		return nil, fmt.Errorf("layers: encoder: PrepareContexts: the encoder's dtype is %v, want float32 or float64", s.dtype)
	}
	return s, nil
}

// FeedPrepared loads the minibatch of the contexts rows[k], k < B, of s:
// the same inputs as Feed of those contexts copied out one after another
// (float32 values rounded from the float64 set as Feed rounds them), with
// only the rows checked. s must have been prepared by an encoder of the same
// sizes (N, d, C) and dtype. FeedPrepared returns an error on a nil or
// mismatched s, a row count other than B or a row outside 0..s.Len()-1;
// the inputs are left unchanged then.
func (e *Encoder) FeedPrepared(s *Contexts, rows []int) error {
	if e == nil {
		return fmt.Errorf("layers: encoder: FeedPrepared: the encoder is nil")
	}
	B, T, d, C := e.Batch, e.N+1, e.D, e.C
	if s == nil {
		return fmt.Errorf("layers: encoder: FeedPrepared: the context set is nil")
	}
	if s.t != T || s.d != d || s.c != C || s.dtype != e.X.Dtype() {
		return fmt.Errorf("layers: encoder: FeedPrepared: the set was prepared for N = %d, d = %d, C = %d, %v; this encoder has N = %d, d = %d, C = %d, %v",
			s.t-1, s.d, s.c, s.dtype, e.N, d, C, e.X.Dtype())
	}
	if len(rows) != B {
		return fmt.Errorf("layers: encoder: FeedPrepared: %d rows, want B = %d", len(rows), B)
	}
	for k, c := range rows {
		if c < 0 || c >= s.n {
			return fmt.Errorf("layers: encoder: FeedPrepared: rows[%d] = %d, want 0..%d", k, c, s.n-1)
		}
	}
	xv, labels, target, err := e.inputs()
	if err != nil {
		return err
	}
	if s.x32 != nil {
		feedPrepared(s, s.x32, xv.f32, labels, target, rows)
	} else {
		feedPrepared(s, s.x64, xv.f64, labels, target, rows)
	}
	return nil
}

// feedPrepared writes the contexts rows[k] of s (values xs) into the
// minibatch inputs x, labels and target. In a shuffled minibatch each
// context is a separate stretch of a large set, mostly not in cache: it
// asks for the values and labels of the context prefetchAhead rows on (into
// L2) while it copies one, so the misses overlap (the labels, 4·T bytes,
// are a miss of their own that no hardware prefetcher sees coming).
func feedPrepared[F float32 | float64](s *Contexts, xs, x []F, labels []int, target oneHot, rows []int) {
	T, C := s.t, s.c
	size := T * s.d
	var z F
	xBytes := size * int(unsafe.Sizeof(z))
	prefetch := func(c int) {
		prefetchSpan(unsafe.Pointer(&xs[c*size]), xBytes)
		prefetchSpan(unsafe.Pointer(&s.y[c*T]), 4*T)
	}
	for _, c := range rows[:min(prefetchAhead, len(rows))] {
		prefetch(c)
	}
	target.clear()
	for k, c := range rows {
		if k+prefetchAhead < len(rows) {
			prefetch(rows[k+prefetchAhead])
		}
		copy(x[k*size:(k+1)*size], xs[c*size:(c+1)*size])
		src := s.y[c*T : (c+1)*T]
		lab := labels[k*T : (k+1)*T-1]
		for t := range lab {
			lab[t] = int(src[t])
		}
		labels[(k+1)*T-1] = -1     // the query's token carries no label
		if l := src[T-1]; l >= 0 { // else an unknown query label
			target.set(k*C + int(l))
		}
	}
}

// prefetchAhead is how many contexts on feedPrepared prefetches.
const prefetchAhead = 16
