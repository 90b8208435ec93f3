package ops

import (
	"fmt"
	"math/rand/v2"
	"testing"

	gemmpkg "github.com/gdattn/gdattn/gemm"
)

// TestSeqGemmTBits checks the full head's per-sequence products A·Bᵀ
// (seqGemmT: mulAddRows on a copy of Bᵀ, or Gemm) against package gemm
// bit for bit: the head's sizes (T = 11, Tk = 10, k = 25), sizes around
// the kernels' row groups and column chunks, padded strides, and sizes it
// leaves to Gemm (fewer than four rows, more than 16 columns), with a
// reused scratch of any length.
func TestSeqGemmTBits(t *testing.T) {
	testSeqGemmTBits[float32](t)
	testSeqGemmTBits[float64](t)
}

func testSeqGemmTBits[F float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var bt []F
	for _, m := range []int{1, 3, 4, 5, 8, 11, 13, 126} {
		for _, n := range []int{1, 5, 8, 9, 10, 16, 17, 25} {
			for _, k := range []int{1, 5, 25, 50, 300} {
				lda, ldb := k+2, k+5
				a, b := make([]F, (m-1)*lda+k), make([]F, (n-1)*ldb+k)
				for i := range a {
					a[i] = F(rng.NormFloat64())
				}
				for i := range b {
					b[i] = F(rng.NormFloat64())
				}
				got, want := make([]F, m*n), make([]F, m*n)
				for i := range got {
					got[i] = F(rng.NormFloat64()) // overwritten
				}
				bt = seqGemmT(m, n, k, a, lda, b, ldb, got, bt)
				if err := gemmpkg.Gemm(false, true, m, n, k, 1, a, lda, b, ldb, 0, want, n); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%T m %d n %d k %d: c[%d] = %v, gemm %v", got[i], m, n, k, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// BenchmarkShortMatMul measures the TF's short float32 products (k = 5:
// the heads' d' = 5 projections, m = B·T or B rows, n = 25) on Gemm and
// on tokenGemm (mulAddRows' kernels), one thread.
func BenchmarkShortMatMul(b *testing.B) {
	for _, m := range []int{512, 5632} {
		for _, tB := range []bool{false, true} {
			n, k := 25, 5
			x, y, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
			for i := range x {
				x[i] = float32(i%7) - 3
			}
			for i := range y {
				y[i] = float32(i%5) - 2
			}
			ldb := n
			if tB {
				ldb = k
			}
			b.Run(fmt.Sprintf("m=%d/tB=%v/gemm", m, tB), func(b *testing.B) {
				for range b.N {
					Gemm(false, tB, m, n, k, 1, x, k, y, ldb, 0, c, n)
				}
			})
			b.Run(fmt.Sprintf("m=%d/tB=%v/token", m, tB), func(b *testing.B) {
				for range b.N {
					tokenGemm(tB, m, n, k, x, k, y, ldb, 0, c, n)
				}
			})
		}
	}
}
