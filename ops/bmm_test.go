package ops_test

import (
	"fmt"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestBatchedMatMul compares every transpose combination with a plain-Go
// product and checks the gradients against finite differences.
func TestBatchedMatMul(t *testing.T) {
	const B, M, K, N = 3, 4, 5, 2
	for _, ta := range []bool{false, true} {
		for _, tb := range []bool{false, true} {
			t.Run(fmt.Sprintf("transA=%v/transB=%v", ta, tb), func(t *testing.T) {
				ash, bsh := tensor.Shape{B, M, K}, tensor.Shape{B, K, N}
				if ta {
					ash = tensor.Shape{B, K, M}
				}
				if tb {
					bsh = tensor.Shape{B, N, K}
				}
				build := func(s *graph.Scope) (*G.Node, error) {
					a, _ := s.Param("a", ash, graph.Normal(1))
					b, _ := s.Param("b", bsh, graph.Normal(1))
					c, err := ops.BatchedMatMul(a, b, ta, tb)
					if err != nil {
						return nil, err
					}
					w, _ := s.Const("w", tensor.Shape{B, M, N}, graphtest.RandValues(s, B*M*N))
					return G.Sum(G.Must(G.HadamardProd(c, w)))
				}
				graphtest.CheckGrad(t, build, graphtest.Options{Seed: 2})
				graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 2})
				// Values against a plain-Go product.
				s, _ := graph.NewScope(graph.Float64, 5)
				a, _ := s.Param("a", ash, graph.Normal(1))
				b, _ := s.Param("b", bsh, graph.Normal(1))
				c, err := ops.BatchedMatMul(a, b, ta, tb)
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
				at := func(i, r, k int) float64 {
					if ta {
						return av[(i*K+k)*M+r]
					}
					return av[(i*M+r)*K+k]
				}
				bt := func(i, k, n int) float64 {
					if tb {
						return bv[(i*N+n)*K+k]
					}
					return bv[(i*K+k)*N+n]
				}
				for i := 0; i < B; i++ {
					for r := 0; r < M; r++ {
						for n := 0; n < N; n++ {
							want := 0.0
							for k := 0; k < K; k++ {
								want += at(i, r, k) * bt(i, k, n)
							}
							if got := cv[(i*M+r)*N+n]; abs(got-want) > 1e-12 {
								t.Fatalf("c[%d,%d,%d] = %v, want %v", i, r, n, got, want)
							}
						}
					}
				}
			})
		}
	}
}

func TestBatchedMatMulErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	a, _ := s.Param("a", tensor.Shape{2, 3, 4}, nil)
	b, _ := s.Param("b", tensor.Shape{2, 5, 6}, nil)
	c, _ := s.Param("c", tensor.Shape{3, 4, 2}, nil)
	m, _ := s.Param("m", tensor.Shape{4, 2}, nil)
	for _, tc := range []struct {
		name string
		x, y *G.Node
	}{{"inner", a, b}, {"batch", a, c}, {"rank", a, m}, {"nil", nil, a}} {
		if _, err := ops.BatchedMatMul(tc.x, tc.y, false, false); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
