package data

import (
	"fmt"
	"math"
)

// validateRegression checks a regression batch (DY > 0): C = 0, Y and P
// nil, len(X) = B*T*D, len(R) = B*T*DY with finite context targets (the
// query's may be NaN, unknown, never ±Inf), X finite, and Bayes nil or B
// finite values >= 0.
func (b *Batch) validateRegression() error {
	switch {
	case b.C != 0:
		return fmt.Errorf("data: Batch.Validate: C = %d with DY = %d, want C = 0 for a regression batch", b.C, b.DY)
	case b.Y != nil || b.P != nil:
		return fmt.Errorf("data: Batch.Validate: Y or P set in a regression batch (DY = %d), want nil", b.DY)
	}
	nx, err := checkedProduct("B*T*D", b.B, b.T, b.D)
	if err != nil {
		return fmt.Errorf("data: Batch.Validate: %w", err)
	}
	nr, err := checkedProduct("B*T*DY", b.B, b.T, b.DY)
	if err != nil {
		return fmt.Errorf("data: Batch.Validate: %w", err)
	}
	switch {
	case len(b.X) != nx:
		return fmt.Errorf("data: Batch.Validate: len(X) = %d, want B*T*D = %d", len(b.X), nx)
	case len(b.R) != nr:
		return fmt.Errorf("data: Batch.Validate: len(R) = %d, want B*T*DY = %d", len(b.R), nr)
	case b.Bayes != nil && len(b.Bayes) != b.B:
		return fmt.Errorf("data: Batch.Validate: len(Bayes) = %d, want B = %d (or Bayes = nil)", len(b.Bayes), b.B)
	}
	for i, v := range b.X {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("data: Batch.Validate: X[%d] = %v, want a finite value", i, v)
		}
	}
	for i, v := range b.R {
		query := (i/b.DY)%b.T == b.T-1
		if math.IsInf(v, 0) || (math.IsNaN(v) && !query) {
			return fmt.Errorf("data: Batch.Validate: R[%d] = %v (context %d, position %d), want a finite value%s",
				i, v, i/(b.T*b.DY), (i/b.DY)%b.T, map[bool]string{true: " or NaN at the query"}[query])
		}
	}
	for i, v := range b.Bayes {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("data: Batch.Validate: Bayes[%d] = %v, want a finite value >= 0", i, v)
		}
	}
	return nil
}

// sliceRegression is Slice for a regression batch.
func (b *Batch) sliceRegression(lo, hi int) (*Batch, error) {
	if err := b.validateRegression(); err != nil {
		return nil, fmt.Errorf("data: Batch.Slice: %w", err)
	}
	s := &Batch{
		B: hi - lo, T: b.T, D: b.D, DY: b.DY,
		X: b.X[lo*b.T*b.D : hi*b.T*b.D : hi*b.T*b.D],    // (hi-lo, T, D)
		R: b.R[lo*b.T*b.DY : hi*b.T*b.DY : hi*b.T*b.DY], // (hi-lo, T, DY)
	}
	if b.Bayes != nil {
		s.Bayes = b.Bayes[lo:hi:hi]
	}
	return s, nil
}

// QueryTargets returns the query's targets of a regression batch, shape
// (B, DY), a fresh slice.
func (b *Batch) QueryTargets() []float64 {
	if !b.Regression() {
		return nil
	}
	out := make([]float64, 0, b.B*b.DY)
	for i := 0; i < b.B; i++ {
		q := (i*b.T + b.T - 1) * b.DY
		out = append(out, b.R[q:q+b.DY]...)
	}
	return out
}
