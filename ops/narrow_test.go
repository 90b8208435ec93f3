package ops

import (
	gemmpkg "github.com/gdattn/gdattn/gemm"
	"math/rand/v2"
	"testing"
)

// TestMulAddRowsBits checks mulAddRows against MulAddRow row by row, bit
// for bit: every size class of the kernels (8-row and 4-row groups, the
// row tail; one and two vectors of columns, several chunks), rows of A and
// of Aᵀ, padded strides, acc on and off.
func TestMulAddRowsBits(t *testing.T) {
	testMulAddRowsBits[float32](t)
	testMulAddRowsBits[float64](t)
}

func testMulAddRowsBits[F float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, m := range []int{0, 1, 3, 4, 7, 8, 13, 126} {
		for _, n := range []int{1, 4, 5, 8, 9, 16, 20, 33} {
			for _, k := range []int{0, 1, 5, 126} {
				for _, trans := range []bool{false, true} {
					for _, acc := range []bool{false, true} {
						lda := k + 3 // A stored m×k (rows of A) or k×m (Aᵀ), padded
						rsA, incA, la := lda, 1, m*lda
						if trans {
							lda = m + 2
							rsA, incA, la = 1, lda, k*lda
						}
						ldb, ldc := n+1, n+2
						a, b := make([]F, la), make([]F, max(0, k*ldb))
						for i := range a {
							a[i] = F(rng.NormFloat64())
						}
						for i := range b {
							b[i] = F(rng.NormFloat64())
						}
						c0 := make([]F, m*ldc)
						for i := range c0 {
							c0[i] = F(rng.NormFloat64())
						}
						got, want := append([]F(nil), c0...), append([]F(nil), c0...)
						mulAddRows(m, n, k, a, rsA, incA, b, ldb, got, ldc, acc)
						for p := 0; p < m; p++ {
							if k == 0 {
								MulAddRow(want[p*ldc:], nil, incA, nil, ldb, k, n, acc)
								continue
							}
							MulAddRow(want[p*ldc:], a[p*rsA:], incA, b, ldb, k, n, acc)
						}
						for i := range got {
							if got[i] != want[i] {
								t.Fatalf("%T m %d n %d k %d trans %v acc %v: c[%d] = %v, want %v (MulAddRow)", got[i], m, n, k, trans, acc, i, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestMulAddRowsShort checks that mulAddRows refuses slices too short for
// the sizes (a panic, as a slice expression) instead of reading past them.
func TestMulAddRowsShort(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a too short")
		}
	}()
	mulAddRows(8, 5, 10, make([]float32, 79), 10, 1, make([]float32, 50), 5, make([]float32, 40), 5, false)
}

// TestNarrowBatchedBits checks the batched op's narrow path against
// gemm.GemmBatched bit for bit, every transpose combination, with a batch
// large enough to be spread over goroutines (run it with -race).
func TestNarrowBatchedBits(t *testing.T) {
	testNarrowBatchedBits[float32](t)
	testNarrowBatchedBits[float64](t)
}

func testNarrowBatchedBits[F float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, sz := range [][4]int{{126, 5, 125, 3}, {20, 16, 9, 3}, {9, 8, 40, 3}, {8, 1, 8, 3}, {51, 12, 50, 3}, {126, 5, 125, 80}} {
		m, n, k, batch := sz[0], sz[1], sz[2], sz[3]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				lda, ldb := k, n
				if tA {
					lda = m
				}
				if tB {
					ldb = k
				}
				a, b := make([]F, batch*m*k), make([]F, batch*k*n)
				for i := range a {
					a[i] = F(rng.NormFloat64())
				}
				for i := range b {
					b[i] = F(rng.NormFloat64())
				}
				got, want := make([]F, batch*m*n), make([]F, batch*m*n)
				if !narrowBatched(batch, tA, tB, m, n, k, a, lda, m*k, b, ldb, k*n, got) {
					if haveNarrowAVX2 && HaveRowKernel() && n <= narrowCols[F]() {
						t.Fatalf("%dx%dx%d: narrow path not taken", m, n, k)
					}
					continue
				}
				if err := gemmpkg.GemmBatched(batch, tA, tB, m, n, k, 1, a, lda, m*k, b, ldb, k*n, 0, want, n, m*n); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%T %dx%dx%d tA %v tB %v: c[%d] = %v, want %v (gemm)", got[i], m, n, k, tA, tB, i, got[i], want[i])
					}
				}
			}
		}
	}
}
