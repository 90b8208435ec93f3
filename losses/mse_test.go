package losses

import (
	"math"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
)

// mseBuild builds MSE of a (B, D) prediction parameter against a random
// constant target, both drawn from the scope.
func mseBuild(B, D int) graphtest.BuildFunc {
	return func(s *graph.Scope) (*G.Node, error) {
		pred, err := s.Param("pred", tensor.Shape{B, D}, graph.Normal(1.5))
		if err != nil {
			return nil, err
		}
		target, err := s.Const("target", tensor.Shape{B, D}, graphtest.RandValues(s, B*D))
		if err != nil {
			return nil, err
		}
		return MSE(pred, target)
	}
}

func TestMSEGradient(t *testing.T) {
	for _, c := range []struct{ B, D int }{{1, 1}, {3, 2}, {5, 4}} {
		w := graphtest.CheckGrad(t, mseBuild(c.B, c.D), graphtest.Options{Seed: 1})
		w32 := graphtest.CheckGrad32(t, mseBuild(c.B, c.D), graphtest.Options{Seed: 1})
		t.Logf("B=%d D=%d: max relative error float64 %.2e, float32 %.2e", c.B, c.D, w, w32)
	}
}

func TestMSEValue(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	pred, _ := s.Const("pred", tensor.Shape{2, 2}, []float64{1, 2, 3, 4})
	target, _ := s.Const("target", tensor.Shape{2, 2}, []float64{0, 2, 5, 3})
	loss, err := MSE(pred, target)
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(s.Graph())
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	got, _ := graph.Values(loss)
	want := (1.0 + 0 + 4 + 1) / 4 // mean of the squared differences
	if math.Abs(got[0]-want) > 1e-15 {
		t.Errorf("MSE = %v, want %v", got[0], want)
	}
	plain, err := MeanSquaredError([]float64{1, 2, 3, 4}, []float64{0, 2, 5, 3})
	if err != nil || plain != want {
		t.Errorf("MeanSquaredError = %v, %v, want %v", plain, err, want)
	}
}

func TestMSEErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	a, _ := s.Const("a", tensor.Shape{2, 3}, make([]float64, 6))
	b, _ := s.Const("b", tensor.Shape{3, 2}, make([]float64, 6))
	v, _ := s.Const("v", tensor.Shape{6}, make([]float64, 6))
	s32, _ := graph.NewScope(graph.Float32, 1)
	a32, _ := s32.Const("a", tensor.Shape{2, 3}, make([]float64, 6))
	other, _ := graph.NewScope(graph.Float64, 1)
	ao, _ := other.Const("a", tensor.Shape{2, 3}, make([]float64, 6))
	cases := []struct {
		name         string
		pred, target *G.Node
		want         string
	}{
		{"nil pred", nil, a, "pred"},
		{"nil target", a, nil, "target"},
		{"shapes", a, b, "shape"},
		{"rank", v, v, "(B, D)"},
		{"dtype", a, a32, "dtype"},
		{"graphs", a, ao, "graphs"},
	}
	for _, c := range cases {
		if _, err := MSE(c.pred, c.target); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one containing %q", c.name, err, c.want)
		}
	}
	for _, c := range []struct {
		name    string
		p, q    []float64
		wantErr string
	}{
		{"lengths", []float64{1}, []float64{1, 2}, "1 predictions, 2 targets"},
		{"empty", nil, nil, "no values"},
		{"NaN", []float64{math.NaN()}, []float64{1}, "element 0"},
		{"Inf target", []float64{1}, []float64{math.Inf(-1)}, "element 0"},
	} {
		if _, err := MeanSquaredError(c.p, c.q); err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("MeanSquaredError %s: err = %v, want %q", c.name, err, c.wantErr)
		}
	}
}
