package ops_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/ops"
)

// intInput is an int node (n) of s's graph holding zeros.
func intInput(s *graph.Scope, name string, n int) *G.Node {
	v := tensor.New(tensor.WithShape(n), tensor.WithBacking(make([]int, n)))
	return G.NewTensor(s.Graph(), tensor.Int, 1, G.WithShape(n), G.WithName(name), G.WithValue(v))
}

// TestConstructorErrors: every constructor refuses bad input with an error
// (never a panic) that says what is wrong.
func TestConstructorErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	s32, _ := graph.NewScope(graph.Float32, 1)
	in := func(s *graph.Scope, name string, sh ...int) *G.Node {
		n, err := s.Input(name, tensor.Shape(sh))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	q, k := in(s, "q", 2, 3, 4), in(s, "k", 2, 5, 4)
	k3 := in(s, "k3", 2, 5, 3)
	q32 := in(s32, "q32", 2, 3, 4)
	keep, badKeep := in(s, "keep", 2, 3, 5), in(s, "bad_keep", 2, 5, 3)
	gVec := in(s, "gvec", 3)
	gScalar, err := s.Param("gs", tensor.Shape{}, graph.Constant(1))
	if err != nil {
		t.Fatal(err)
	}
	z, z1 := in(s, "z", 2, 3, 4), in(s, "z1", 2, 1, 4)
	wq, wk, wv, p := in(s, "wq", 4, 2), in(s, "wk", 4, 2), in(s, "wv", 4, 3), in(s, "p", 3, 4)
	f, keys, vals, badVals := in(s, "f", 6, 2), in(s, "keys", 2, 5), in(s, "vals", 2, 5), in(s, "bad_vals", 3, 5)
	table, vec, h3 := in(s, "table", 5, 2), in(s, "vec", 5), in(s, "h3", 6, 3)
	ids := intInput(s, "ids", 3)
	for _, c := range []struct {
		name string
		run  func() (*G.Node, error)
		want string
	}{
		{"kernel nil key", func() (*G.Node, error) { return ops.KernelWeights(ops.KindRBF, q, nil, nil, 1, nil) }, "nil"},
		{"kernel unknown kind", func() (*G.Node, error) { return ops.KernelWeights(ops.KernelKind(9), q, k, nil, 1, nil) }, "unknown kind"},
		{"kernel width", func() (*G.Node, error) { return ops.KernelWeights(ops.KindExp, q, k3, nil, 1, nil) }, "want (B, Tq, D)"},
		{"kernel rank", func() (*G.Node, error) { return ops.KernelWeights(ops.KindExp, f, f, nil, 1, nil) }, "want (B, Tq, D)"},
		{"kernel dtypes", func() (*G.Node, error) { return ops.KernelWeights(ops.KindExp, q32, k, nil, 1, nil) }, "dtype"},
		{"kernel g not scalar", func() (*G.Node, error) { return ops.KernelWeights(ops.KindExp, q, k, gVec, 1, nil) }, "scalar"},
		{"kernel fixed g", func() (*G.Node, error) { return ops.KernelWeights(ops.KindRBF, q, k, nil, 0, nil) }, "positive"},
		{"kernel mask", func() (*G.Node, error) { return ops.KernelWeights(ops.KindSoftmax, q, k, nil, 1, badKeep) }, "mask"},
		{"head kernel", func() (*G.Node, error) { return ops.AttentionHead(ops.KindRBF, nil, 1, false, z, wq, wk, wv, p) }, "dot-product"},
		{"head nil", func() (*G.Node, error) { return ops.AttentionHead(ops.KindExp, nil, 1, false, z, nil, wk, wv, p) }, "nil"},
		{"head shapes", func() (*G.Node, error) { return ops.AttentionHead(ops.KindExp, nil, 1, false, z, wq, wv, wv, p) }, "shapes"},
		{"head context", func() (*G.Node, error) { return ops.AttentionHead(ops.KindSoftmax, nil, 1, true, z1, wq, wk, wv, p) }, "no context key"},
		{"head fixed g", func() (*G.Node, error) { return ops.AttentionHead(ops.KindSoftmax, nil, -1, false, z, wq, wk, wv, p) }, "positive"},
		{"head g", func() (*G.Node, error) { return ops.AttentionHead(ops.KindSoftmax, gVec, 1, false, z, wq, wk, wv, p) }, "scalar"},
		{"expectation nil", func() (*G.Node, error) { return ops.Expectation(f, nil, vals) }, "nil"},
		{"expectation shapes", func() (*G.Node, error) { return ops.Expectation(f, keys, badVals) }, "shapes"},
		{"gather table", func() (*G.Node, error) { return ops.Gather(vec, ids) }, "want (V, D)"},
		{"gather float ids", func() (*G.Node, error) { return ops.GatherCentered(table, vec) }, "int tensor"},
		{"tied widths", func() (*G.Node, error) { return ops.TiedLogits(h3, table) }, "want (N, D) and (V, D)"},
		{"xent labels", func() (*G.Node, error) { return ops.SparseCrossEntropy(table, ids) }, "labels"},
	} {
		n, err := c.run()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: node %v, err %v; want an error mentioning %q", c.name, n, err, c.want)
		}
	}
	// The same inputs, corrected, are accepted.
	for _, c := range []struct {
		name string
		run  func() (*G.Node, error)
	}{
		{"kernel", func() (*G.Node, error) { return ops.KernelWeights(ops.KindSoftmax, q, k, gScalar, 0, keep) }},
		{"head", func() (*G.Node, error) { return ops.AttentionHead(ops.KindLinear, nil, 0, true, z, wq, wk, wv, p) }},
		{"expectation", func() (*G.Node, error) { return ops.Expectation(f, keys, vals) }},
		{"gather", func() (*G.Node, error) { return ops.GatherCentered(table, ids) }},
	} {
		if _, err := c.run(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestAccessors: what a backend reads through the accessors is what the
// constructors were given, for the forward ops and for the gradient ops
// Gorgonia's differentiation builds.
func TestAccessors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	param := func(name string, sh ...int) *G.Node {
		n, err := s.Param(name, tensor.Shape(sh), graph.Normal(1))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	z, q, k := param("z", 2, 3, 4), param("q", 2, 3, 4), param("k", 2, 5, 4)
	wq, wk, wv, p := param("wq", 4, 2), param("wk", 4, 2), param("wv", 4, 3), param("p", 3, 4)
	lg, err := s.Param("log_g", tensor.Shape{}, graph.Constant(0))
	if err != nil {
		t.Fatal(err)
	}
	g := G.Must(G.Exp(lg))
	keep, err := s.Const("keep", tensor.Shape{2, 3, 5}, slices.Repeat([]float64{1, 0, 1}, 10))
	if err != nil {
		t.Fatal(err)
	}
	w := G.Must(ops.KernelWeights(ops.KindLaplacian, q, k, nil, 2.5, keep))
	head := G.Must(ops.AttentionHead(ops.KindSoftmax, g, 0, true, z, wq, wk, wv, p))
	mm := G.Must(ops.MatMul(z, wq, false, false)) // (2, 3, 2)
	sl := G.Must(ops.Slice(head, 1, 1, 3))
	loss := G.Must(G.Add(G.Must(G.Sum(w)), G.Must(G.Add(G.Must(G.Sum(sl)), G.Must(G.Sum(mm))))))
	if _, err := G.Grad(loss, z, q, k, wq, wk, wv, p, lg); err != nil {
		t.Fatal(err)
	}
	kop := w.Op().(*ops.KernelOp)
	if kop.Kind() != ops.KindLaplacian || kop.FixedG() != 2.5 || kop.LearnG() || !kop.Masked() || kop.DataQK() {
		t.Errorf("kernel op: kind %v g %v learn %v masked %v data %v", kop.Kind(), kop.FixedG(), kop.LearnG(), kop.Masked(), kop.DataQK())
	}
	hop := head.Op().(*ops.HeadOp)
	if hop.Kind() != ops.KindSoftmax || !hop.LearnG() || !hop.ContextKeys() {
		t.Errorf("head op: kind %v learn %v context %v", hop.Kind(), hop.LearnG(), hop.ContextKeys())
	}
	if mo := mm.Op().(*ops.MatMulOp); mo.TransA() || mo.TransB() {
		t.Errorf("matmul op: transposes %v %v", mo.TransA(), mo.TransB())
	}
	if so := sl.Op().(*ops.SliceOp); so.Axis() != 1 || so.Backward() || !so.Shape().Eq(tensor.Shape{2, 3, 4}) {
		t.Errorf("slice op: axis %d backward %v shape %v", so.Axis(), so.Backward(), so.Shape())
	}
	var kernelWrt, headWrt []int
	var dz, sliceGrads, mmGrads int
	for _, n := range s.Graph().AllNodes() {
		switch op := n.Op().(type) {
		case *ops.KernelGradOp:
			if op.Forward().Kind() != ops.KindLaplacian || op.Forward().FixedG() != 2.5 || !op.Forward().Masked() {
				t.Errorf("kernel gradient op: forward %v", op.Forward())
			}
			kernelWrt = append(kernelWrt, op.Wrt())
		case *ops.HeadGradOp:
			if op.Head() != hop {
				t.Error("head gradient op: Head is not the forward op")
			}
			dz++
		case *ops.HeadParamGradOp:
			if op.Head() != hop {
				t.Error("head parameter gradient op: Head is not the forward op")
			}
			headWrt = append(headWrt, op.Wrt())
		case *ops.SliceOp:
			if op.Backward() {
				if lo, hi := op.Band(); lo != 1 || hi != 3 {
					t.Errorf("slice gradient band [%d, %d)", lo, hi)
				}
				sliceGrads++
			}
		case *ops.MatMulOp:
			if n != mm {
				mmGrads++
			}
		}
	}
	slices.Sort(kernelWrt)
	slices.Sort(headWrt)
	if !slices.Equal(kernelWrt, []int{0, 1}) || !slices.Equal(headWrt, []int{1, 2, 3, 4, 5}) || dz != 1 || sliceGrads != 1 || mmGrads != 2 {
		t.Errorf("gradient ops: kernel wrt %v, head wrt %v, dz %d, slice %d, matmul %d", kernelWrt, headWrt, dz, sliceGrads, mmGrads)
	}
}

// A backend reads an op through its exported type and accessors: here the
// ops of a projection, a kernel and their gradients (none for the data x).
func Example() {
	s, _ := graph.NewScope(graph.Float64, 1)
	x, _ := s.Input("x", tensor.Shape{2, 3, 4})                   // (B, T, D) tokens
	ops.MarkData(x)                                               // no gradient for x
	wq, _ := s.Param("wq", tensor.Shape{4, 4}, graph.Normal(0.5)) // (D, D)
	q := G.Must(ops.MatMul(x, wq, false, false))                  // (B, T, D)
	w := G.Must(ops.KernelWeights(ops.KindSoftmax, q, q, nil, 1, nil))
	if _, err := G.Grad(G.Must(G.Sum(w)), wq); err != nil {
		panic(err)
	}
	fmt.Println("weights", w.Shape())
	var lines []string
	for _, n := range s.Graph().AllNodes() {
		switch op := n.Op().(type) {
		case *ops.MatMulOp:
			lines = append(lines, fmt.Sprintf("matmul transA=%v transB=%v", op.TransA(), op.TransB()))
		case *ops.KernelOp:
			lines = append(lines, fmt.Sprintf("kernel %v g=%v", op.Kind(), op.FixedG()))
		case *ops.KernelGradOp:
			lines = append(lines, fmt.Sprintf("kernel gradient %v wrt %d", op.Forward().Kind(), op.Wrt()))
		}
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// weights (2, 3, 3)
	// kernel gradient softmax wrt 0
	// kernel gradient softmax wrt 1
	// kernel softmax g=1
	// matmul transA=false transB=false
	// matmul transA=true transB=false
}
