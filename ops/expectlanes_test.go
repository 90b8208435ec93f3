package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// sameBits32 reports whether a and b hold the same float32 bits, NaNs of
// any payload counting as equal.
func sameBits32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// TestExpectationLanesBits checks the float32 expectation op on the lane
// kernels (forward: E and the probabilities; backward: df, dK, dV) against
// the gemm path, bit for bit: every M up to 13 (groups of four rows and a
// remainder), d' from 1 to 9 and C from 1 to 33 (the kernels' chunks of
// eight and four and their tails), with rows whose logits are huge, −Inf,
// +Inf or NaN (a group computed on the gemm path) and signed zeros.
func TestExpectationLanesBits(t *testing.T) {
	if !expectLanes(1, 1) {
		t.Skip("no lane kernels on this machine or build")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	randv := func(n int, s float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * s)
		}
		return x
	}
	check := func(what string, got, want []float32, m, dp, c, trial int) {
		t.Helper()
		for i := range want {
			if !sameBits32(got[i], want[i]) {
				t.Fatalf("%s, M %d d' %d C %d trial %d: [%d] = %v, the gemm path gives %v", what, m, dp, c, trial, i, got[i], want[i])
			}
		}
	}
	for _, dims := range [][2]int{{1, 1}, {1, 25}, {2, 3}, {3, 8}, {4, 9}, {5, 25}, {5, 7}, {6, 16}, {7, 17}, {8, 24}, {9, 33}, {5, 1}} {
		dp, c := dims[0], dims[1]
		for m := 1; m <= 13; m++ {
			for trial := 0; trial < 6; trial++ {
				f, k, v, dout := randv(m*dp, 2), randv(dp*c, 2), randv(dp*c, 1), randv(m*dp, 1)
				r := rng.IntN(m)
				switch trial {
				case 1:
					for l := 0; l < dp; l++ {
						f[r*dp+l] = float32(rng.NormFloat64() * 1e4) // logits far apart
					}
				case 2:
					f[r*dp] = float32(math.Inf(-1))
				case 3:
					f[r*dp] = float32(math.NaN())
				case 4:
					f[r*dp] = float32(math.Inf(1))
				case 5:
					for l := 0; l < dp; l++ {
						f[r*dp+l] = float32(math.Copysign(0, -1))
					}
					dout[r*dp] = float32(math.Copysign(0, -1))
				}
				var st expectState[float32]
				out := make([]float32, m*dp)
				expectForward(&st, m, dp, c, f, k, v, out)
				p := make([]float32, m*c)
				wantOut := make([]float32, m*dp)
				expectRowsGemm(m, dp, c, f, k, p)
				gemm(false, true, m, dp, c, p, c, v, c, 0, wantOut, dp)
				check("p", st.p[:m*c], p, m, dp, c, trial)
				check("E", out, wantOut, m, dp, c, trial)

				df := make([]float32, m*dp)
				expectBackward(&st, m, dp, c, f, k, v, out, dout, df)
				dl, wantDf := make([]float32, m*c), make([]float32, m*dp)
				expectRowsGradGemm(m, dp, c, k, v, p, dout, dl, wantDf)
				dk, dv := make([]float32, dp*c), make([]float32, dp*c)
				gemm(true, false, dp, c, m, f, dp, dl, c, 0, dk, c)
				gemm(true, false, dp, c, m, dout, dp, p, c, 0, dv, c)
				check("dl", st.dpb[:m*c], dl, m, dp, c, trial)
				check("df", df, wantDf, m, dp, c, trial)
				check("dK", st.dk, dk, m, dp, c, trial)
				check("dV", st.dv, dv, m, dp, c, trial)
			}
		}
	}
}

// BenchmarkExpectation times the float32 expectation op's forward and
// backward passes at the GD model's sizes (B·N = 5120 rows, d' = 5, C =
// 25): "lanes" on the lane kernels where the machine has them, "gemm" on
// the gemm path.
func BenchmarkExpectation(b *testing.B) {
	const m, dp, c = 5120, 5, 25
	rng := rand.New(rand.NewPCG(1, 2))
	f, k, v, dout := randF32(m*dp, rng), randF32(dp*c, rng), randF32(dp*c, rng), randF32(m*dp, rng)
	out, df := make([]float32, m*dp), make([]float32, m*dp)
	b.Run("lanes/forward", func(b *testing.B) {
		var st expectState[float32]
		for i := 0; i < b.N; i++ {
			expectForward(&st, m, dp, c, f, k, v, out)
		}
	})
	b.Run("lanes/backward", func(b *testing.B) {
		var st expectState[float32]
		expectForward(&st, m, dp, c, f, k, v, out)
		for i := 0; i < b.N; i++ {
			expectBackward(&st, m, dp, c, f, k, v, out, dout, df)
		}
	})
	p, dl := make([]float32, m*c), make([]float32, m*c)
	b.Run("gemm/forward", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			expectRowsGemm(m, dp, c, f, k, p)
			gemm(false, true, m, dp, c, p, c, v, c, 0, out, dp)
		}
	})
	b.Run("gemm/backward", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			expectRowsGradGemm(m, dp, c, k, v, p, dout, dl, df)
		}
	})
}
