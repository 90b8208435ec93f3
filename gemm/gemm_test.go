package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// naive is the reference product in float64: C = alpha·op(A)·op(B) +
// beta·C, and the bound Σ|alpha·a·b| + |beta·c| per element for the
// tolerance.
func naive[F Float](tA, tB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) (want, mag []float64) {
	want, mag = make([]float64, m*n), make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, g float64
			for l := 0; l < k; l++ {
				ai, bi := i*lda+l, l*ldb+j
				if tA {
					ai = l*lda + i
				}
				if tB {
					bi = j*ldb + l
				}
				av, bv := a[ai], b[bi]
				s += float64(av) * float64(bv)
				g += math.Abs(float64(av) * float64(bv))
			}
			cv := 0.0
			if beta != 0 {
				cv = float64(beta) * float64(c[i*ldc+j])
			}
			want[i*n+j] = float64(alpha)*s + cv
			mag[i*n+j] = math.Abs(float64(alpha))*g + math.Abs(cv)
		}
	}
	return want, mag
}

func eps[F Float]() float64 {
	var z F
	if _, ok := any(z).(float32); ok {
		return 0x1p-23
	}
	return 0x1p-52
}

func randSlice[F Float](n int, rng *rand.Rand) []F {
	s := make([]F, n)
	for i := range s {
		s[i] = F(rng.NormFloat64())
	}
	return s
}

// operands returns A, B and C for a product with leading dimensions padded
// by pad.
func operands[F Float](tA, tB bool, m, n, k, pad int, rng *rand.Rand) (a []F, lda int, b []F, ldb int, c []F, ldc int) {
	ar, ac := m, k
	if tA {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB {
		br, bc = n, k
	}
	lda, ldb, ldc = ac+pad, bc+pad, n+pad
	a = randSlice[F](max(0, (ar-1)*lda+ac), rng)
	b = randSlice[F](max(0, (br-1)*ldb+bc), rng)
	c = randSlice[F](max(0, (m-1)*ldc+n), rng)
	return
}

// compare checks got (C with stride ldc) against want within a few
// rounding errors of the magnitude bound.
func compare[F Float](t *testing.T, got []F, ldc int, want, mag []float64, m, n, k int) {
	t.Helper()
	tol := float64(k+4) * eps[F]()
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			g, w := float64(got[i*ldc+j]), want[i*n+j]
			if !(math.Abs(g-w) <= tol*(mag[i*n+j]+1e-300)) {
				t.Fatalf("C[%d,%d] = %v, want %v (bound %g)", i, j, g, w, tol*mag[i*n+j])
			}
		}
	}
}

var shapes = [][3]int{ // m, n, k
	{0, 0, 0}, {0, 5, 3}, {4, 0, 3}, {3, 4, 0}, {1, 1, 1}, {1, 7, 1}, {7, 1, 5},
	{2, 3, 4}, {5, 17, 3}, {11, 31, 13}, {12, 32, 7}, {13, 33, 9}, {6, 16, 5}, {7, 15, 8},
	{23, 47, 29}, {37, 65, 257}, {64, 64, 64}, {97, 41, 300}, {150, 70, 513}, {29, 530, 20},
	{145, 33, 17},
}

var scalars = [][2]float64{{1, 0}, {1, 1}, {0.5, 2}, {-1.5, 0}, {0, 3}}

func testGemm[F Float](t *testing.T, ks *kernels) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, pad := range []int{0, 3} {
					if pad > 0 && m*n*k > 1<<17 {
						continue // the large shapes once: the reference is slow
					}
					for _, ab := range scalars {
						alpha, beta := F(ab[0]), F(ab[1])
						name := fmt.Sprintf("%dx%dx%d/tA=%v/tB=%v/pad=%d/alpha=%v/beta=%v", m, n, k, tA, tB, pad, alpha, beta)
						a, lda, b, ldb, c, ldc := operands[F](tA, tB, m, n, k, pad, rng)
						if beta == 0 {
							for i := range c {
								c[i] = F(math.NaN()) // beta 0 overwrites
							}
						}
						want, mag := naive(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
						for _, threads := range []int{1, 3} {
							got := append([]F(nil), c...)
							gemm(ks, threads, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, got, ldc)
							t.Run(fmt.Sprintf("%s/threads=%d", name, threads), func(t *testing.T) {
								compare(t, got, ldc, want, mag, m, n, k)
								// Padding between rows is never written.
								for i := 0; i+1 < m; i++ {
									for j := n; j < ldc; j++ {
										if o := i*ldc + j; got[o] != c[o] && !(got[o] != got[o] && c[o] != c[o]) {
											t.Fatalf("padding C[%d] written: %v, was %v", o, got[o], c[o])
										}
									}
								}
							})
						}
					}
				}
			}
		}
	}
}

