package data

import (
	"fmt"
	"math"
)

// Batch is a batch of B in-context episodes, each of T = N+1 positions:
// positions 0..N-1 are the context and position N (the last) is the query.
// All slices are flat and row-major.
type Batch struct {
	// B, T, D and C are the number of contexts, positions per context,
	// covariate dimension and number of categories.
	B, T, D, C int
	// X holds the covariates, shape (B, T, D).
	X []float64
	// Y holds the labels, shape (B, T), in 0..C-1. The query label is
	// included (it is known when training); it may be -1 where unknown.
	Y []int
	// P holds the true class probabilities p(c | x) of every position,
	// shape (B, T, C), or is nil where they are not known.
	P []float64

	// A regression batch (real-valued y, Appendix G) has DY > 0, C = 0 and
	// Y = P = nil, and holds its targets in R instead.
	//
	// DY is the dimension of the real-valued targets; 0 for classification.
	DY int
	// R holds the real-valued targets, shape (B, T, DY); the query's row is
	// the target, NaN where unknown.
	R []float64
	// Bayes holds, per context, the expected squared error (per target
	// entry) of the Bayes-optimal prediction of the query given the
	// context, shape (B), or is nil where it is not known; [Batch.Oracle]
	// averages it.
	Bayes []float64
}

// Regression reports whether b holds real-valued targets (DY > 0).
func (b *Batch) Regression() bool { return b != nil && b.DY > 0 }

// Validate checks that the sizes are positive with T >= 2 (at least one
// context pair), the slice lengths match them, the context labels lie in
// 0..C-1 and the query labels in -1..C-1, X is finite, and P, when not nil,
// holds finite non-negative rows summing to one (within 1e-9). It returns an
// error naming the first violation.
func (b *Batch) Validate() error {
	switch {
	case b == nil:
		return fmt.Errorf("data: Batch.Validate: batch is nil")
	case b.B <= 0:
		return fmt.Errorf("data: Batch.Validate: B = %d, want > 0", b.B)
	case b.T < 2:
		return fmt.Errorf("data: Batch.Validate: T = %d, want >= 2 (N = T-1 >= 1 context pairs)", b.T)
	case b.D <= 0:
		return fmt.Errorf("data: Batch.Validate: D = %d, want > 0", b.D)
	case b.DY < 0:
		return fmt.Errorf("data: Batch.Validate: DY = %d, want >= 0", b.DY)
	case b.DY > 0:
		return b.validateRegression()
	case b.C <= 0:
		return fmt.Errorf("data: Batch.Validate: C = %d, want > 0", b.C)
	case b.R != nil || b.Bayes != nil:
		return fmt.Errorf("data: Batch.Validate: R or Bayes set with DY = 0, want a regression batch (DY > 0) or neither")
	}
	nx, ny, np, err := b.sizes()
	switch {
	case err != nil:
		return fmt.Errorf("data: Batch.Validate: %w", err)
	case len(b.X) != nx:
		return fmt.Errorf("data: Batch.Validate: len(X) = %d, want B*T*D = %d", len(b.X), nx)
	case len(b.Y) != ny:
		return fmt.Errorf("data: Batch.Validate: len(Y) = %d, want B*T = %d", len(b.Y), ny)
	case b.P != nil && len(b.P) != np:
		return fmt.Errorf("data: Batch.Validate: len(P) = %d, want B*T*C = %d (or P = nil)", len(b.P), np)
	}
	for i, v := range b.X {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("data: Batch.Validate: X[%d] = %v, want a finite value", i, v)
		}
	}
	for i, v := range b.Y {
		lo := 0
		if i%b.T == b.T-1 {
			lo = -1 // the query label may be unknown
		}
		if v < lo || v >= b.C {
			return fmt.Errorf("data: Batch.Validate: Y[%d] = %d (context %d, position %d), want %d..%d", i, v, i/b.T, i%b.T, lo, b.C-1)
		}
	}
	for bt := 0; bt < b.B*b.T && b.P != nil; bt++ {
		sum := 0.0
		for c, v := range b.P[bt*b.C : (bt+1)*b.C] {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return fmt.Errorf("data: Batch.Validate: P[%d] = %v, want a finite value >= 0", bt*b.C+c, v)
			}
			sum += v
		}
		if math.Abs(sum-1) > 1e-9 {
			return fmt.Errorf("data: Batch.Validate: P of context %d, position %d sums to %v, want 1", bt/b.T, bt%b.T, sum)
		}
	}
	return nil
}

