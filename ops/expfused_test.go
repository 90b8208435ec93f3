package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpRowSum checks the fused row exponentials against the per-element
// loops they replace, bit for bit: scores of every size from 0 to 13 (the
// four-wide loops and their tails) and longer rows,
// ordinary, huge (outside Exp32's fast range) and NaN values.
func TestExpRowSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 63, 64, 65, 67, 130, 255, 256, 257, 300} {
		for _, scale := range []float64{1, 30, 1e4} {
			raw32 := make([]float32, n)
			raw64 := make([]float64, n)
			for i := range raw32 {
				raw32[i] = float32(scale * rng.NormFloat64())
				raw64[i] = scale * rng.NormFloat64()
			}
			if n == 7 {
				raw32[5], raw64[5] = float32(math.NaN()), math.NaN()
			}
			for _, g := range []float64{0.5, 3} {
				shift := g * 0.7
				// float32 scores, float64 g and shift (the kernel op)
				got := make([]float32, n)
				sum := expRowSum(got, raw32, g, shift)
				var want float64
				for i, r := range raw32 {
					e := Exp32(g*float64(r) - shift)
					want += e
					if math.Float32bits(got[i]) != math.Float32bits(float32(e)) {
						t.Errorf("float32 n=%d scale=%v g=%v: row[%d] = %v, want %v", n, scale, g, i, got[i], float32(e))
					}
				}
				if math.Float64bits(sum) != math.Float64bits(want) {
					t.Errorf("float32 n=%d scale=%v g=%v: sum %v, want %v", n, scale, g, sum, want)
				}
				// float64 scores
				got64 := make([]float64, n)
				sum = expRowSum(got64, raw64, g, shift)
				want = 0
				for i, r := range raw64 {
					e := math.Exp(g*r - shift)
					want += e
					if math.Float64bits(got64[i]) != math.Float64bits(e) {
						t.Errorf("float64 n=%d: row[%d] = %v, want %v", n, i, got64[i], e)
					}
				}
				if math.Float64bits(sum) != math.Float64bits(want) {
					t.Errorf("float64 n=%d: sum %v, want %v", n, sum, want)
				}
				// float32 scores, g and shift in float32 (the attention head)
				g32, mx := float32(g), float32(shift)
				sum = expRowSumF32(got, raw32, g32, mx)
				want = 0
				for i, v := range raw32 {
					e := Exp32(float64(g32*v - mx))
					want += e
					if math.Float32bits(got[i]) != math.Float32bits(float32(e)) {
						t.Errorf("head n=%d scale=%v: w[%d] = %v, want %v", n, scale, i, got[i], float32(e))
					}
				}
				if math.Float64bits(sum) != math.Float64bits(want) {
					t.Errorf("head n=%d scale=%v: sum %v, want %v", n, scale, sum, want)
				}
			}
		}
	}
}
