package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// labelIDs returns R ids in [−1, C): every fifth −1 (a query), repeated
// classes otherwise.
func labelIDs(rng *rand.Rand, R, C int) []int {
	ids := make([]int, R)
	for r := range ids {
		ids[r] = rng.IntN(C)
		if r%5 == 4 {
			ids[r] = -1
		}
	}
	return ids
}

// TestGatherColsMatchesOneHotProduct: GatherCols(W, ids) and its gradient
// w.r.t. W are bit for bit the product of the ids' one-hot matrix by Wᵀ
// (the encoder's former w_{e,y} = labels·W_eᵀ, whose shortcut
// TestMatMulOneHot checks against Gemm) and that product's gradient, in
// float64 and float32, with −0 entries in W and over two runs (the second
// writes into the first's buffers).
func TestGatherColsMatchesOneHotProduct(t *testing.T) {
	const R, C, D = 37, 7, 5
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			ids := labelIDs(rand.New(rand.NewPCG(1, 2)), R, C)
			oneHot := make([]float64, R*C)
			for r, c := range ids {
				if c >= 0 {
					oneHot[r*C+c] = 1
				}
			}
			negZero := func(rng *rand.Rand, _ tensor.Shape, v []float64) error {
				for i := range v {
					v[i] = rng.NormFloat64()
					if i%3 == 0 {
						v[i] = math.Copysign(0, -1)
					}
				}
				return nil
			}
			// run builds y = f(W) and loss = Σ y ⊙ dc, runs the machine twice
			// and returns y and the gradient of W.
			run := func(f func(s *graph.Scope, w *G.Node) (*G.Node, error)) (y, dw []float64) {
				s, err := graph.NewScope(dt, 3)
				if err != nil {
					t.Fatal(err)
				}
				w, _ := s.Param("w", tensor.Shape{D, C}, negZero)
				dc, _ := s.Const("dc", tensor.Shape{R, D}, graphtest.RandValues(s, R*D))
				ops.MarkData(dc)
				yn, err := f(s, w)
				if err != nil {
					t.Fatal(err)
				}
				loss := G.Must(G.Sum(G.Must(G.HadamardProd(yn, dc))))
				m, err := graph.NewMachine(s, loss, graph.MachineOptions{Outputs: G.Nodes{yn}})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				for range 2 {
					if err := m.Run(); err != nil {
						t.Fatal(err)
					}
				}
				if y, err = graph.Values(yn); err != nil {
					t.Fatal(err)
				}
				if dw, err = graph.GradValues(w); err != nil {
					t.Fatal(err)
				}
				return y, dw
			}
			y1, g1 := run(func(s *graph.Scope, w *G.Node) (*G.Node, error) {
				in := intInput(s, "ids", R)
				copy(in.Value().Data().([]int), ids)
				return ops.GatherCols(w, in)
			})
			y2, g2 := run(func(s *graph.Scope, w *G.Node) (*G.Node, error) {
				x, _ := s.Input("x", tensor.Shape{R, C})
				ops.MarkData(x)
				if err := graph.SetValue(x, oneHot); err != nil {
					return nil, err
				}
				return ops.MatMul(x, w, false, true)
			})
			sameBits(t, "GatherCols", y1, y2)
			sameBits(t, "its gradient", g1, g2)
			for r, c := range ids {
				if c < 0 {
					for j := 0; j < D; j++ {
						if v := y1[r*D+j]; v != 0 || math.Signbit(v) {
							t.Fatalf("row %d (id −1) column %d = %v, want +0", r, j, v)
						}
					}
				}
			}
		})
	}
}

// TestGatherColsGrad checks GatherCols' gradient against finite
// differences, float64 and float32 (repeated ids and −1 among them).
func TestGatherColsGrad(t *testing.T) {
	const R, C, D = 12, 6, 4
	build := func(s *graph.Scope) (*G.Node, error) {
		ids := intInput(s, "ids", R)
		copy(ids.Value().Data().([]int), labelIDs(rand.New(rand.NewPCG(5, 6)), R, C))
		w, _ := s.Param("w", tensor.Shape{D, C}, graph.Normal(1))
		y, err := ops.GatherCols(w, ids)
		if err != nil {
			return nil, err
		}
		c, _ := s.Const("c", tensor.Shape{R, D}, graphtest.RandValues(s, R*D))
		return G.Sum(G.Must(G.HadamardProd(G.Must(G.Tanh(y)), c)))
	}
	graphtest.CheckGrad(t, build, graphtest.Options{Seed: 7})
	graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 7})
}

// TestGatherColsErrors: bad shapes are refused by the constructor, an id
// outside [−1, V) by the run (forward and gradient), naming the id.
func TestGatherColsErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	w, _ := s.Param("w", tensor.Shape{3, 4}, graph.Normal(1))
	vec, _ := s.Input("vec", tensor.Shape{4})
	ids := intInput(s, "ids", 5)
	for _, c := range []struct {
		name string
		run  func() (*G.Node, error)
		want string
	}{
		{"nil", func() (*G.Node, error) { return ops.GatherCols(nil, ids) }, "nil"},
		{"rank", func() (*G.Node, error) { return ops.GatherCols(vec, ids) }, "want (D, V)"},
		{"float ids", func() (*G.Node, error) { return ops.GatherCols(w, vec) }, "int vector"},
	} {
		if n, err := c.run(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: node %v, err %v; want an error mentioning %q", c.name, n, err, c.want)
		}
	}
	y, err := ops.GatherCols(w, ids)
	if err != nil {
		t.Fatal(err)
	}
	if d, v, r := y.Op().(*ops.GatherColsOp).Dims(); d != 3 || v != 4 || r != 5 {
		t.Errorf("Dims = %d, %d, %d, want 3, 4, 5", d, v, r)
	}
	loss := G.Must(G.Sum(y))
	m, err := graph.NewMachine(s, loss, graph.MachineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, bad := range []int{-2, 4} {
		v := ids.Value().Data().([]int)
		clear(v)
		v[3] = bad
		err := m.Run()
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("id %d at position 3", bad)) {
			t.Errorf("id %d: err %v, want one naming it", bad, err)
		}
	}
	clear(ids.Value().Data().([]int))
	if err := m.Run(); err != nil {
		t.Errorf("good ids after bad ones: %v", err)
	}
}
