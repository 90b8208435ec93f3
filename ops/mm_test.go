package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestMatMul compares every transpose combination with a plain-Go product
// and checks the gradients against finite differences (float64, float32).
func TestMatMul(t *testing.T) {
	const M, K, N = 4, 3, 5
	for _, ta := range []bool{false, true} {
		for _, tb := range []bool{false, true} {
			t.Run(fmt.Sprintf("transA=%v/transB=%v", ta, tb), func(t *testing.T) {
				ash, bsh := tensor.Shape{M, K}, tensor.Shape{K, N}
				if ta {
					ash = tensor.Shape{K, M}
				}
				if tb {
					bsh = tensor.Shape{N, K}
				}
				build := func(s *graph.Scope) (*G.Node, error) {
					a, _ := s.Param("a", ash, graph.Normal(1))
					b, _ := s.Param("b", bsh, graph.Normal(1))
					c, err := ops.MatMul(a, b, ta, tb)
					if err != nil {
						return nil, err
					}
					w, _ := s.Const("w", tensor.Shape{M, N}, graphtest.RandValues(s, M*N))
					return G.Sum(G.Must(G.HadamardProd(c, w)))
				}
				graphtest.CheckGrad(t, build, graphtest.Options{Seed: 2})
				graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 2})
				s, _ := graph.NewScope(graph.Float64, 5)
				a, _ := s.Param("a", ash, graph.Normal(1))
				b, _ := s.Param("b", bsh, graph.Normal(1))
				c, err := ops.MatMul(a, b, ta, tb)
				if err != nil {
					t.Fatal(err)
				}
				vm := G.NewTapeMachine(s.Graph())
				defer vm.Close()
				if err := vm.RunAll(); err != nil {
					t.Fatal(err)
				}
				av, _ := graph.Values(a)
				bv, _ := graph.Values(b)
				cv, _ := graph.Values(c)
				want := make([]float64, M*N)
				for i := 0; i < M; i++ {
					for j := 0; j < N; j++ {
						for k := 0; k < K; k++ {
							x, y := av[i*K+k], bv[k*N+j]
							if ta {
								x = av[k*M+i]
							}
							if tb {
								y = bv[j*K+k]
							}
							want[i*N+j] += x * y
						}
					}
				}
				graphtest.AllClose(t, "matmul", cv, want, 1e-12)
			})
		}
	}
}

func TestMatMulErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	a, _ := s.Param("a", tensor.Shape{2, 3}, graph.Normal(1))
	b, _ := s.Param("b", tensor.Shape{2, 3}, graph.Normal(1))
	v, _ := s.Param("v", tensor.Shape{3}, graph.Normal(1))
	if _, err := ops.MatMul(a, b, false, false); err == nil {
		t.Error("MatMul of (2,3)·(2,3): no error")
	}
	if _, err := ops.MatMul(a, v, false, false); err == nil {
		t.Error("MatMul with a vector: no error")
	}
	if _, err := ops.MatMul(nil, b, false, false); err == nil {
		t.Error("MatMul of nil: no error")
	}
	if _, err := ops.MatMul(a, b, false, true); err != nil {
		t.Errorf("MatMul(a, bᵀ): %v", err)
	}
}

// TestConcatLast checks values and gradients of a 3-input concatenation of
// rank-3 nodes.
func TestConcatLast(t *testing.T) {
	build := func(s *graph.Scope) (*G.Node, error) {
		a, _ := s.Param("a", tensor.Shape{2, 3, 1}, graph.Normal(1))
		b, _ := s.Param("b", tensor.Shape{2, 3, 2}, graph.Normal(1))
		c, _ := s.Param("c", tensor.Shape{2, 3, 3}, graph.Normal(1))
		x, err := ops.ConcatLast(a, b, c)
		if err != nil {
			return nil, err
		}
		w, _ := s.Const("w", tensor.Shape{2, 3, 6}, graphtest.RandValues(s, 36))
		return G.Sum(G.Must(G.HadamardProd(x, w)))
	}
	graphtest.CheckGrad(t, build, graphtest.Options{Seed: 3})
	graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 3})
	s, _ := graph.NewScope(graph.Float64, 5)
	a, _ := s.Param("a", tensor.Shape{2, 1}, graph.Normal(1))
	b, _ := s.Param("b", tensor.Shape{2, 2}, graph.Normal(1))
	x, err := ops.ConcatLast(a, b)
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(s.Graph())
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	av, _ := graph.Values(a)
	bv, _ := graph.Values(b)
	xv, _ := graph.Values(x)
	want := []float64{av[0], bv[0], bv[1], av[1], bv[2], bv[3]}
	graphtest.AllClose(t, "concat", xv, want, 0)
	if _, err := ops.ConcatLast(a, x); err != nil {
		t.Errorf("ConcatLast((2,1), (2,3)): %v", err)
	}
	c, _ := s.Param("c", tensor.Shape{3, 1}, graph.Normal(1))
	if _, err := ops.ConcatLast(a, c); err == nil {
		t.Error("ConcatLast((2,1), (3,1)): no error")
	}
	// Mixed ranks with the same rows: (2, 3, 1) and (6, 2) give (2, 3, 3).
	mixed := func(s *graph.Scope) (*G.Node, error) {
		a, _ := s.Param("a", tensor.Shape{2, 3, 1}, graph.Normal(1))
		b, _ := s.Param("b", tensor.Shape{6, 2}, graph.Normal(1))
		x, err := ops.ConcatLast(a, b)
		if err != nil {
			return nil, err
		}
		if !x.Shape().Eq(tensor.Shape{2, 3, 3}) {
			return nil, fmt.Errorf("shape %v, want (2, 3, 3)", x.Shape())
		}
		w, _ := s.Const("w", tensor.Shape{2, 3, 3}, graphtest.RandValues(s, 18))
		return G.Sum(G.Must(G.HadamardProd(x, w)))
	}
	graphtest.CheckGrad(t, mixed, graphtest.Options{Seed: 5})
	graphtest.CheckGrad32(t, mixed, graphtest.Options{Seed: 5})
}