// lowerParallelMin lets small test products run over several goroutines;
// the returned function restores the threshold.
func lowerParallelMin() func() {
	old := minParallelFlops
	minParallelFlops = 64
	return func() { minParallelFlops = old }
}

// TestGemm compares every instruction set this machine runs (and the
// portable kernels) with the float64 reference over many shapes, every
// transpose, padded leading dimensions, alphas and betas, one and three
// goroutines.
func TestGemm(t *testing.T) {
	defer lowerParallelMin()()
	for _, ks := range available() {
		t.Run(ks.name+"/float32", func(t *testing.T) { testGemm[float32](t, ks) })
		t.Run(ks.name+"/float64", func(t *testing.T) { testGemm[float64](t, ks) })
	}
}

func testSameBits[F Float](t *testing.T, ks *kernels) {
	rng := rand.New(rand.NewPCG(3, 4))
	bl := pick[F](ks)
	for _, s := range [][3]int{{37, 45, 29}, {13, 70, 256}, {50, 33, 700}, {5, 9, 3}} {
		m, n, k := s[0], s[1], s[2]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, beta := range []F{0, 1} {
					if beta == 1 && k > bl.kc {
						continue // a longer product with beta 1 continues the chain from C
					}
					a, lda, b, ldb, c, ldc := operands[F](tA, tB, m, n, k, 1, rng)
					first := modeStore
					if beta == 1 {
						first = modeAdd
					}
					rows := append([]F(nil), c...)
					rowsProduct(bl, tA, tB, m, n, k, a, lda, b, ldb, beta == 1, rows, ldc)
					pk := append([]F(nil), c...)
					packed(bl, tA, tB, m, n, k, 1, a, lda, b, ldb, first, pk, ldc)
					par := append([]F(nil), c...)
					gemm(ks, 4, tA, tB, m, n, k, 1, a, lda, b, ldb, beta, par, ldc)
					for i := range rows {
						if rows[i] != pk[i] || rows[i] != par[i] {
							t.Fatalf("%v tA %v tB %v beta %v: element %d: rows %v, packed %v, 4 goroutines %v", s, tA, tB, beta, i, rows[i], pk[i], par[i])
						}
					}
				}
			}
		}
	}
}

// TestSameBits checks the package's promise on summation order: the row
// kernels, the packed kernels and a split over goroutines give the same
// bits (alpha 1, beta 0 or 1 within one KC slice).
func TestSameBits(t *testing.T) {
	defer lowerParallelMin()()
	for _, ks := range available() {
		t.Run(ks.name+"/float32", func(t *testing.T) { testSameBits[float32](t, ks) })
		t.Run(ks.name+"/float64", func(t *testing.T) { testSameBits[float64](t, ks) })
	}
}

func testDirectA[F Float](t *testing.T, ks *kernels) {
	bl := pick[F](ks)
	if bl.kernA == nil {
		t.Skip("no in-place kernel")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	// Partial last panels of A and edge slivers of B, several KC slices
	// and MC blocks, B one block wide (n ≤ NC) and wider.
	for _, s := range [][3]int{{37, 45, 29}, {48, 32, 600}, {bl.mc + 7, 19, 17}, {13, bl.nc, 260}, {20, bl.nc + 5, 40}} {
		m, n, k := s[0], s[1], s[2]
		for _, tB := range []bool{false, true} {
			for _, beta := range []F{0, 1} {
				for _, alpha := range []F{1, 0.5} {
					a, lda, b, ldb, c, ldc := operands[F](false, tB, m, n, k, 3, rng)
					first := firstMode(beta)
					got := append([]F(nil), c...)
					packed(bl, false, tB, m, n, k, alpha, a, lda, b, ldb, first, got, ldc)
					noA := *bl
					noA.kernA = nil
					want := append([]F(nil), c...)
					packed(&noA, false, tB, m, n, k, alpha, a, lda, b, ldb, first, want, ldc)
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("%v tB %v beta %v alpha %v: element %d: in place %v, packed %v", s, tB, beta, alpha, i, got[i], want[i])
						}
					}
					ref, mag := naive(false, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
					compare(t, got, ldc, ref, mag, m, n, k)
				}
			}
		}
	}
}

