//go:build amd64 && !purego

package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpChunk32EPaths: the AVX2 and AVX-512 forms of expChunk32E give
// Exp32's bits, stop before the group holding an argument outside its fast
// range, and agree with each other.
func TestExpChunk32EPaths(t *testing.T) {
	if !haveExpAVX2 {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{8, 16, 64, 256} {
		for _, bad := range []int{-1, 0, 3, 5, n - 1} {
			raw := make([]float32, n)
			for i := range raw {
				raw[i] = float32(10 * rng.NormFloat64())
			}
			if bad >= 0 {
				raw[bad] = 1e4 // g·raw − shift far above 700
			}
			const g, shift = 0.5, 1.25
			stop := n
			if bad >= 0 {
				stop = bad &^ 3
			}
			for _, f := range []struct {
				name string
				run  func(row []float32, e []float64) int
				want int
			}{
				{"avx2", func(row []float32, e []float64) int { return expChunk32EAVX2(&row[0], &raw[0], n, g, shift, &e[0]) }, stop},
				{"avx512", func(row []float32, e []float64) int {
					if !haveExpAVX512 {
						return stop &^ 7
					}
					return expChunk32E512(&row[0], &raw[0], n, g, shift, &e[0])
				}, stop &^ 7},
				{"dispatch", func(row []float32, e []float64) int { return expChunk32E(&row[0], &raw[0], n, g, shift, &e[0]) }, stop},
			} {
				row, e := make([]float32, n), make([]float64, n)
				k := f.run(row, e)
				if k != f.want {
					t.Fatalf("%s n %d bad %d: computed %d, want %d", f.name, n, bad, k, f.want)
				}
				if f.name == "avx512" && !haveExpAVX512 {
					continue
				}
				for i := 0; i < k; i++ {
					w := Exp32(g*float64(raw[i]) - shift)
					if math.Float64bits(e[i]) != math.Float64bits(w) || math.Float32bits(row[i]) != math.Float32bits(float32(w)) {
						t.Fatalf("%s n %d: element %d: %v %v, want %v", f.name, n, i, e[i], row[i], w)
					}
				}
			}
		}
	}
}
