package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSoftmaxWeightRowsBits checks the softmax kernel's weights eight rows
// at a time (softmaxWeightRows) against dotWeights row by row, bit for
// bit: rows of 1 to 27 scores (no full group of eight, one, several, with
// and without a padded rest), g from tiny to large, scores far below the
// maximum (weight 0), −Inf, +Inf and NaN scores (rows that leave the fast
// exponential), signed zeros, and a number of rows not a multiple of 8.
func TestSoftmaxWeightRowsBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 1; n <= 27; n++ {
		for _, g := range []float64{1, 0.37, 3.1e-3, 12.5, 1e-30} {
			for trial := 0; trial < 6; trial++ {
				rows := 8*(1+rng.IntN(3)) + rng.IntN(8)
				raw := make([]float32, rows*n)
				for i := range raw {
					raw[i] = float32(rng.NormFloat64() * 4)
				}
				r := rng.IntN(rows)
				switch trial {
				case 1:
					raw[r*n+rng.IntN(n)] = -1e6
				case 2:
					raw[r*n+rng.IntN(n)] = float32(math.Inf(-1))
				case 3:
					raw[r*n+rng.IntN(n)] = float32(math.Inf(1))
				case 4:
					raw[r*n+rng.IntN(n)] = float32(math.NaN())
				case 5:
					for i := 0; i < n; i++ {
						raw[r*n+i] = float32(math.Copysign(0, float64(i%2)-0.5))
					}
				}
				got, want := make([]float32, rows*n), make([]float32, rows*n)
				softmaxWeightRows(g, raw, got, rows, n)
				for k := 0; k < rows; k++ {
					dotWeights(KindSoftmax, g, raw[k*n:(k+1)*n], want[k*n:(k+1)*n])
				}
				for i := range want {
					if !sameBits32(got[i], want[i]) {
						t.Fatalf("n %d g %v trial %d: w[%d] = %v, dotWeights gives %v", n, g, trial, i, got[i], want[i])
					}
				}
			}
		}
	}
}
