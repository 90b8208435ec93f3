package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAxpyRoundBits checks axpyRound (AVX2 for float32) against the scalar
// loop it replaces, bit for bit, over lengths with every tail.
func TestAxpyRoundBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= 37; n++ {
		x := make([]float32, n)
		y := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
			y[i] = float32(rng.NormFloat64())
		}
		a := rng.NormFloat64() * 3
		want := append([]float32(nil), y...)
		for c := range want {
			want[c] += float32(a * float64(x[c]))
		}
		axpyRound(y, x, a)
		for c := range y {
			if math.Float32bits(y[c]) != math.Float32bits(want[c]) {
				t.Fatalf("n=%d: y[%d] = %v, want %v", n, c, y[c], want[c])
			}
		}
		x64 := make([]float64, n)
		y64 := make([]float64, n)
		for i := range x64 {
			x64[i], y64[i] = rng.NormFloat64(), rng.NormFloat64()
		}
		want64 := append([]float64(nil), y64...)
		for c := range want64 {
			want64[c] += a * x64[c]
		}
		axpyRound(y64, x64, a)
		for c := range y64 {
			if y64[c] != want64[c] {
				t.Fatalf("float64 n=%d: y[%d] = %v, want %v", n, c, y64[c], want64[c])
			}
		}
	}
}

// TestKeyDotsBits checks keyDots against dot, bit for bit, with and
// without a causal keep row.
func TestKeyDotsBits(t *testing.T) {
	testKeyDots[float32](t)
	testKeyDots[float64](t)
}

func testKeyDots[F float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, d := range []int{1, 3, 4, 8, 33, 64} {
		for _, n := range []int{1, 4, 7, 13, 16, 17, 35, 48} {
			q := make([]F, d)
			k := make([]F, n*d)
			for i := range q {
				q[i] = F(rng.NormFloat64())
			}
			for i := range k {
				k[i] = F(rng.NormFloat64())
			}
			for j := 0; j <= n; j++ {
				keep := make([]F, n)
				for i := 0; i < j; i++ {
					keep[i] = 1
				}
				for _, kr := range [][]F{nil, keep} {
					dots := make([]float64, n)
					keyDots(q, k, d, kr, dots)
					for i := 0; i < n; i++ {
						if kr != nil && kr[i] == 0 {
							continue
						}
						if w := dot(q, k[i*d:(i+1)*d]); math.Float64bits(dots[i]) != math.Float64bits(w) {
							t.Fatalf("d=%d n=%d j=%d: dots[%d] = %v, want %v", d, n, j, i, dots[i], w)
						}
					}
				}
			}
		}
	}
}

// BenchmarkKeyDots times the scores of one query against 256 keys of 64
// (a head of the language `paper` preset), all kept.
func BenchmarkKeyDots(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const d, n = 64, 256
	q := make([]float32, d)
	k := make([]float32, n*d)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	for i := range k {
		k[i] = float32(rng.NormFloat64())
	}
	dots := make([]float64, n)
	for range b.N {
		keyDots(q, k, d, nil, dots)
	}
}
