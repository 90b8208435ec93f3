package cuda

import (
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph/internal/gops"
	"github.com/gdattn/gdattn/ops"
)

// TestGorgoniaLowering: Gorgonia's exp has a device code, and gdattn's own
// ops are not taken for Gorgonia's (package gops tests the recognition of
// each kind and its parameters).
func TestGorgoniaLowering(t *testing.T) {
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 4), G.WithName("a"))
	b := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 5), G.WithName("b"))
	must := func(n *G.Node, err error) *G.Node {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, ok := unaryCodes[must(G.Exp(a)).Op().String()]; !ok {
		t.Error("exp has no unary code")
	}
	for _, n := range []*G.Node{must(ops.MatMul(a, b, false, false)), must(ops.Reshape(a, tensor.Shape{12})), a} {
		if k := gops.KindOf(n.Op()); k != gops.None {
			t.Errorf("%v: kind %d, want none", n.Op(), k)
		}
	}
}

// TestChildrenOrder: childrenOf lists a node's inputs in argument order,
// repeated inputs repeated, through Gorgonia's exported ExprGraph.From.
func TestChildrenOrder(t *testing.T) {
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 3), G.WithName("a"))
	b := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 3), G.WithName("b"))
	w := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 2), G.WithName("w"))
	for _, c := range []struct {
		name string
		n    *G.Node
		want G.Nodes
	}{
		{"b - a", G.Must(G.Sub(b, a)), G.Nodes{b, a}},
		{"a - b", G.Must(G.Sub(a, b)), G.Nodes{a, b}},
		{"w·a", G.Must(ops.MatMul(w, a, false, false)), G.Nodes{w, a}},
		{"a ⊙ a", G.Must(G.HadamardProd(a, a)), G.Nodes{a, a}},
		{"concat(b, a, b)", G.Must(ops.ConcatLast(b, a, b)), G.Nodes{b, a, b}},
		{"input", a, nil},
	} {
		got, err := childrenOf(c.n)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: children %v, want %v", c.name, got, c.want)
		}
	}
}
