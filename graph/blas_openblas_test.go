//go:build openblas

package graph

import (
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestOpenBLASMatchesGonum compares OpenBLAS's products with gonum's on
// every transpose combination, and checks that G.Mul goes through it.
func TestOpenBLASMatchesGonum(t *testing.T) {
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			const m, n, k = 37, 29, 53
			a, lda, b, ldb, c := gemmOperands(tA, tB, m, n, k)
			want := append([]float32(nil), c...)
			ta, tb := blas.NoTrans, blas.NoTrans
			if tA {
				ta = blas.Trans
			}
			if tB {
				tb = blas.Trans
			}
			for i := range c {
				c[i], want[i] = float32(i%5), float32(i%5)
			}
			gonum.Implementation{}.Sgemm(ta, tb, m, n, k, 0.5, a, lda, b, ldb, 2, want, n)
			sgemmOpenBLAS(ta, tb, m, n, k, 0.5, a, lda, b, ldb, 2, c, n)
			for i := range c {
				if math.Abs(float64(c[i]-want[i])) > 1e-4*(1+math.Abs(float64(want[i]))) {
					t.Fatalf("tA %v tB %v: element %d: %v, gonum %v", tA, tB, i, c[i], want[i])
				}
			}
		}
	}
	if _, ok := G.WhichBLAS().(openBLAS); !ok {
		t.Errorf("Gorgonia's BLAS is %T, want openBLAS", G.WhichBLAS())
	}
	x := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))
	y := tensor.New(tensor.WithShape(3, 1), tensor.WithBacking([]float64{1, 1, 1}))
	z, err := tensor.MatMul(x, y)
	if err != nil || fmt.Sprint(z.Data()) != "[6 15]" {
		t.Errorf("tensor.MatMul through OpenBLAS: %v, %v", z, err)
	}
}

// BenchmarkSgemmOpenBLAS times OpenBLAS's Sgemm on gemmShapes (compare
// with BenchmarkSgemm's gonum rows):
//
//	GOMAXPROCS=1 go test -tags openblas ./graph -run '^$' -bench Sgemm
func BenchmarkSgemmOpenBLAS(b *testing.B) {
	for _, s := range gemmShapes {
		a, lda, bb, ldb, c := gemmOperands(s.tA, s.tB, s.m, s.n, s.k)
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		ta, tb := blas.NoTrans, blas.NoTrans
		if s.tA {
			ta = blas.Trans
		}
		if s.tB {
			tb = blas.Trans
		}
		b.Run(s.name, func(b *testing.B) {
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				sgemmOpenBLAS(ta, tb, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
			}
			reportGFLOPs(b, flops, cpu0)
		})
	}
}
