package gops

import (
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/ops"
)

// TestKinds builds each Gorgonia op the executors recognise with known
// parameters and checks that it is recognised and that its parameters are
// read back from its exported methods: a Gorgonia upgrade that renames a
// type or changes a printed form fails here, rather than moving the op to a
// slower path without notice.
func TestKinds(t *testing.T) {
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
	kind := func(n *G.Node, want Kind) string {
		t.Helper()
		if got := KindOf(n.Op()); got != want {
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
		s := kind(c.n, LinAlg)
		tA, tB, batched, ok := LinAlgArgs(s)
		if ok != c.isOK || ok && (tA != c.tA || tB != c.tB || batched != c.batched) {
			t.Errorf("LinAlgArgs(%q) = %v %v %v %v, want %v %v %v %v", s, tA, tB, batched, ok, c.tA, c.tB, c.batched, c.isOK)
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
		tA, tB, batched, ok := LinAlgArgs(c.s)
		if ok != c.isOK || ok && (tA != c.tA || tB != c.tB || batched != c.batched) {
			t.Errorf("LinAlgArgs(%q) = %v %v %v %v, want %v %v %v %v", c.s, tA, tB, batched, ok, c.tA, c.tB, c.batched, c.isOK)
		}
	}

	if s := kind(must(G.Add(a, a)), ElemBin); s[:1] != "+" {
		t.Errorf("elemBinOp prints as %q, want a leading +", s)
	}
	if s := kind(must(G.Tanh(a)), ElemUnary); s != "tanh" {
		t.Errorf("elemUnaryOp prints as %q, want tanh", s)
	}
	if s := kind(must(G.Exp(a)), ElemUnary); s != "exp" {
		t.Errorf("exp prints as %q", s)
	}
	for _, c := range []struct {
		n   *G.Node
		sym string
	}{
		{must(G.Add(a, a)), "+"},
		{must(G.Sub(a, a)), "-"},
		{must(G.HadamardProd(a, a)), "⊙"},
		{must(G.Mul(a, b)), ""}, // a matrix product
		{must(G.Tanh(a)), ""},
	} {
		if got := BinSymbol(c.n.Op()); got != c.sym {
			t.Errorf("BinSymbol(%v) = %q, want %q", c.n.Op(), got, c.sym)
		}
	}

	_, rep, err := G.Broadcast(a, col, G.NewBroadcastPattern(nil, []byte{1}))
	if err != nil {
		t.Fatal(err)
	}
	if along, ok := RepeatArgs(kind(rep, Repeat)); !ok || along != 1 {
		t.Errorf("repeat along %d %v, want 1", along, ok)
	}
	if got := RepeatAxis(rep.Op()); got != 1 {
		t.Errorf("RepeatAxis = %d, want 1", got)
	}
	if got := RepeatAxis(must(G.Add(a, a)).Op()); got != -1 {
		t.Errorf("RepeatAxis of an addition = %d, want -1", got)
	}
	if along, ok := SumArgs(kind(must(G.Sum(c, 0, 2)), Sum)); !ok || !slices.Equal(along, []int{0, 2}) {
		t.Errorf("sum along %v %v, want [0 2]", along, ok)
	}
	if p, ok := TransposeArgs(kind(must(G.Transpose(c, 1, 0, 2)), Transpose)); !ok || !slices.Equal(p, []int{1, 0, 2}) {
		t.Errorf("transpose pattern %v %v, want [1 0 2]", p, ok)
	}
	if axis, ok := ConcatArgs(kind(must(G.Concat(1, a, a)), Concat)); !ok || axis != 1 {
		t.Errorf("concat axis %d %v, want 1", axis, ok)
	}
	sl := must(G.Slice(c, nil, G.S(1, 3)))
	if along, ok := SliceAlong(kind(sl, Slice)); !ok || along != 1 {
		t.Errorf("slice along %d %v, want 1", along, ok)
	}
	if s := sl.Op().(interface{ IsSlice() tensor.Slice }).IsSlice(); s.Start() != 1 || s.End() != 3 {
		t.Errorf("slice [%d, %d), want [1, 3)", s.Start(), s.End())
	}
	kind(must(G.Reshape(a, tensor.Shape{12})), Reshape)
	size := must(G.SizeOf(1, a))
	kind(size, Size)
	if n, axis, ok := SizeArgs(size.Op()); !ok || !(n == 4 || n == 0 && axis == 1) {
		t.Errorf("SizeOf(1, a) (%v): size %d axis %d %v, want size 4 or axis 1", size.Op(), n, axis, ok)
	}

	// gdattn's ops and anything else are not Gorgonia kinds.
	for _, n := range []*G.Node{must(ops.MatMul(a, b, false, false)), must(ops.Reshape(a, tensor.Shape{12})), a} {
		if k := KindOf(n.Op()); k != None {
			t.Errorf("%v: kind %d, want none", n.Op(), k)
		}
	}
}
