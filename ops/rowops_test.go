package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRowOps checks maxScaledF32 and scaleRowF against the scalar loops
// they replace, bit for bit: every length up to 40 (the vector loops and
// their tails), signed zeros, infinities and huge values.
func TestRowOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 1; n <= 40; n++ {
		for trial := 0; trial < 20; trial++ {
			s := make([]float32, n)
			for i := range s {
				s[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(9)-4)))
				switch rng.IntN(12) {
				case 0:
					s[i] = float32(math.Copysign(0, -1))
				case 1:
					s[i] = 0
				case 2:
					s[i] = float32(math.Inf(2*rng.IntN(2) - 1))
				}
			}
			for _, g := range []float32{1, 0.5, 3.7, 1e30} {
				want := g * s[0]
				for _, v := range s[1:] {
					if g*v > want {
						want = g * v
					}
				}
				if got := maxScaledF32(s, g); got != want { // -0 == 0: either shifts exp alike
					t.Fatalf("n %d g %v: max %v, want %v (%v)", n, g, got, want, s)
				}
			}
			inv := 1 / (1 + math.Abs(rng.NormFloat64()))
			got := append([]float32(nil), s...)
			scaleRowF(got, inv)
			for i, v := range s {
				if w := float32(float64(v) * inv); math.Float32bits(got[i]) != math.Float32bits(w) {
					t.Fatalf("n %d: scaled[%d] = %v, want %v", n, i, got[i], w)
				}
			}
		}
	}
}

// TestKernelDGSoftmaxBits checks the four-row softmax dg against the
// row-at-a-time sums it replaces, bit for bit (row counts around the groups
// of four): float32 rows' dg in four chains (i mod 4, dgRow32), float64
// rows' in one chain in index order.
func TestKernelDGSoftmaxBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, rows := range []int{1, 3, 4, 5, 8, 126} {
		for _, n := range []int{1, 7, 125} {
			w, dw, raw := make([]float32, rows*n), make([]float32, rows*n), make([]float32, rows*n)
			for i := range w {
				w[i], dw[i], raw[i] = float32(rng.Float64()), float32(rng.NormFloat64()), float32(rng.NormFloat64())
			}
			var want, want64 float64
			w64, dw64, raw64 := make([]float64, rows*n), make([]float64, rows*n), make([]float64, rows*n)
			for o := 0; o < rows*n; o += n {
				var rs float64
				for i := o; i < o+n; i++ {
					rs += float64(w[i]) * float64(dw[i])
					w64[i], dw64[i], raw64[i] = float64(w[i]), float64(dw[i]), float64(raw[i])
				}
				var d [4]float64
				for i := o; i < o+n; i++ {
					t := float64(w[i]) * (float64(dw[i]) - rs) * float64(raw[i])
					if j := i - o; j < n&^3 {
						d[j&3] += t
					} else {
						d[0] += t // the tail joins the first chain
					}
					want64 += t
				}
				want += (d[0] + d[1]) + (d[2] + d[3])
			}
			got := kernelDG(KindSoftmax, kernelArgs{b: 1, tq: rows, tk: n}, w, dw, raw, 0)
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("rows %d n %d: dg %v, want %v", rows, n, got, want)
			}
			got64 := kernelDG(KindSoftmax, kernelArgs{b: 1, tq: rows, tk: n}, w64, dw64, raw64, 0)
			if math.Float64bits(got64) != math.Float64bits(want64) {
				t.Fatalf("float64, rows %d n %d: dg %v, want %v", rows, n, got64, want64)
			}
		}
	}
}

// TestSqDists checks the squared distances from dot products and norms
// against the direct sums over the differences: a point and itself (and
// its duplicate) exactly 0, every pair within a few float64 units of
// relative error, near duplicates (refined directly) exactly.
func TestSqDists(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const tq, tk, d = 9, 7, 10
	q, k := make([]float64, tq*d), make([]float64, tk*d)
	for i := range q {
		q[i] = rng.NormFloat64() * 3
	}
	for i := range k {
		k[i] = rng.NormFloat64() * 3
	}
	copy(k[:d], q[:d])         // key 0 = query 0
	copy(k[d:2*d], q[2*d:3*d]) // key 1 ≈ query 2
	k[d] += 1e-9
	q32, k32 := make([]float32, len(q)), make([]float32, len(k))
	for i, v := range q {
		q32[i] = float32(v)
	}
	for i, v := range k {
		k32[i] = float32(v)
	}
	for _, c := range []struct {
		name string
		got  []float64
		want func(j, i int) float64
	}{
		{"float64", sqDists(&sqDistScratch{}, tq, tk, d, q, k), func(j, i int) float64 { return sqdist(q[j*d:(j+1)*d], k[i*d:(i+1)*d]) }},
		{"float32", sqDists(&sqDistScratch{}, tq, tk, d, q32, k32), func(j, i int) float64 { return sqdist(q32[j*d:(j+1)*d], k32[i*d:(i+1)*d]) }},
	} {
		for j := 0; j < tq; j++ {
			for i := 0; i < tk; i++ {
				got, want := c.got[j*tk+i], c.want(j, i)
				if math.Abs(got-want) > 1e-13*want {
					t.Errorf("%s: dist(%d, %d) = %v, want %v", c.name, j, i, got, want)
				}
			}
		}
		if c.got[0] != 0 {
			t.Errorf("%s: a point and itself at distance² %v, want 0", c.name, c.got[0])
		}
		if w := c.want(2, 1); c.got[2*tk+1] != w {
			t.Errorf("%s: near duplicate at %v, want %v (direct)", c.name, c.got[2*tk+1], w)
		}
	}
}
