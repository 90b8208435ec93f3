package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// oneHotData returns an R×C matrix with one-hot rows, every fifth row zero,
// and -0 in place of some zeros.
func oneHotData(rng *rand.Rand, R, C int) []float64 {
	x := make([]float64, R*C)
	for r := 0; r < R; r++ {
		if r%5 == 4 {
			continue
		}
		x[r*C+rng.IntN(C)] = 1
		x[r*C+rng.IntN(C)] += math.Copysign(0, -1) // -0 unless it hit the 1
	}
	return x
}

// TestMatMulOneHot checks MatMul's one-hot shortcut against the product by
// Gemm, bit for bit: A·Bᵀ and A·B for one-hot data A, and the gradient
// dCᵀ·A, in float64 and float32; data that is not one-hot (a 2, two ones
// in a row, a soft row) takes the product.
func TestMatMulOneHot(t *testing.T) {
	const R, C, D = 37, 7, 5
	cases := map[string]func(x []float64){
		"one-hot":   func([]float64) {},
		"a two":     func(x []float64) { x[3*C+1] = 2 },
		"two ones":  func(x []float64) { x[2*C], x[2*C+1] = 1, 1 },
		"soft row":  func(x []float64) { x[C], x[C+1] = 0.5, 0.5 },
		"all zeros": func(x []float64) { clear(x) },
	}
	for name, edit := range cases {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", name, dt), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(1, 2))
				xv := oneHotData(rng, R, C)
				edit(xv)
				s, err := graph.NewScope(dt, 3)
				if err != nil {
					t.Fatal(err)
				}
				x, _ := s.Input("x", tensor.Shape{R, C})
				ops.MarkData(x)
				if err := graph.SetValue(x, xv); err != nil {
					t.Fatal(err)
				}
				// -0 entries in the other factor: the product's chain from +0
				// gives +0 there, and so must the shortcut.
				negZero := func(n int) graph.Initializer {
					return func(rng *rand.Rand, _ tensor.Shape, v []float64) error {
						for i := range v {
							v[i] = rng.NormFloat64()
							if i%n == 0 {
								v[i] = math.Copysign(0, -1)
							}
						}
						return nil
					}
				}
				bt, _ := s.Param("bt", tensor.Shape{D, C}, negZero(3)) // used as Bᵀ
				b, _ := s.Param("b", tensor.Shape{C, D}, negZero(4))
				dc, _ := s.Param("dc", tensor.Shape{R, D}, graph.Normal(1))
				y1 := G.Must(ops.MatMul(x, bt, false, true)) // (R, D)
				y2 := G.Must(ops.MatMul(x, b, false, false)) // (R, D)
				g := G.Must(ops.MatMul(dc, x, true, false))  // (D, C)
				m, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{y1, y2, g}})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				for run := 0; run < 2; run++ { // the second run writes into the first's buffers
					if err := m.Run(); err != nil {
						t.Fatal(err)
					}
				}
				val := func(n *G.Node) []float64 {
					v, err := graph.Values(n)
					if err != nil {
						t.Fatal(err)
					}
					return v
				}
				want := func(tA, tB bool, m, n, k int, a, b []float64) []float64 {
					c := make([]float64, m*n)
					if dt == tensor.Float32 {
						a32, b32, c32 := f32(a), f32(b), make([]float32, m*n)
						ops.Gemm(tA, tB, m, n, k, 1, a32, lda(tA, m, k), b32, lda(!tB, n, k), 0, c32, n)
						for i, v := range c32 {
							c[i] = float64(v)
						}
						return c
					}
					ops.Gemm(tA, tB, m, n, k, 1, a, lda(tA, m, k), b, lda(!tB, n, k), 0, c, n)
					return c
				}
				xr := val(x)
				sameBits(t, "x·btᵀ", val(y1), want(false, true, R, D, C, xr, val(bt)))
				sameBits(t, "x·b", val(y2), want(false, false, R, D, C, xr, val(b)))
				sameBits(t, "dcᵀ·x", val(g), want(true, false, D, C, R, val(dc), xr))
			})
		}
	}
}

// lda is the row length of a stored m×k operand (k×m when transposed).
func lda(trans bool, m, k int) int {
	if trans {
		return m
	}
	return k
}

func f32(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}

func sameBits(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("%s[%d] = %v, the product gives %v", what, i, got[i], want[i])
		}
	}
}

// TestMatMulOneHotGrad checks the gradients through products by one-hot
// data (the encoder's w_{e,y} = labels·W_eᵀ and its broadcast of w̄_e)
// against finite differences, float64 and float32.
func TestMatMulOneHotGrad(t *testing.T) {
	const R, C, D = 12, 6, 4
	build := func(s *graph.Scope) (*G.Node, error) {
		rng := rand.New(rand.NewPCG(5, 6))
		labels, err := s.Const("labels", tensor.Shape{R, C}, oneHotData(rng, R, C))
		if err != nil {
			return nil, err
		}
		ones, err := s.Const("ones", tensor.Shape{R, 1}, filled(R, 1))
		if err != nil {
			return nil, err
		}
		ops.MarkData(labels, ones)
		we, _ := s.Param("we", tensor.Shape{D, C}, graph.Normal(1))
		wbar, _ := s.Param("wbar", tensor.Shape{D, 1}, graph.Normal(1))
		wy := G.Must(ops.MatMul(labels, we, false, true)) // (R, D)
		wb := G.Must(ops.MatMul(ones, wbar, false, true)) // (R, D)
		w, _ := s.Const("w", tensor.Shape{R, D}, graphtest.RandValues(s, R*D))
		return G.Sum(G.Must(G.HadamardProd(G.Must(G.Tanh(G.Must(G.Add(wy, wb)))), w)))
	}
	graphtest.CheckGrad(t, build, graphtest.Options{Seed: 7})
	graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 7})
}

func filled(n int, v float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = v
	}
	return x
}
