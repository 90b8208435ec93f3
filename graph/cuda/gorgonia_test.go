package cuda

import (
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/ops"
)

// TestGorgoniaOps builds each Gorgonia op the executor lowers with known
// parameters and checks that it is recognised and that its parameters are
// read back from its exported methods: a Gorgonia upgrade that renames a
// type or changes a printed form fails here, rather than moving the op to
// the host without notice.
func TestGorgoniaOps(t *testing.T) {
	g := G.NewGraph()
	m := func(name string, s ...int) *G.Node {
		return G.NewTensor(g, tensor.Float64, len(s), G.WithShape(s...), G.WithName(name))
	}
	a, b := m("a", 3, 4), m("b", 4, 5)
	c, d := m("c", 2, 3, 4), m("d", 2, 5, 4)
	col, vec := m("col", 3, 1), m("vec", 4)
	must := func(n *G.Node, err error) *G.Node {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	kind := func(n *G.Node, want gKind) string {
		t.Helper()
		if got := gorgoniaKindOf(n.Op()); got != want {
			t.Fatalf("%v (%T): kind %d, want %d", n.Op(), n.Op(), got, want)
		}
		return n.Op().String()
	}

	for _, c := range []struct {
		n                     *G.Node
		tA, tB, batched, isOK bool
	}{
		{must(G.Mul(a, b)), false, false, false, true},
		{must(G.BatchedMatMul(c, d, false, true)), false, true, true, true},
		{must(G.BatchedMatMul(d, c, true, false)), true, false, true, true},
		{must(G.Mul(a, vec)), false, false, false, true},
		{must(G.Mul(vec, vec)), false, false, false, false}, // a dot product: host
	} {
		s := kind(c.n, gLinAlg)
		tA, tB, batched, ok := linAlgArgs(s)
		if ok != c.isOK || ok && (tA != c.tA || tB != c.tB || batched != c.batched) {
			t.Errorf("linAlgArgs(%q) = %v %v %v %v, want %v %v %v %v", s, tA, tB, batched, ok, c.tA, c.tB, c.batched, c.isOK)
		}
	}
	// Transposes recorded in the op (Gorgonia's backward pass of a matrix
	// product builds such ops) print after the operand.
	for _, c := range []struct {
		s                     string
		tA, tB, batched, isOK bool
	}{
		{"Aᵀ × B", true, false, false, true},
		{"A × Bᵀ", false, true, false, true},
		{"Aᵀ ××× Bᵀ", true, true, true, true},
		{"Aᵀ × b", true, false, false, true},
		{"a ⋅ b", false, false, false, false},
		{"a ⊗ b", false, false, false, false},
	} {
		tA, tB, batched, ok := linAlgArgs(c.s)
		if ok != c.isOK || ok && (tA != c.tA || tB != c.tB || batched != c.batched) {
			t.Errorf("linAlgArgs(%q) = %v %v %v %v, want %v %v %v %v", c.s, tA, tB, batched, ok, c.tA, c.tB, c.batched, c.isOK)
		}
	}

	if s := kind(must(G.Add(a, a)), gElemBin); s[:1] != "+" {
		t.Errorf("elemBinOp prints as %q, want a leading +", s)
	}
	if s := kind(must(G.Tanh(a)), gElemUnary); s != "tanh" {
		t.Errorf("elemUnaryOp prints as %q, want tanh", s)
	}
	if _, ok := unaryCodes[kind(must(G.Exp(a)), gElemUnary)]; !ok {
		t.Error("exp has no unary code")
	}

	_, rep, err := G.Broadcast(a, col, G.NewBroadcastPattern(nil, []byte{1}))
	if err != nil {
		t.Fatal(err)
	}
	if along, ok := repeatArgs(kind(rep, gRepeat)); !ok || along != 1 {
		t.Errorf("repeat along %d %v, want 1", along, ok)
	}
	if along, ok := sumArgs(kind(must(G.Sum(c, 0, 2)), gSum)); !ok || !slices.Equal(along, []int{0, 2}) {
		t.Errorf("sum along %v %v, want [0 2]", along, ok)
	}
	if p, ok := transposeArgs(kind(must(G.Transpose(c, 1, 0, 2)), gTranspose)); !ok || !slices.Equal(p, []int{1, 0, 2}) {
		t.Errorf("transpose pattern %v %v, want [1 0 2]", p, ok)
	}
	if axis, ok := concatArgs(kind(must(G.Concat(1, a, a)), gConcat)); !ok || axis != 1 {
		t.Errorf("concat axis %d %v, want 1", axis, ok)
	}
	sl := must(G.Slice(c, nil, G.S(1, 3)))
	if along, ok := sliceAlong(kind(sl, gSlice)); !ok || along != 1 {
		t.Errorf("slice along %d %v, want 1", along, ok)
	}
	if s := sl.Op().(interface{ IsSlice() tensor.Slice }).IsSlice(); s.Start() != 1 || s.End() != 3 {
		t.Errorf("slice [%d, %d), want [1, 3)", s.Start(), s.End())
	}
	kind(must(G.Reshape(a, tensor.Shape{12})), gReshape)
	size := must(G.SizeOf(1, a))
	kind(size, gSize)
	if n, axis, ok := sizeOpArgs(size.Op()); !ok || !(n == 4 || n == 0 && axis == 1) {
		t.Errorf("SizeOf(1, a) (%v): size %d axis %d %v, want size 4 or axis 1", size.Op(), n, axis, ok)
	}

	// gdattn's ops and anything else are not Gorgonia kinds.
	for _, n := range []*G.Node{must(ops.MatMul(a, b, false, false)), must(ops.Reshape(a, tensor.Shape{12})), a} {
		if k := gorgoniaKindOf(n.Op()); k != gNone {
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