// sizes returns B*T*D, B*T and (when P is not nil) B*T*C, or an error
// naming the product that exceeds MaxElements (or would overflow an int).
func (b *Batch) sizes() (nx, ny, np int, err error) {
	if nx, err = checkedProduct("B*T*D", b.B, b.T, b.D); err != nil {
		return 0, 0, 0, err
	}
	if ny, err = checkedProduct("B*T", b.B, b.T); err != nil {
		return 0, 0, 0, err
	}
	if b.P == nil {
		return nx, ny, 0, nil
	}
	if np, err = checkedProduct("B*T*C", b.B, b.T, b.C); err != nil {
		return 0, 0, 0, err
	}
	return nx, ny, np, nil
}

// Oracle returns the mean over the B contexts of max_c p(c | x_query), the
// expected top-1 accuracy of the Bayes-optimal predictor that knows the true
// probabilities. It returns NaN if P is nil, the batch is empty or P does not
// hold B*T*C values; it assumes a batch that passes Validate.
//
// For a regression batch it returns the mean of Bayes, the expected squared
// error of the Bayes-optimal prediction of the query (NaN when Bayes is nil
// or does not hold B values).
func (b *Batch) Oracle() float64 {
	if b.Regression() {
		if b.B <= 0 || len(b.Bayes) != b.B {
			return math.NaN()
		}
		sum := 0.0
		for _, v := range b.Bayes {
			sum += v
		}
		return sum / float64(b.B)
	}
	if b == nil || b.P == nil || b.B <= 0 || b.T <= 0 || b.C <= 0 {
		return math.NaN()
	}
	if _, _, np, err := b.sizes(); err != nil || len(b.P) != np {
		return math.NaN()
	}
	sum := 0.0
	for i := 0; i < b.B; i++ {
		q := (i*b.T + b.T - 1) * b.C
		sum += maxOf(b.P[q : q+b.C])
	}
	return sum / float64(b.B)
}

// Slice returns contexts lo..hi-1 as a batch, for minibatching. The result
// shares its backing arrays with b (no copy): writes through one are seen by
// the other, but appending to its slices never overwrites b. It returns an
// error unless 0 <= lo < hi <= B.
func (b *Batch) Slice(lo, hi int) (*Batch, error) {
	if b == nil {
		return nil, fmt.Errorf("data: Batch.Slice: batch is nil")
	}
	if lo < 0 || hi > b.B || lo >= hi {
		return nil, fmt.Errorf("data: Batch.Slice: lo, hi = %d, %d, want 0 <= lo < hi <= B = %d", lo, hi, b.B)
	}
	if b.Regression() {
		return b.sliceRegression(lo, hi)
	}
	if nx, ny, np, err := b.sizes(); err != nil || len(b.X) != nx || len(b.Y) != ny || (b.P != nil && len(b.P) != np) {
		return nil, fmt.Errorf("data: Batch.Slice: slice lengths do not match B, T, D, C: %w", b.Validate())
	}
	s := &Batch{
		B: hi - lo, T: b.T, D: b.D, C: b.C,
		X: b.X[lo*b.T*b.D : hi*b.T*b.D : hi*b.T*b.D], // (hi-lo, T, D)
		Y: b.Y[lo*b.T : hi*b.T : hi*b.T],             // (hi-lo, T)
	}
	if b.P != nil {
		s.P = b.P[lo*b.T*b.C : hi*b.T*b.C : hi*b.T*b.C] // (hi-lo, T, C)
	}
	return s, nil
}

func maxOf(v []float64) float64 {
	m := math.Inf(-1)
	for _, a := range v {
		m = math.Max(m, a)
	}
	return m
}
