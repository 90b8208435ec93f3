package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLabelSums32Bits: labelSums32 gives the Go loop's sums bit for bit,
// for every d' ≤ 8, with signed zeros, subnormals, infinities and NaN
// among the rows, and writes nothing but the rows of the labels it reads.
func TestLabelSums32Bits(t *testing.T) {
	if !haveLabelSums32 {
		t.Skip("no AVX")
	}
	rng := rand.New(rand.NewPCG(8, 9))
	specials := []float32{0, float32(math.Copysign(0, -1)), 1e-42, -3e-41, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 3.4e38}
	const n, c = 67, 6
	for dp := 1; dp <= 8; dp++ {
		src := make([]float32, n*dp)
		for i := range src {
			if rng.IntN(6) == 0 {
				src[i] = specials[rng.IntN(len(specials))]
			} else {
				src[i] = float32(rng.NormFloat64())
			}
		}
		lab := make([]int32, n)
		for i := range lab {
			lab[i] = int32(rng.IntN(c - 1)) // the last row is never a label
		}
		want := make([][8]float32, c)
		for r, y := range lab {
			for j, v := range src[r*dp : (r+1)*dp] {
				want[y][j] += v
			}
		}
		got := make([][8]float32, c)
		got[c-1] = [8]float32{1, 2, 3, 4, 5, 6, 7, 8}
		want[c-1] = got[c-1]
		labelSums32(&got[0][0], &src[0], &lab[0], n, dp)
		for y := range got {
			for j := range 8 {
				if math.Float32bits(got[y][j]) != math.Float32bits(want[y][j]) {
					t.Errorf("d'=%d: row %d lane %d: %v (%#x), want %v (%#x)", dp, y, j, got[y][j], math.Float32bits(got[y][j]), want[y][j], math.Float32bits(want[y][j]))
				}
			}
		}
	}
}
