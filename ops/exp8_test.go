package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExp8Accuracy checks the fast float32 exponential (the Go lane and the
// AVX2/FMA assembly through expRowFast32) against math.Exp over its range:
// relative error below 2e-7, 0 below exp8Lo.
func TestExp8Accuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 1 << 14
	s := make([]float32, n)
	for i := range s {
		switch i % 4 {
		case 0:
			s[i] = float32(rng.Float64()*176 - 88) // the whole range
		case 1:
			s[i] = float32(-rng.Float64() * 20) // softmax's usual arguments
		default:
			s[i] = float32(rng.NormFloat64())
		}
	}
	s[0], s[1], s[2], s[3] = 0, exp8Lo, exp8Hi, -100
	w := make([]float32, n)
	sum := expRowFast32(w, s, 1, 0)
	var want float64
	worst := 0.0
	for i, x := range s {
		e := math.Exp(float64(x))
		if x < exp8Lo {
			e = 0
		}
		want += e
		if g := exp8(x); relErr(float64(g), e) > 2e-7 {
			t.Fatalf("exp8(%v) = %v, want %v", x, g, e)
		}
		if r := relErr(float64(w[i]), e); r > worst {
			worst = r
		}
	}
	if worst > 2e-7 {
		t.Errorf("expRowFast32: worst relative error %.3g, want below 2e-7", worst)
	}
	if relErr(sum, want) > 1e-5 {
		t.Errorf("expRowFast32 sum %v, want %v", sum, want)
	}
	t.Logf("worst relative error %.3g (assembly: %v)", worst, haveExp8)
}

func relErr(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / math.Max(math.Abs(want), 1e-300)
}

// TestExpRowFast32Edges: every length around the groups of eight, scales
// and shifts, an argument above exp8Hi or NaN anywhere in the row (the rest
// through Exp32: +Inf and NaN reach the weights and the sum).
func TestExpRowFast32Edges(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= 27; n++ {
		for _, g := range []float32{0.5, 1, 3} {
			for bad := -1; bad < n; bad++ {
				s := make([]float32, n)
				for i := range s {
					s[i] = float32(rng.NormFloat64() * 4)
				}
				var badv float32
				if bad >= 0 {
					badv = float32(math.NaN())
					if bad%2 == 0 {
						badv = 200
					}
					s[bad] = badv
				}
				mx := float32(0.25)
				w := make([]float32, n)
				sum := expRowFast32(w, s, g, mx)
				var want float64
				for i, v := range s {
					x := float64(g)*float64(v) - float64(mx) // the fused g·s − mx
					e := math.Exp(x)
					want += e
					switch {
					case math.IsNaN(e):
						if !math.IsNaN(float64(w[i])) {
							t.Fatalf("n %d, g %v: w[%d] = %v, want NaN", n, g, i, w[i])
						}
					case e > math.MaxFloat32:
						if !math.IsInf(float64(w[i]), 1) {
							t.Fatalf("n %d, g %v: w[%d] = %v, want +Inf", n, g, i, w[i])
						}
					case relErr(float64(w[i]), e) > 2e-7+6e-8*math.Abs(x): // x rounded to float32
						t.Fatalf("n %d, g %v: w[%d] = %v, want %v", n, g, i, w[i], e)
					}
				}
				switch {
				case math.IsNaN(want):
					if !math.IsNaN(sum) {
						t.Fatalf("n %d, bad %d: sum %v, want NaN", n, bad, sum)
					}
				case math.IsInf(want, 1):
					if !math.IsInf(sum, 1) {
						t.Fatalf("n %d, bad %d: sum %v, want +Inf", n, bad, sum)
					}
				case relErr(sum, want) > 1e-6:
					t.Fatalf("n %d, g %v, bad %d: sum %v, want %v", n, g, bad, sum, want)
				}
			}
		}
	}
}

func BenchmarkExpRow(b *testing.B) {
	s := make([]float32, 125)
	for i := range s {
		s[i] = float32(-i) / 10
	}
	w := make([]float32, len(s))
	b.Run("Exp32", func(b *testing.B) {
		for b.Loop() {
			expRowSumF32(w, s, 1, 0)
		}
	})
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			expRowFast32(w, s, 1, 0)
		}
	})
}
