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

// TestExpChunk32S2 checks expChunk32S2 against Exp32 and two scalar
// chains of additions bit for bit, from nonzero starting sums, and where it
// stops (a value outside Exp32's fast range, in and out of place).
func TestExpChunk32S2(t *testing.T) {
	if !haveExpAVX2 {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{4, 8, 12, 64, 256, 1028} {
		for _, bad := range []int{-1, 0, 2, 5, n - 1} {
			if bad >= n {
				continue
			}
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
			want := [2]float64{0.375, -1.5}
			for i := 0; i < stop; i++ {
				want[i%2] += Exp32(g*float64(raw[i]) - shift)
			}
			for _, inPlace := range []bool{false, true} {
				src := append([]float32(nil), raw...)
				row := make([]float32, n)
				if inPlace {
					row = src
				}
				sums := [2]float64{0.375, -1.5}
				k := expChunk32S2(&row[0], &src[0], n, g, shift, &sums)
				if k != stop {
					t.Fatalf("n %d bad %d in place %v: computed %d, want %d", n, bad, inPlace, k, stop)
				}
				if math.Float64bits(sums[0]) != math.Float64bits(want[0]) || math.Float64bits(sums[1]) != math.Float64bits(want[1]) {
					t.Fatalf("n %d bad %d in place %v: sums %v, want %v", n, bad, inPlace, sums, want)
				}
				for i := 0; i < k; i++ {
					w := float32(Exp32(g*float64(raw[i]) - shift))
					if math.Float32bits(row[i]) != math.Float32bits(w) {
						t.Fatalf("n %d in place %v: element %d: %v, want %v", n, inPlace, i, row[i], w)
					}
				}
			}
		}
	}
}
