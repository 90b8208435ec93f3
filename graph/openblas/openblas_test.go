//go:build openblas

package openblas

import (
	"fmt"
	"math"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func operands(tA, tB bool, m, n, k int) (a []float32, lda int, b []float32, ldb int, c []float32) {
	rng := rand.New(rand.NewPCG(1, 2))
	a, b, c = make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	for i := range a {
		a[i] = float32(rng.NormFloat64())
	}
	for i := range b {
		b[i] = float32(rng.NormFloat64())
	}
	lda, ldb = k, n
	if tA {
		lda = m
	}
	if tB {
		ldb = k
	}
	return a, lda, b, ldb, c
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// TestMatchesGonum compares OpenBLAS's products with gonum's on every
// transpose combination, and checks that Gorgonia's products go through it.
func TestMatchesGonum(t *testing.T) {
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			const m, n, k = 37, 29, 53
			a, lda, b, ldb, c := operands(tA, tB, m, n, k)
			want := make([]float32, len(c))
			for i := range c {
				c[i], want[i] = float32(i%5), float32(i%5)
			}
			gonum.Implementation{}.Sgemm(trans(tA), trans(tB), m, n, k, 0.5, a, lda, b, ldb, 2, want, n)
			Implementation{}.Sgemm(trans(tA), trans(tB), m, n, k, 0.5, a, lda, b, ldb, 2, c, n)
			for i := range c {
				if math.Abs(float64(c[i]-want[i])) > 1e-4*(1+math.Abs(float64(want[i]))) {
					t.Fatalf("tA %v tB %v: element %d: %v, gonum %v", tA, tB, i, c[i], want[i])
				}
			}
		}
	}
	if _, ok := G.WhichBLAS().(Implementation); !ok {
		t.Errorf("Gorgonia's BLAS is %T, want openblas.Implementation", G.WhichBLAS())
	}
	x := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))
	y := tensor.New(tensor.WithShape(3, 1), tensor.WithBacking([]float64{1, 1, 1}))
	z, err := tensor.MatMul(x, y)
	if err != nil || fmt.Sprint(z.Data()) != "[6 15]" {
		t.Errorf("tensor.MatMul through OpenBLAS: %v, %v", z, err)
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSgemm times OpenBLAS's Sgemm on the shapes of graph's
// BenchmarkSgemm (the 512³ product and the tied output layer's products),
// reporting GFLOP per second of wall time and of process CPU time:
//
//	GOMAXPROCS=1 go test -tags openblas ./graph/openblas -run '^$' -bench Sgemm
func BenchmarkSgemm(b *testing.B) {
	for _, s := range []struct {
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
	} {
		a, lda, bb, ldb, c := operands(s.tA, s.tB, s.m, s.n, s.k)
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		b.Run(s.name, func(b *testing.B) {
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				Implementation{}.Sgemm(trans(s.tA), trans(s.tB), s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			if cpu := cpuTime() - cpu0; cpu > 0 {
				b.ReportMetric(flops*float64(b.N)/cpu.Seconds()/1e9, "GFLOP/cpu-s")
			}
		})
	}
}