// TestKCStore checks that the depth of the KC slices of a product with beta
// 0 (kcStore) changes no bit, A packed or read in place.
func TestKCStore(t *testing.T) {
	for _, ks := range available() {
		t.Run(ks.name, func(t *testing.T) {
			bl := ks.f32
			rng := rand.New(rand.NewPCG(9, 10))
			for _, s := range [][3]int{{40, 37, 700}, {13, 600, 1100}, {19, 40, 300}} {
				m, n, k := s[0], s[1], s[2]
				for _, tA := range []bool{false, true} {
					for _, tB := range []bool{false, true} {
						a, lda, b, ldb, c, ldc := operands[float32](tA, tB, m, n, k, 2, rng)
						var want []float32
						for _, kcs := range []int{0, 64, 512, 1024} {
							cfg := bl
							cfg.kcStore = kcs
							got := append([]float32(nil), c...)
							packed(&cfg, tA, tB, m, n, k, 1, a, lda, b, ldb, modeStore, got, ldc)
							if want == nil {
								want = got
								ref, mag := naive(tA, tB, m, n, k, 1, a, lda, b, ldb, 0, c, ldc)
								compare(t, got, ldc, ref, mag, m, n, k)
								continue
							}
							for i := range want {
								if got[i] != want[i] {
									t.Fatalf("%v tA %v tB %v kcStore %d: element %d: %v, want %v", s, tA, tB, kcs, i, got[i], want[i])
								}
							}
						}
					}
				}
			}
		})
	}
}

// TestDirectA checks that the kernels reading A's micro-panels in place
// (n ≤ NC, A not transposed) give the same bits as the packed ones.
func TestDirectA(t *testing.T) {
	for _, ks := range available() {
		t.Run(ks.name+"/float32", func(t *testing.T) { testDirectA[float32](t, ks) })
		t.Run(ks.name+"/float64", func(t *testing.T) { testDirectA[float64](t, ks) })
	}
}

func testBatched[F Float](t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, s := range [][4]int{{0, 3, 3, 3}, {1, 4, 5, 6}, {7, 10, 5, 10}, {64, 3, 9, 2}, {3, 40, 70, 300}, {5, 1, 1, 1}} {
		batch, m, n, k := s[0], s[1], s[2], s[3]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, shareB := range []bool{false, true} {
					a1, lda, b1, ldb, c1, ldc := operands[F](tA, tB, m, n, k, 2, rng)
					sA, sB, sC := len(a1)+1, len(b1)+2, len(c1)+3
					a := randSlice[F](max(0, batch*sA), rng)
					b := randSlice[F](max(0, batch*sB), rng)
					c := randSlice[F](max(0, batch*sC), rng)
					if shareB {
						sB = 0
					}
					got := append([]F(nil), c...)
					if err := GemmBatched(batch, tA, tB, m, n, k, 0.5, a, lda, sA, b, ldb, sB, 1, got, ldc, sC); err != nil {
						t.Fatal(err)
					}
					for i := 0; i < batch; i++ {
						want, mag := naive(tA, tB, m, n, k, 0.5, a[i*sA:], lda, b[i*sB:], ldb, 1, c[i*sC:], ldc)
						compare(t, got[i*sC:], ldc, want, mag, m, n, k)
						for j := i*sC + (m-1)*ldc + n; j < min(len(c), (i+1)*sC); j++ {
							if got[j] != c[j] {
								t.Fatalf("%v: element %d between products written", s, j)
							}
						}
					}
				}
			}
		}
	}
}

// TestGemmBatched checks the strided-batched product (a shared B included)
// against the reference, element by element.
func TestGemmBatched(t *testing.T) {
	defer lowerParallelMin()()
	t.Run("float32", testBatched[float32])
	t.Run("float64", testBatched[float64])
}

