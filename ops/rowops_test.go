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
// of four).
func TestKernelDGSoftmaxBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, rows := range []int{1, 3, 4, 5, 8, 126} {
		for _, n := range []int{1, 7, 125} {
			w, dw, raw := make([]float32, rows*n), make([]float32, rows*n), make([]float32, rows*n)
			for i := range w {
				w[i], dw[i], raw[i] = float32(rng.Float64()), float32(rng.NormFloat64()), float32(rng.NormFloat64())
			}
			var want float64
			for o := 0; o < rows*n; o += n {
				var rs float64
				for i := o; i < o+n; i++ {
					rs += float64(w[i]) * float64(dw[i])
				}
				for i := o; i < o+n; i++ {
					want += float64(w[i]) * (float64(dw[i]) - rs) * float64(raw[i])
				}
			}
			got := kernelDG(KindSoftmax, kernelArgs{b: 1, tq: rows, tk: n}, w, dw, raw, 0)
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("rows %d n %d: dg %v, want %v", rows, n, got, want)
			}
		}
	}
}
