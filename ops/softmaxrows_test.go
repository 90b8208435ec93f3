package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKernelRowsBits checks kernelRows (float32 softmax rows on
// softmaxRows32) against kernelRow row by row, bit for bit: row widths
// with and without a tail of one to seven, several rows at once, g of
// either sign and zero, and rows with +Inf, −Inf, NaN, huge and tiny
// scores (some of which the kernel leaves to kernelRow).
func TestKernelRowsBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	for _, n := range []int{1, 2, 7, 8, 9, 10, 15, 16, 17, 24, 25, 33} {
		for _, rows := range []int{1, 3, 11} {
			for _, g := range []float32{1, 0.37, 4, -1, 0} {
				for trial := 0; trial < 4; trial++ {
					s := make([]float32, rows*n)
					for i := range s {
						s[i] = float32(rng.NormFloat64() * 3)
					}
					if trial > 0 {
						// Special values in some rows.
						specials := []float32{inf, -inf, nan, 1e30, -1e30, 200, -200, 0}
						for r := 0; r < rows; r += 2 {
							s[r*n+rng.IntN(n)] = specials[rng.IntN(len(specials))]
						}
					}
					if trial == 3 {
						for i := 0; i < n; i++ {
							s[i] = -inf // a row of −Inf (NaN weights)
						}
					}
					got := make([]float32, rows*n)
					want := make([]float32, rows*n)
					kernelRows(KindSoftmax, g, s, got, rows, n)
					for r := 0; r < rows; r++ {
						kernelRow(KindSoftmax, g, s[r*n:(r+1)*n], want[r*n:(r+1)*n])
					}
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
							t.Fatalf("n %d rows %d g %v trial %d: w[%d] = %v, kernelRow %v (s %v)", n, rows, g, trial, i, got[i], want[i], s[i/n*n:(i/n+1)*n])
						}
					}
				}
			}
		}
	}
}

// BenchmarkKernelRows times the float32 softmax weights of one sequence of
// the Trained TF at N = 10 (11 rows of 10 scores), kernelRows against
// kernelRow row by row: one thread,
//
//	GOMAXPROCS=1 go test ./ops -run '^$' -bench KernelRows
func BenchmarkKernelRows(b *testing.B) {
	const rows, n = 11, 10
	rng := rand.New(rand.NewPCG(1, 2))
	s, w := make([]float32, rows*n), make([]float32, rows*n)
	for i := range s {
		s[i] = float32(rng.NormFloat64())
	}
	b.Run("rows", func(b *testing.B) {
		for range b.N {
			kernelRows(KindSoftmax, float32(1), s, w, rows, n)
		}
	})
	b.Run("row", func(b *testing.B) {
		for range b.N {
			for r := 0; r < rows; r++ {
				kernelRow(KindSoftmax, float32(1), s[r*n:(r+1)*n], w[r*n:(r+1)*n])
			}
		}
	})
}
