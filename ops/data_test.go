package ops_test

import (
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestIsData checks what counts as data: marked nodes, constants and ops of
// data only; parameters and anything computed from them are not.
func TestIsData(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	x, _ := s.Input("x", tensor.Shape{2, 3})
	c, _ := s.Const("c", tensor.Shape{3, 2}, make([]float64, 6))
	w, _ := s.Param("w", tensor.Shape{3, 2}, graph.Normal(1))
	if ops.IsData(x) || ops.IsData(c) {
		t.Fatal("unmarked input or constant node reported as data")
	}
	ops.MarkData(x, c)
	xc := G.Must(ops.MatMul(x, c, false, false))
	xw := G.Must(ops.MatMul(x, w, false, false))
	for _, tc := range []struct {
		name string
		n    *G.Node
		want bool
	}{
		{"x", x, true}, {"c", c, true}, {"w", w, false}, {"x·c", xc, true}, {"x·w", xw, false},
		{"constant", G.NewConstant(2.0), true}, {"nil", nil, false},
	} {
		if got := ops.IsData(tc.n); got != tc.want {
			t.Errorf("IsData(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDataGradients checks that MatMul and ConcatLast with a data input
// still give the right gradients of the parameters (float64, float32), and
// build no gradient for the data input.
func TestDataGradients(t *testing.T) {
	build := func(s *graph.Scope) (*G.Node, error) {
		x, err := s.Const("x", tensor.Shape{2, 3, 4}, graphtest.RandValues(s, 24))
		if err != nil {
			return nil, err
		}
		ops.MarkData(x)
		w, _ := s.Param("w", tensor.Shape{4, 2}, graph.Normal(1))
		v, _ := s.Param("v", tensor.Shape{6, 1}, graph.Normal(1))
		xw, err := ops.MatMul(x, w, false, false) // (2, 3, 2)
		if err != nil {
			return nil, err
		}
		if d := diffWRT(xw, 2); d[0] || !d[1] {
			t.Errorf("MatMul(data, param).DiffWRT = %v, want [false true]", d)
		}
		z, err := ops.ConcatLast(x, xw, v) // (2, 3, 7)
		if err != nil {
			return nil, err
		}
		if d := diffWRT(z, 3); d[0] || !d[1] || !d[2] {
			t.Errorf("ConcatLast(data, ·, ·).DiffWRT = %v, want [false true true]", d)
		}
		r, _ := s.Const("r", tensor.Shape{2, 3, 7}, graphtest.RandValues(s, 42))
		return G.Sum(G.Must(G.HadamardProd(G.Must(G.Square(z)), r)))
	}
	graphtest.CheckGrad(t, build, graphtest.Options{Seed: 6})
	graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 6})
}

// diffWRT is the DiffWRT of n's op.
func diffWRT(n *G.Node, inputs int) []bool {
	op, ok := n.Op().(G.SDOp)
	if !ok {
		return make([]bool, inputs)
	}
	return op.DiffWRT(inputs)
}
