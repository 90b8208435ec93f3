package gd

import (
	"fmt"
	"math"
)

// Matrix is a dense row-major matrix: element (r, c) at Data[r*Cols+c].
type Matrix struct {
	Rows, Cols int
	Data       []float64
}

// At returns element (r, c).
func (m Matrix) At(r, c int) float64 { return m.Data[r*m.Cols+c] }

func newMatrix(r, c int) Matrix { return Matrix{Rows: r, Cols: c, Data: make([]float64, r*c)} }

func (m Matrix) set(r, c int, v float64) { m.Data[r*m.Cols+c] = v }

// HeadMatrices are the W_Q, W_K, W_V (D×D) and P (D×D) of one attention head
// in gdattn's row-vector convention: a head maps tokens z (rows) to
// Σ_i κ(z_j W_Q, z_i W_K) z_i W_V P. They are the transposes of the paper's
// column-convention matrices (Appendices C and D).
type HeadMatrices struct {
	WQ, WK, WV, P Matrix
}

// OneStepMatrices returns the single-step construction of Appendix C for
// tokens (x, w_{e,y} − w̄_e, f) of width D = d + 2d': W_Q = W_K select x,
// W_V = (α/N)·(select the label block), P moves it into the f block. An
// unconstrained model (package tf) may start from these matrices; with the
// kernel of the GD model it then reproduces f_1 exactly.
func OneStepMatrices(d, dPrime, n int, alpha float64) (HeadMatrices, error) {
	if err := checkConstruction(d, dPrime, n, alpha, 1); err != nil {
		return HeadMatrices{}, err
	}
	D := d + 2*dPrime
	h := HeadMatrices{WQ: newMatrix(D, D), WK: newMatrix(D, D), WV: newMatrix(D, D), P: newMatrix(D, D)}
	for r := 0; r < d; r++ {
		h.WQ.set(r, r, 1)
		h.WK.set(r, r, 1)
	}
	for r := 0; r < dPrime; r++ {
		h.WV.set(d+r, d+r, alpha/float64(n))
		h.P.set(d+r, d+dPrime+r, 1)
	}
	return h, nil
}

// BlockMatrices is one block of the interleaved construction of Section 3 /
// Appendix D for tokens (x, w_{e,y}, E, f) of width D = d + 3d'.
type BlockMatrices struct {
	// Update is self-attention head 1: W_Q = W_K select x; W_V maps
	// (w_{e,y} − E)·α/N into the label block; P moves it into the f block.
	Update HeadMatrices
	// Erase is self-attention head 2: W_Q = W_K = λ·(select x); W_V selects
	// E; P = −I on the E block. With the Kronecker-delta kernel it erases E
	// exactly; with an RBF kernel the error vanishes as λ grows.
	Erase HeadMatrices
	// CrossWQ (D×d') reads f; CrossWK and CrossWV (d'×d') are the identity
	// on the columns of W_e; CrossP (d'×D) writes E(w_e|f) into the E block.
	CrossWQ, CrossWK, CrossWV, CrossP Matrix
}

// InterleavedMatrices returns the matrices of one block of the exact
// multi-step construction with step α, context size n and erase scale λ.
func InterleavedMatrices(d, dPrime, n int, alpha, lambda float64) (BlockMatrices, error) {
	if err := checkConstruction(d, dPrime, n, alpha, lambda); err != nil {
		return BlockMatrices{}, err
	}
	D := d + 3*dPrime
	offY, offE, offF := d, d+dPrime, d+2*dPrime
	step := alpha / float64(n)
	b := BlockMatrices{
		Update:  HeadMatrices{WQ: newMatrix(D, D), WK: newMatrix(D, D), WV: newMatrix(D, D), P: newMatrix(D, D)},
		Erase:   HeadMatrices{WQ: newMatrix(D, D), WK: newMatrix(D, D), WV: newMatrix(D, D), P: newMatrix(D, D)},
		CrossWQ: newMatrix(D, dPrime), CrossWK: newMatrix(dPrime, dPrime),
		CrossWV: newMatrix(dPrime, dPrime), CrossP: newMatrix(dPrime, D),
	}
	for r := 0; r < d; r++ {
		b.Update.WQ.set(r, r, 1)
		b.Update.WK.set(r, r, 1)
		b.Erase.WQ.set(r, r, lambda)
		b.Erase.WK.set(r, r, lambda)
	}
	for r := 0; r < dPrime; r++ {
		b.Update.WV.set(offY+r, offY+r, step)
		b.Update.WV.set(offE+r, offY+r, -step)
		b.Update.P.set(offY+r, offF+r, 1)
		b.Erase.WV.set(offE+r, offE+r, 1)
		b.Erase.P.set(offE+r, offE+r, -1)
		b.CrossWQ.set(offF+r, r, 1)
		b.CrossWK.set(r, r, 1)
		b.CrossWV.set(r, r, 1)
		b.CrossP.set(r, offE+r, 1)
	}
	return b, nil
}

func checkConstruction(d, dPrime, n int, alpha, lambda float64) error {
	switch {
	case d <= 0:
		return fmt.Errorf("gd: construction: d = %d, want > 0", d)
	case dPrime <= 0:
		return fmt.Errorf("gd: construction: dPrime = %d, want > 0", dPrime)
	case n <= 0:
		return fmt.Errorf("gd: construction: n = %d, want at least one context example", n)
	case math.IsNaN(alpha) || math.IsInf(alpha, 0):
		return fmt.Errorf("gd: construction: alpha = %v, want a finite value", alpha)
	case !(lambda > 0) || math.IsInf(lambda, 0):
		return fmt.Errorf("gd: construction: lambda = %v, want a finite positive value", lambda)
	}
	return nil
}
