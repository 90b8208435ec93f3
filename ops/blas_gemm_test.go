package ops

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// gemmShapes are the float32 products benchmarked: the square 512³ product
// (the practical ceiling of a BLAS on this machine) and the three products
// of the tied output layer of the language models (N = B·T rows, d' = 64 or
// 512, V = 50,258): logits = h Wᵀ, dh = dY W, dW = dYᵀ h.
var gemmShapes = []struct {
	name    string
	tA, tB  bool
	m, n, k int
}{
	{"square512", false, false, 512, 512, 512},
	{"logits-small", false, true, 512, 50258, 64},
	{"dh-small", false, false, 512, 64, 50258},
	{"dW-small", true, false, 50258, 64, 512},
	{"logits-paper", false, true, 1024, 50258, 512},
	{"dh-paper", false, false, 1024, 512, 50258},
	{"dW-paper", true, false, 50258, 512, 1024},
}

func randF32(n int, rng *rand.Rand) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(rng.NormFloat64())
	}
	return out
}

// gemmOperands returns A, B and C of a shape with their leading dimensions.
func gemmOperands(tA, tB bool, m, n, k int) (a []float32, lda int, b []float32, ldb int, c []float32) {
	rng := rand.New(rand.NewPCG(1, 2))
	a, b, c = randF32(m*k, rng), randF32(k*n, rng), make([]float32, m*n)
	lda, ldb = k, n
	if tA {
		lda = m
	}
	if tB {
		ldb = k
	}
	return a, lda, b, ldb, c
}

// reportGFLOPs reports the rate of b.N products of flops each per second
// of wall time (GFLOP/s) and of process CPU time since cpu0 (GFLOP/cpu-s:
// robust to other jobs' load, and per core at GOMAXPROCS=1).
func reportGFLOPs(b *testing.B, flops float64, cpu0 time.Duration) {
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(flops*float64(b.N)/cpu.Seconds()/1e9, "GFLOP/cpu-s")
	}
}

// BenchmarkSgemm times gonum's pure-Go Sgemm (gonum.Implementation,
// Gorgonia's G.Mul before package gemm) and Gemm on gemmShapes, reporting
// GFLOP/s (2mnk per product). Run it with GOMAXPROCS=1 for one core:
//
//	GOMAXPROCS=1 go test ./ops -run '^$' -bench Sgemm
func BenchmarkSgemm(b *testing.B) {
	for _, s := range gemmShapes {
		a, lda, bb, ldb, c := gemmOperands(s.tA, s.tB, s.m, s.n, s.k)
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		b.Run(fmt.Sprintf("gonum/%s", s.name), func(b *testing.B) {
			ta, tb := blas.NoTrans, blas.NoTrans
			if s.tA {
				ta = blas.Trans
			}
			if s.tB {
				tb = blas.Trans
			}
			var impl gonum.Implementation
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				impl.Sgemm(ta, tb, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
			}
			reportGFLOPs(b, flops, cpu0)
		})
		b.Run(fmt.Sprintf("ops.Gemm/%s", s.name), func(b *testing.B) {
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				Gemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
			}
			reportGFLOPs(b, flops, cpu0)
		})
	}
}
