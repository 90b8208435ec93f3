package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestColMeanBits checks colMean on float32 tables (four columns a vector
// in AVX2 where the CPU has it, the rest one by one) against the
// one-by-one column sums in row order, bit for bit, with NaNs of several
// payloads, infinities and values of many magnitudes.
func TestColMeanBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ref := func(w []float32, d int) []float64 {
		sum := make([]float64, d)
		rows := len(w) / d
		for r := 0; r < rows; r++ {
			for j, x := range w[r*d : (r+1)*d] {
				sum[j] += float64(x)
			}
		}
		for j := range sum {
			sum[j] /= float64(rows)
		}
		return sum
	}
	for _, d := range []int{1, 3, 4, 5, 8, 13, 16, 64, 67} {
		for _, rows := range []int{1, 2, 7, 300} {
			w := make([]float32, rows*d)
			for i := range w {
				switch rng.IntN(40) {
				case 0:
					w[i] = math.Float32frombits(0x7fc00000 | uint32(rng.IntN(1<<22)))
				case 1:
					w[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
				default:
					w[i] = float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(60)-30))
				}
			}
			got, want := colMean(w, d), ref(w, d)
			for j := range want {
				if math.Float64bits(got[j]) != math.Float64bits(want[j]) {
					t.Fatalf("d %d rows %d: column %d mean %v (%#x), want %v (%#x)", d, rows, j, got[j], math.Float64bits(got[j]), want[j], math.Float64bits(want[j]))
				}
			}
		}
	}
}
