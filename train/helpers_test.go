package train

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
)

// float is the set of element types a Scope supports.
type float interface{ float32 | float64 }

// dtypeOf returns the tensor dtype of T.
func dtypeOf[T float]() tensor.Dtype {
	var z T
	if _, ok := any(z).(float32); ok {
		return graph.Float32
	}
	return graph.Float64
}

// tolOf is the comparison tolerance for T.
func tolOf[T float]() float64 {
	if dtypeOf[T]() == graph.Float32 {
		return 1e-5
	}
	return 1e-12
}

func approx(tol float64) cmp.Option { return cmpopts.EquateApprox(tol, tol) }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// linModel builds loss = a * sum((x W - y)^2) with x (2, 3) and y (2, 2)
// inputs, W (3, 2) and a scalar a parameters.
type linModel struct {
	s          *graph.Scope
	w, a, x, y *G.Node
	loss       *G.Node
}

func newLinModel(t *testing.T, dt tensor.Dtype) *linModel {
	t.Helper()
	s, err := graph.NewScope(dt, 1)
	if err != nil {
		t.Fatal(err)
	}
	m := &linModel{s: s}
	// W = [[1, 0], [0, 1], [1, -1]]; a = 0.5.
	m.w = must(s.Param("w", tensor.Shape{3, 2}, graph.FromValues([]float64{1, 0, 0, 1, 1, -1})))
	m.a = must(s.Param("a", tensor.Shape{}, graph.Constant(0.5)))
	m.x = must(s.Input("x", tensor.Shape{2, 3}))
	m.y = must(s.Input("y", tensor.Shape{2, 2}))
	d := G.Must(G.Sub(G.Must(G.Mul(m.x, m.w)), m.y))
	m.loss = G.Must(G.Mul(m.a, G.Must(G.Sum(G.Must(G.Square(d))))))
	return m
}