// TestErrors checks that bad sizes, leading dimensions, strides and short
// slices give an error and leave C alone.
func TestErrors(t *testing.T) {
	a, b := make([]float64, 6), make([]float64, 6)
	c := []float64{7, 7, 7, 7}
	cases := []struct {
		name string
		err  error
	}{
		{"negative m", Gemm(false, false, -1, 2, 3, 1, a, 3, b, 2, 0, c, 2)},
		{"negative k", Gemm(false, false, 2, 2, -3, 1, a, 3, b, 2, 0, c, 2)},
		{"lda", Gemm(false, false, 2, 2, 3, 1, a, 2, b, 2, 0, c, 2)},
		{"ldb transposed", Gemm(false, true, 2, 2, 3, 1, a, 3, b, 2, 0, c, 2)},
		{"ldc", Gemm(false, false, 2, 2, 3, 1, a, 3, b, 2, 0, c, 1)},
		{"short a", Gemm(false, false, 2, 2, 3, 1, a[:5], 3, b, 2, 0, c, 2)},
		{"short b", Gemm(false, false, 2, 2, 3, 1, a, 3, b[:5], 2, 0, c, 2)},
		{"short c", Gemm(false, false, 2, 2, 3, 1, a, 3, b, 2, 0, c[:3], 2)},
		{"negative stride", GemmBatched(2, false, false, 2, 2, 3, 1, a, 3, -1, b, 2, 0, 0, c, 2, 4)},
		{"short batch", GemmBatched(2, false, false, 2, 2, 3, 1, a, 3, 0, b, 2, 0, 0, c, 2, 4)},
		{"overlapping C", GemmBatched(2, false, false, 1, 2, 3, 1, a, 3, 0, b, 2, 0, 0, c, 2, 1)},
		{"overflowing size", Gemm(false, false, 2, 1<<40, 1<<40, 1, a, 1<<40, b, 1<<40, 0, c, 1<<40)},
		{"overflowing stride", GemmBatched(1<<20, false, false, 2, 2, 3, 1, a, 3, 1<<50, b, 2, 0, 0, c, 2, 4)},
		{"MulAddRow short b", MulAddRow(c, a, 1, b, 2, 4, 2, false)},
		{"MulAddRow negative", MulAddRow(c, a, -1, b, 2, 2, 2, false)},
	}
	for _, tc := range cases {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	for _, v := range c {
		if v != 7 {
			t.Fatalf("C written by a failing call: %v", c)
		}
	}
	if err := Gemm(false, false, 0, 0, 0, 1, []float32(nil), 1, nil, 1, 0, nil, 1); err != nil {
		t.Errorf("empty product: %v", err)
	}
	// k = 0 reads neither A nor B, whatever their strides: C = beta·C.
	c2 := []float64{1, 2, 3, 4}
	if err := GemmBatched(2, false, false, 1, 2, 0, 1, nil, 1, 5, nil, 2, 7, 3, c2, 2, 2); err != nil || c2[0] != 3 || c2[3] != 12 {
		t.Errorf("batched k = 0: %v, C %v, want [3 6 9 12]", err, c2)
	}
}

// TestMulAddRow checks the row update against the reference, strided
// left factor, set and accumulate.
func TestMulAddRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, s := range [][3]int{{1, 1, 1}, {5, 33, 2}, {17, 70, 3}, {0, 4, 1}} {
		k, n, inca := s[0], s[1], s[2]
		a := randSlice[float64](max(1, (k-1)*inca+1), rng)
		b := randSlice[float64](k*(n+1), rng)
		c := randSlice[float64](n, rng)
		for _, acc := range []bool{false, true} {
			got := append([]float64(nil), c...)
			if err := MulAddRow(got, a, inca, b, n+1, k, n, acc); err != nil {
				t.Fatal(err)
			}
			for j := 0; j < n; j++ {
				var w float64
				if acc {
					w = c[j]
				}
				for l := 0; l < k; l++ {
					w += a[l*inca] * b[l*(n+1)+j]
				}
				if math.Abs(got[j]-w) > 1e-12*(1+math.Abs(w)) {
					t.Fatalf("k %d n %d acc %v: c[%d] = %v, want %v", k, n, acc, j, got[j], w)
				}
			}
		}
	}
}

// FuzzGemm compares random small products (every instruction set) with
// the reference.
func FuzzGemm(f *testing.F) {
	f.Add(uint8(3), uint8(5), uint8(7), uint8(0), uint8(1), uint64(1))
	f.Add(uint8(13), uint8(33), uint8(40), uint8(3), uint8(2), uint64(2))
	f.Fuzz(func(t *testing.T, m8, n8, k8, flags, pad8 uint8, seed uint64) {
		m, n, k, pad := int(m8%40), int(n8%70), int(k8)*3%300+int(k8%3), int(pad8%4)
		tA, tB := flags&1 != 0, flags&2 != 0
		alpha, beta := float32(1), float32(flags>>2&1)
		if flags&8 != 0 {
			alpha, beta = 0.75, -0.5
		}
		defer lowerParallelMin()()
		rng := rand.New(rand.NewPCG(seed, 9))
		a, lda, b, ldb, c, ldc := operands[float32](tA, tB, m, n, k, pad, rng)
		want, mag := naive(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		for _, ks := range available() {
			got := append([]float32(nil), c...)
			gemm(ks, 2, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, got, ldc)
			compare(t, got, ldc, want, mag, m, n, k)
		}
	})
}
