package ops

import (
	"math"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// geluLoss builds Σ R ⊙ GELU(x) for x (n, m) and a constant R, through the
// fused op or (composite) the six Gorgonia nodes of layers.FeedForward's
// former activation.
func geluLoss(composite bool, n, m int, scale float64) graphtest.BuildFunc {
	return func(s *graph.Scope) (*G.Node, error) {
		x, err := s.Param("x", tensor.Shape{n, m}, graph.Normal(scale))
		if err != nil {
			return nil, err
		}
		r, err := s.Const("r", tensor.Shape{n, m}, graphtest.RandValues(s, n*m))
		if err != nil {
			return nil, err
		}
		var y *G.Node
		if composite {
			c, err := s.Const("gelu_c", tensor.Shape{}, []float64{0.044715})
			if err != nil {
				return nil, err
			}
			k, err := s.Const("gelu_k", tensor.Shape{}, []float64{2 * math.Sqrt(2/math.Pi)})
			if err != nil {
				return nil, err
			}
			inner := G.Must(G.Add(x, G.Must(G.Mul(G.Must(G.Cube(x)), c))))
			y, err = G.HadamardProd(x, G.Must(G.Sigmoid(G.Must(G.Mul(inner, k)))))
			if err != nil {
				return nil, err
			}
		} else if y, err = GELU(x); err != nil {
			return nil, err
		}
		return G.Sum(G.Must(G.HadamardProd(y, r)))
	}
}

// TestGELU: finite-difference gradient checks in float64 and float32, and
// the fused op's loss and gradient equal the composite's bit for bit in
// both dtypes (inputs wide enough to reach the sigmoid's clamps).
func TestGELU(t *testing.T) {
	worst := graphtest.CheckGrad(t, geluLoss(false, 3, 5, 1), graphtest.Options{Seed: 1})
	worst32 := graphtest.CheckGrad32(t, geluLoss(false, 3, 5, 1), graphtest.Options{Seed: 1})
	t.Logf("max relative error float64 %.2e, float32 %.2e", worst, worst32)
	for _, dt := range []tensor.Dtype{graph.Float64, graph.Float32} {
		for _, scale := range []float64{1, 8} {
			got, gg := graphtest.Gradients(t, geluLoss(false, 40, 70, scale), dt, 2)
			want, wg := graphtest.Gradients(t, geluLoss(true, 40, 70, scale), dt, 2)
			if got != want {
				t.Errorf("%v scale %v: loss %v, composite %v", dt, scale, got, want)
			}
			for i := range gg["x"] {
				if gg["x"][i] != wg["x"][i] {
					t.Fatalf("%v scale %v: gradient element %d = %v, composite %v", dt, scale, i, gg["x"][i], wg["x"][i])
				}
			}
		}
	}
	s, _ := graph.NewScope(graph.Float32, 1)
	if _, err := GELU(nil); err == nil {
		t.Error("nil input: no error")
	}
	sc, _ := s.Param("a", tensor.Shape{}, graph.Zeros())
	if _, err := GELU(sc); err == nil {
		t.Error("scalar input: no error")
	}
}