// TestGemm compares Gemm with a plain-Go product on the shapes that take its
// special paths (thin B, thin results, bands of rows at GOMAXPROCS = 1), for
// every transpose combination, (alpha, beta) = (2, 0), (2, 0.5) (BLAS) and
// (1, 0), (1, 1) (the row kernels), float64 and float32.
func TestGemm(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	rng := rand.New(rand.NewPCG(7, 1))
	shapes := [][3]int{{300, 5, 25}, {300, 25, 5}, {25, 5, 300}, {5, 25, 300}, {300, 50, 25}, {4, 5, 3}}
	for _, sh := range shapes {
		m, n, k := sh[0], sh[1], sh[2]
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				for _, ab := range [][2]float64{{2, 0}, {2, 0.5}, {1, 0}, {1, 1}} {
					alpha, beta := ab[0], ab[1]
					a := make([]float64, m*k)
					b := make([]float64, k*n)
					c := make([]float64, m*n)
					for _, s := range [][]float64{a, b, c} {
						for i := range s {
							s[i] = rng.NormFloat64()
						}
					}
					lda, ldb := k, n
					at := func(i, l int) float64 { return a[i*k+l] }
					bt := func(l, j int) float64 { return b[l*n+j] }
					if ta {
						lda = m
						at = func(i, l int) float64 { return a[l*m+i] }
					}
					if tb {
						ldb = k
						bt = func(l, j int) float64 { return b[j*k+l] }
					}
					want := make([]float64, m*n)
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							var s float64
							for l := 0; l < k; l++ {
								s += at(i, l) * bt(l, j)
							}
							want[i*n+j] = alpha*s + beta*c[i*n+j]
						}
					}
					name := fmt.Sprintf("%dx%dx%d/tA=%v/tB=%v/alpha=%v/beta=%v", m, n, k, ta, tb, alpha, beta)
					got := append([]float64(nil), c...)
					ops.Gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, got, n)
					graphtest.AllClose(t, name, got, want, 1e-12)
					a32, b32, c32 := to32(a), to32(b), to32(c)
					ops.Gemm(ta, tb, m, n, k, float32(alpha), a32, lda, b32, ldb, float32(beta), c32, n)
					got32 := make([]float64, len(c32))
					for i, v := range c32 {
						got32[i] = float64(v)
					}
					graphtest.AllClose(t, name+"/float32", got32, want, 1e-3)
				}
			}
		}
	}
}

func to32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// TestMatMulRank3 checks (B, T, K)·(K, N) and (B, T, K)·(N, K)ᵀ, whose
// gradients take the rank-3 aᵀ·b form, against finite differences, and the
// shape rules.
func TestMatMulRank3(t *testing.T) {
	for _, tb := range []bool{false, true} {
		build := func(s *graph.Scope) (*G.Node, error) {
			a, _ := s.Param("a", tensor.Shape{2, 3, 4}, graph.Normal(1))
			bsh := tensor.Shape{4, 5}
			if tb {
				bsh = tensor.Shape{5, 4}
			}
			b, _ := s.Param("b", bsh, graph.Normal(1))
			c, err := ops.MatMul(a, b, false, tb)
			if err != nil {
				return nil, err
			}
			if !c.Shape().Eq(tensor.Shape{2, 3, 5}) {
				return nil, fmt.Errorf("shape %v, want (2, 3, 5)", c.Shape())
			}
			w, _ := s.Const("w", tensor.Shape{2, 3, 5}, graphtest.RandValues(s, 30))
			return G.Sum(G.Must(G.HadamardProd(c, w)))
		}
		graphtest.CheckGrad(t, build, graphtest.Options{Seed: 4})
		graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 4})
	}
	s, _ := graph.NewScope(graph.Float64, 1)
	a, _ := s.Param("a", tensor.Shape{2, 3, 4}, graph.Normal(1))
	b, _ := s.Param("b", tensor.Shape{2, 3, 5}, graph.Normal(1))
	w, _ := s.Param("w", tensor.Shape{6, 4}, graph.Normal(1))
	if c, err := ops.MatMul(a, b, true, false); err != nil || !c.Shape().Eq(tensor.Shape{4, 5}) {
		t.Errorf("MatMul((2,3,4)ᵀ, (2,3,5)) = %v, %v; want shape (4, 5)", c, err)
	}
	if _, err := ops.MatMul(w, b, true, false); err == nil {
		t.Error("MatMul((6,4)ᵀ, (2,3,5)): no error")
	}
	if _, err := ops.MatMul(a, w, true, false); err == nil {
		t.Error("MatMul((2,3,4)ᵀ, (6,4)): no error")
	}
}

