package ops

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	gemmpkg "github.com/gdattn/gdattn/gemm"
)

// TestMulAddRowsBits checks mulAddRows against MulAddRow row by row, bit
// for bit: every size class of the kernels (8-row and 4-row groups, the
// row tail; one and two vectors of columns, several chunks; deep products
// taken a slice of k at a time), rows of A and of Aᵀ, padded strides, acc
// on and off.
func TestMulAddRowsBits(t *testing.T) {
	testMulAddRowsBits[float32](t)
	testMulAddRowsBits[float64](t)
}

func testMulAddRowsBits[F float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, m := range []int{0, 1, 2, 3, 4, 6, 7, 8, 10, 11, 13, 16, 19, 126} {
		for _, n := range []int{1, 4, 5, 8, 9, 16, 20, 33} {
			// k = 600: deep products, taken a slice of k at a time
			// (mulAddRowsDeep32) for m ≥ 16 and n > 16 in float32.
			for _, k := range []int{0, 1, 5, 126, 128, 129, 600} {
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
// gemm.GemmBatched bit for bit, every transpose combination, the GD
// blocks' shallow products (k < 8) and one-row products among them, with a batch
// large enough to be spread over goroutines (run it with -race).
func TestNarrowBatchedBits(t *testing.T) {
	testNarrowBatchedBits[float32](t)
	testNarrowBatchedBits[float64](t)
}

func testNarrowBatchedBits[F float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, sz := range [][4]int{{126, 5, 125, 3}, {20, 16, 9, 3}, {9, 8, 40, 3}, {8, 1, 8, 3}, {51, 12, 50, 3}, {126, 5, 125, 80},
		{11, 10, 5, 7}, {10, 5, 1, 7}, {4, 3, 2, 3}, {1, 10, 5, 7}, {1, 20, 7, 3}, {1, 3, 1, 2}} {
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
					if haveNarrowAVX2 && HaveRowKernel() && (m >= 4 && n <= narrowCols[F]() || m == 1 && tB && is32[F]()) {
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

// TestNarrowGemmBits checks Gemm's narrow path (narrowGemm) against package
// gemm bit for bit: every transpose combination, padded strides, beta 0
// at depths past one KC slice (256) and beta 1 within one, the products it
// takes (n ≤ 16 with m ≥ 4; in float32 deep Aᵀ·B with m·n ≤ 2048) and some
// it leaves to gemm (which must then give gemm's result too).
func TestNarrowGemmBits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	testNarrowGemmBits[float32](t)
	testNarrowGemmBits[float64](t)
}

func testNarrowGemmBits[F float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type shape struct{ m, n, k int }
	shapes := []shape{{4, 1, 1}, {5, 5, 25}, {11, 10, 25}, {8, 16, 3}, {13, 16, 300}, {64, 5, 25}, {100, 7, 1030},
		{25, 5, 1100}, {5, 25, 1100}, {25, 50, 1030}, {3, 5, 25}, {12, 17, 25}, {40, 64, 1024},
		// Large enough to be split over two goroutines (GOMAXPROCS is at
		// least 2 in this test): the TF heads' dh, and a tall narrow one.
		{25, 50, 5632}, {1001, 16, 300}}
	took := 0
	for _, s := range shapes {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, beta := range []F{0, 1} {
					if beta == 1 && s.k > 256 {
						continue // narrowGemm leaves these to gemm; checked below
					}
					ra, ca, rb, cb := s.m, s.k, s.k, s.n
					if tA {
						ra, ca = s.k, s.m
					}
					if tB {
						rb, cb = s.n, s.k
					}
					lda, ldb, ldc := ca+2, cb+1, s.n+3
					a, b := make([]F, (ra-1)*lda+ca), make([]F, (rb-1)*ldb+cb)
					for i := range a {
						a[i] = F(rng.NormFloat64())
					}
					for i := range b {
						b[i] = F(rng.NormFloat64())
					}
					c0 := make([]F, (s.m-1)*ldc+s.n)
					for i := range c0 {
						c0[i] = F(rng.NormFloat64())
					}
					got, want := append([]F(nil), c0...), append([]F(nil), c0...)
					if narrowGemm(tA, tB, s.m, s.n, s.k, 1, a, lda, b, ldb, beta, got, ldc) {
						took++
					} else {
						Gemm(tA, tB, s.m, s.n, s.k, 1, a, lda, b, ldb, beta, got, ldc)
					}
					if err := gemmpkg.Gemm(tA, tB, s.m, s.n, s.k, 1, a, lda, b, ldb, beta, want, ldc); err != nil {
						t.Fatal(err)
					}
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("%T %v tA %v tB %v beta %v: c[%d] = %v, gemm %v", got[i], s, tA, tB, beta, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
	if haveNarrowAVX2 && HaveRowKernel() && took == 0 {
		t.Fatalf("%T: narrowGemm took none of the products", F(0))
	}
	// What it must refuse: alpha ≠ 1, beta 1 deeper than one KC slice,
	// fewer than 4 rows, a leading dimension too small.
	a, b, c := make([]F, 8*300), make([]F, 300*8), make([]F, 64)
	for _, tc := range []struct {
		name          string
		m, n, k       int
		alpha, beta   F
		lda, ldb, ldc int
	}{
		{"alpha 2", 8, 8, 10, 2, 0, 10, 8, 8},
		{"beta 1, k 300", 8, 8, 300, 1, 1, 300, 8, 8},
		{"beta 0.5", 8, 8, 10, 1, 0.5, 10, 8, 8},
		{"3 rows", 3, 8, 10, 1, 0, 10, 8, 8},
		{"lda below k", 8, 8, 10, 1, 0, 9, 8, 8},
		{"ldc below n", 8, 8, 10, 1, 0, 10, 8, 7},
	} {
		if narrowGemm(false, false, tc.m, tc.n, tc.k, tc.alpha, a, tc.lda, b, tc.ldb, tc.beta, c, tc.ldc) {
			t.Errorf("%T: narrowGemm took %s", F(0), tc.name)
		}
	}
}

// TestNarrowGemmMisfit checks that Gemm still panics (gemm's check) for a
// narrow product whose slices do not fit, instead of computing it.
func TestNarrowGemmMisfit(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a too short")
		}
	}()
	Gemm(false, false, 8, 5, 10, 1, make([]float32, 79), 10, make([]float32, 50), 5, 0, make([]float32, 40), 5)
}

// BenchmarkNarrowGemm times Gemm (whose narrow products run on
// mulAddRows' kernels) against package gemm directly on the products of the
// Trained TF at N = 10 (batch 512: M = 5632 token rows, d' = 5, C = 25,
// token width 25): one thread,
//
//	GOMAXPROCS=1 go test ./ops -run '^$' -bench NarrowGemm
func BenchmarkNarrowGemm(b *testing.B) {
	for _, s := range []struct {
		tA, tB  bool
		m, n, k int
	}{
		{false, true, 11, 10, 25}, {false, true, 5632, 5, 25}, {false, false, 5632, 5, 25},
		{true, false, 25, 5, 5632}, {true, false, 5, 25, 5632}, {true, false, 25, 50, 5632},
	} {
		a, lda, bb, ldb, c := gemmOperands(s.tA, s.tB, s.m, s.n, s.k)
		name := fmt.Sprintf("tA=%v/tB=%v/%dx%dx%d", s.tA, s.tB, s.m, s.n, s.k)
		b.Run(name+"/ops", func(b *testing.B) {
			for range b.N {
				Gemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
			}
		})
		b.Run(name+"/gemm", func(b *testing.B) {
			for range b.N {
				if err := gemmpkg.Gemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestTokenGemmBits checks the attention head's token-sized products
// (tokenGemm: mulAddRows for float32 with m ≥ 16 and k ≤ 256, else gemm)
// against package gemm bit for bit: the head's widths, op(B) = B and Bᵀ,
// beta 0 and 1, padded strides, and sizes it leaves to gemm.
func TestTokenGemmBits(t *testing.T) {
	testTokenGemmBits[float32](t)
	testTokenGemmBits[float64](t)
}

func testTokenGemmBits[F float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, m := range []int{5, 16, 110, 257} {
		for _, n := range []int{5, 10, 25, 50} {
			for _, k := range []int{1, 5, 25, 50, 300} {
				for _, tB := range []bool{false, true} {
					for _, beta := range []F{0, 1} {
						rb, cb := k, n
						if tB {
							rb, cb = n, k
						}
						lda, ldb, ldc := k+2, cb+1, n+3
						a, b := make([]F, (m-1)*lda+k), make([]F, (rb-1)*ldb+cb)
						for i := range a {
							a[i] = F(rng.NormFloat64())
						}
						for i := range b {
							b[i] = F(rng.NormFloat64())
						}
						c0 := make([]F, (m-1)*ldc+n)
						for i := range c0 {
							c0[i] = F(rng.NormFloat64())
						}
						got, want := append([]F(nil), c0...), append([]F(nil), c0...)
						tokenGemm(tB, m, n, k, a, lda, b, ldb, beta, got, ldc)
						if err := gemmpkg.Gemm(false, tB, m, n, k, 1, a, lda, b, ldb, beta, want, ldc); err != nil {
							t.Fatal(err)
						}
						for i := range got {
							if got[i] != want[i] {
								t.Fatalf("%T m %d n %d k %d tB %v beta %v: c[%d] = %v, gemm %v", got[i], m, n, k, tB, beta, i, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}
