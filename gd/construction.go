package gd

import (
	"fmt"
	"math"

	"github.com/gdattn/gdattn/internal/bounds"
	"github.com/gdattn/gdattn/layers"
)

// Matrix is a dense row-major matrix: element (r, c) at Data[r*Cols+c]. It
// is layers.Matrix (an alias), the type package tf takes the construction
// in.
type Matrix = layers.Matrix

// newMatrix is a zero r×c matrix; the sizes come from a validated config
// (on an error the matrix holds no data, which every consumer refuses).
func newMatrix(r, c int) Matrix {
	m, err := layers.NewMatrix(r, c)
	if err != nil {
		return Matrix{Rows: r, Cols: c}
	}
	return m
}

// HeadMatrices are the W_Q, W_K, W_V (D×D) and P (D×D) of one attention head
// in gdattn's row-vector convention: a head maps tokens z (rows) to
// Σ_i κ(z_j W_Q, z_i W_K) z_i W_V P. They are the transposes of the paper's
// column-convention matrices (Appendices C and D). HeadMatrices is
// layers.HeadMatrices (an alias).
type HeadMatrices = layers.HeadMatrices

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
		h.WQ.Set(r, r, 1)
		h.WK.Set(r, r, 1)
	}
	for r := 0; r < dPrime; r++ {
		h.WV.Set(d+r, d+r, alpha/float64(n))
		h.P.Set(d+r, d+dPrime+r, 1)
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
	// Cross is the cross-attention layer: W_Q (D×d') reads f; W_K and W_V
	// (d'×d') are the identity on the columns of W_e; P (d'×D) writes
	// E(w_e|f) into the E block.
	Cross layers.CrossMatrices
}

// Block returns b as the matrices of a transformer block: head 0 the update
// head, head 1 the erase head, then the cross-attention layer.
func (b BlockMatrices) Block() layers.BlockMatrices {
	cross := b.Cross
	return layers.BlockMatrices{Heads: []layers.HeadMatrices{b.Update, b.Erase}, Cross: &cross}
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
		Update: HeadMatrices{WQ: newMatrix(D, D), WK: newMatrix(D, D), WV: newMatrix(D, D), P: newMatrix(D, D)},
		Erase:  HeadMatrices{WQ: newMatrix(D, D), WK: newMatrix(D, D), WV: newMatrix(D, D), P: newMatrix(D, D)},
		Cross: layers.CrossMatrices{WQ: newMatrix(D, dPrime), WK: newMatrix(dPrime, dPrime),
			WV: newMatrix(dPrime, dPrime), P: newMatrix(dPrime, D)},
	}
	for r := 0; r < d; r++ {
		b.Update.WQ.Set(r, r, 1)
		b.Update.WK.Set(r, r, 1)
		b.Erase.WQ.Set(r, r, lambda)
		b.Erase.WK.Set(r, r, lambda)
	}
	for r := 0; r < dPrime; r++ {
		b.Update.WV.Set(offY+r, offY+r, step)
		b.Update.WV.Set(offE+r, offY+r, -step)
		b.Update.P.Set(offY+r, offF+r, 1)
		b.Erase.WV.Set(offE+r, offE+r, 1)
		b.Erase.P.Set(offE+r, offE+r, -1)
		b.Cross.WQ.Set(offF+r, r, 1)
		b.Cross.WK.Set(r, r, 1)
		b.Cross.WV.Set(r, r, 1)
		b.Cross.P.Set(r, offE+r, 1)
	}
	return b, nil
}

// Construction returns the GD construction with step α, context size n and
// erase scale λ as the starting point of an unconstrained model (package
// tf, Config.Init): with form OneStep one block whose single head is
// OneStepMatrices (steps must be 1); with Interleaved, steps blocks of
// InterleavedMatrices (head 0 the update head, head 1 the erase head, and
// the cross-attention layer); and the readout R selecting the f block. The
// model then computes exactly what the GD model computes with the same
// kernel, provided its erase head (head 1) uses a kernel that tends to the
// Kronecker delta on λ-scaled inputs, such as layers.RBF(1) (tf.Config
// HeadKernels).
func Construction(form Form, steps, d, dPrime, n int, alpha, lambda float64) (*layers.Construction, error) {
	if steps <= 0 || (form == OneStep && steps != 1) {
		return nil, fmt.Errorf("gd: construction: steps = %d, want 1 for the one-step form and > 0 otherwise", steps)
	}
	if err := bounds.Units("steps", steps); err != nil {
		return nil, fmt.Errorf("gd: construction: %w", err)
	}
	if err := checkConstruction(d, dPrime, n, alpha, lambda); err != nil {
		return nil, err
	}
	offF := d + 2*dPrime
	c := &layers.Construction{}
	switch form {
	case OneStep:
		h, err := OneStepMatrices(d, dPrime, n, alpha)
		if err != nil {
			return nil, err
		}
		c.Blocks = []layers.BlockMatrices{{Heads: []layers.HeadMatrices{h}}}
		offF = d + dPrime
	case Interleaved:
		for k := 0; k < steps; k++ {
			b, err := InterleavedMatrices(d, dPrime, n, alpha, lambda)
			if err != nil {
				return nil, err
			}
			c.Blocks = append(c.Blocks, b.Block())
		}
	default:
		return nil, fmt.Errorf("gd: construction: unknown form %d", int(form))
	}
	c.Readout = newMatrix(form.TokenDim(d, dPrime), dPrime)
	for r := 0; r < dPrime; r++ {
		c.Readout.Set(offF+r, r, 1)
	}
	return c, nil
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
	if err := bounds.Elements(bounds.Term{What: "d", Dims: []int{d}}, bounds.Term{What: "dPrime", Dims: []int{dPrime}},
		bounds.Term{What: "(d+3·dPrime)² (a matrix)", Dims: []int{d + 3*dPrime, d + 3*dPrime}}); err != nil {
		return fmt.Errorf("gd: construction: %w", err)
	}
	return nil
}