// TestGemmRows32 checks the float32 row kernel path of Gemm (alpha 1, beta
// 0 or 1) on column counts around its vector width and chunk size, with a
// padded C whose padding must stay untouched, against a float64 product.
func TestGemmRows32(t *testing.T) {
	t.Logf("AVX2/FMA row kernel in use: %v", ops.HaveRowKernel())
	rng := rand.New(rand.NewPCG(8, 1))
	for _, n := range []int{1, 5, 7, 8, 9, 25, 31, 32, 33, 50, 64, 65, 100} {
		for _, k := range []int{1, 5, 25} {
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					for _, beta := range []float32{0, 1} {
						const m = 7
						ldc := n + 3
						a := make([]float32, m*k)
						b := make([]float32, k*n)
						c := make([]float32, m*ldc)
						for _, s := range [][]float32{a, b, c} {
							for i := range s {
								s[i] = float32(rng.NormFloat64())
							}
						}
						c0 := append([]float32(nil), c...)
						lda, ldb := k, n
						at := func(i, l int) float64 { return float64(a[i*k+l]) }
						bt := func(l, j int) float64 { return float64(b[l*n+j]) }
						if ta {
							lda = m
							at = func(i, l int) float64 { return float64(a[l*m+i]) }
						}
						if tb {
							ldb = k
							bt = func(l, j int) float64 { return float64(b[j*k+l]) }
						}
						ops.Gemm(ta, tb, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
						for i := 0; i < m; i++ {
							for j := 0; j < ldc; j++ {
								got := float64(c[i*ldc+j])
								if j >= n {
									if got != float64(c0[i*ldc+j]) {
										t.Fatalf("n=%d k=%d tA=%v tB=%v beta=%v: padding C[%d,%d] changed", n, k, ta, tb, beta, i, j)
									}
									continue
								}
								want := float64(beta) * float64(c0[i*ldc+j])
								for l := 0; l < k; l++ {
									want += at(i, l) * bt(l, j)
								}
								if math.Abs(got-want) > 1e-4*(1+math.Abs(want)) {
									t.Fatalf("n=%d k=%d tA=%v tB=%v beta=%v: C[%d,%d] = %v, want %v", n, k, ta, tb, beta, i, j, got, want)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestMulAddRow checks MulAddRow in float64 and float32 (the AVX2 kernel
// where present) with a strided left factor, overwriting and accumulating.
func TestMulAddRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 1))
	const k, n, inca, ldb = 11, 37, 3, 40
	a := make([]float64, (k-1)*inca+1)
	b := make([]float64, (k-1)*ldb+n)
	c := make([]float64, n)
	for _, s := range [][]float64{a, b, c} {
		for i := range s {
			s[i] = rng.NormFloat64()
		}
	}
	for _, acc := range []bool{false, true} {
		want := make([]float64, n)
		for j := range want {
			if acc {
				want[j] = c[j]
			}
			for l := 0; l < k; l++ {
				want[j] += a[l*inca] * b[l*ldb+j]
			}
		}
		got := append([]float64(nil), c...)
		ops.MulAddRow(got, a, inca, b, ldb, k, n, acc)
		graphtest.AllClose(t, fmt.Sprintf("float64/acc=%v", acc), got, want, 1e-12)
		c32 := to32(c)
		ops.MulAddRow(c32, to32(a), inca, to32(b), ldb, k, n, acc)
		got32 := make([]float64, n)
		for i, v := range c32 {
			got32[i] = float64(v)
		}
		graphtest.AllClose(t, fmt.Sprintf("float32/acc=%v", acc), got32, want, 1e-4)
	}
	defer func() {
		if recover() == nil {
			t.Error("MulAddRow with a short b: no panic")
		}
	}()
	ops.MulAddRow(c, a, inca, b[:len(b)-1], ldb, k, n, false)
}
