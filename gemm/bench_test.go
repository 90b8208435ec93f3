package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchShapes are the products benchmarked: square 512³ and 1024³, and
// the three products of the tied output layer of the language models'
// paper preset (N = B·T = 1024 rows, d = 512, V = 50,258 tokens): logits
// = h Wᵀ, dh = dY W, dW = dYᵀ h (ops/tied.go).
var benchShapes = []struct {
	name    string
	tA, tB  bool
	m, n, k int
}{
	{"square512", false, false, 512, 512, 512},
	{"square1024", false, false, 1024, 1024, 1024},
	{"logits-paper", false, true, 1024, 50258, 512},
	{"dh-paper", false, false, 1024, 512, 50258},
	{"dW-paper", true, false, 50258, 512, 1024},
}

var sink float64

func benchGemm[F Float](b *testing.B, tA, tB bool, m, n, k int) {
	rng := rand.New(rand.NewPCG(1, 2))
	a, lda, bb, ldb, c, ldc := operands[F](tA, tB, m, n, k, 0, rng)
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if err := Gemm(tA, tB, m, n, k, 1, a, lda, bb, ldb, 0, c, ldc); err != nil {
			b.Fatal(err)
		}
	}
	flops := 2 * float64(m) * float64(n) * float64(k) * float64(b.N)
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(flops/cpu.Seconds()/1e9, "GFLOP/cpu-s")
	}
	sink += float64(c[0])
}

// BenchmarkGemm reports GFLOP/s (2mnk per product, per second of wall
// time, and per second of process CPU time: robust to other jobs' load, and
// per core at GOMAXPROCS=1) on
// // benchShapes, float32 and float64, with GOMAXPROCS goroutines. One core:
//
//	GOMAXPROCS=1 go test ./gemm -run '^$' -bench Gemm -benchtime 3x
func BenchmarkGemm(b *testing.B) {
	for _, s := range benchShapes {
		b.Run(fmt.Sprintf("%s/float32", s.name), func(b *testing.B) { benchGemm[float32](b, s.tA, s.tB, s.m, s.n, s.k) })
		b.Run(fmt.Sprintf("%s/float64", s.name), func(b *testing.B) { benchGemm[float64](b, s.tA, s.tB, s.m, s.n, s.k) })
	}
}
