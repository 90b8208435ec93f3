package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQueryScoresBits checks queryScores (the column K·q of mulAddRows)
// against Gemm's q·kᵀ, bit for bit: float32 and float64, key counts
// around the kernels' 8- and 4-row groups, depths 0 to 130, with zeros,
// −0, huge and tiny values among the data.
func TestQueryScoresBits(t *testing.T) {
	testQueryScoresBits[float32](t)
	testQueryScoresBits[float64](t)
}

func testQueryScoresBits[F float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 4))
	special := []float64{0, math.Copysign(0, -1), 1e30, -1e-30, 3}
	for _, tk := range []int{1, 3, 4, 7, 8, 9, 10, 12, 17, 50, 251} {
		for _, d := range []int{0, 1, 3, 5, 10, 33, 130} {
			q, k := make([]F, d), make([]F, tk*d)
			for i := range q {
				q[i] = F(rng.NormFloat64())
				if rng.IntN(6) == 0 {
					q[i] = F(special[rng.IntN(len(special))])
				}
			}
			for i := range k {
				k[i] = F(rng.NormFloat64())
				if rng.IntN(6) == 0 {
					k[i] = F(special[rng.IntN(len(special))])
				}
			}
			got, want := make([]F, tk), make([]F, tk)
			for i := range got {
				got[i], want[i] = F(rng.NormFloat64()), F(rng.NormFloat64()) // overwritten
			}
			queryScores(tk, d, q, k, got)
			Gemm(false, true, 1, tk, d, 1, q, max(d, 1), k, max(d, 1), 0, want, tk)
			for i := range got {
				if math.Float64bits(float64(got[i])) != math.Float64bits(float64(want[i])) {
					t.Fatalf("%T tk %d d %d: raw[%d] = %v, want %v (Gemm)", got[i], tk, d, i, got[i], want[i])
				}
			}
		}
	}
}

// TestApplyBackwardKeptRaw checks the kernel-apply backward pass with the
// forward's raw scores kept against the pass that recomputes them, bit for
// bit: dr and dg, every kernel, one query row and several, float32 and
// float64.
func TestApplyBackwardKeptRaw(t *testing.T) {
	testApplyBackwardKeptRaw[float32](t)
	testApplyBackwardKeptRaw[float64](t)
}

func testApplyBackwardKeptRaw[F float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	const b, tk, d, p = 3, 19, 10, 5
	for _, kind := range []KernelKind{KindLinear, KindRBF, KindExp, KindLaplacian, KindSoftmax} {
		for _, tq := range []int{1, 4} {
			a := applyArgs{kernelArgs: kernelArgs{b: b, tq: tq, tk: tk, d: d, g: 0.7}, p: p}
			fill := func(n int) []F {
				s := make([]F, n)
				for i := range s {
					s[i] = F(rng.NormFloat64() * 0.5)
				}
				return s
			}
			q, k, r, dout := fill(b*tq*d), fill(b*tk*d), fill(b*tk*p), fill(b*tq*p)
			w, w2 := make([]F, b*tq*tk), make([]F, b*tq*tk)
			rawAll := make([]F, b*tq*tk)
			out, out2 := make([]F, b*tq*p), make([]F, b*tq*p)
			applyForward(kind, a, q, k, r, w, make([]F, tq*tk), rawAll, out)
			applyForward(kind, a, q, k, r, w2, make([]F, tq*tk), nil, out2)
			dr, dr2 := make([]F, b*tk*p), make([]F, b*tk*p)
			dg := applyBackward(kind, true, a, q, k, r, w, rawAll, dout, dr, make([]F, tq*tk), make([]F, tq*tk))
			dg2 := applyBackward(kind, true, a, q, k, r, w2, nil, dout, dr2, make([]F, tq*tk), make([]F, tq*tk))
			for _, c := range []struct {
				name string
				x, y []F
			}{{"w", w, w2}, {"out", out, out2}, {"dr", dr, dr2}} {
				for i := range c.x {
					if math.Float64bits(float64(c.x[i])) != math.Float64bits(float64(c.y[i])) {
						t.Fatalf("%T %v tq %d: %s[%d] kept %v, recomputed %v", c.x[i], kind, tq, c.name, i, c.x[i], c.y[i])
					}
				}
			}
			if math.Float64bits(dg) != math.Float64bits(dg2) {
				t.Fatalf("%T %v tq %d: dg kept %v, recomputed %v", q[0], kind, tq, dg, dg2)
			}
			if kind != KindLinear && dg == 0 {
				t.Fatalf("%T %v tq %d: dg = 0", q[0], kind, tq)
			}
		}
	}
}
