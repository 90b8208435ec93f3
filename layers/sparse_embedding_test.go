package layers

import (
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// sparseIDs has repeated ids (3 and 0 twice) and leaves ids 2 and 5 unused.
var sparseIDs = []int{3, 0, 4, 3, 1, 0}

// TestSparseEmbeddingGrad checks the gather's gradient (scattered rows,
// repeated ids adding up, unused rows zero) against finite differences, alone
// and tied to an output layer as in the language models (logits = h W_e).
func TestSparseEmbeddingGrad(t *testing.T) {
	const V, D = 6, 3
	for _, tied := range []bool{false, true} {
		build := func(s *graph.Scope) (*G.Node, error) {
			e, err := NewSparseEmbedding(s.Sub("wte"), EmbeddingConfig{Vocab: V, Dim: D, WInit: graph.Normal(1)})
			if err != nil {
				return nil, err
			}
			ids, err := NewIDs(s, "ids", 2, 3)
			if err != nil {
				return nil, err
			}
			if err := e.SetIDs(ids, sparseIDs); err != nil {
				return nil, err
			}
			x, err := e.Lookup(ids) // (2, 3, D)
			if err != nil {
				return nil, err
			}
			c, err := s.Const("c", tensor.Shape{2, 3, D}, graphtest.RandValues(s, 2*3*D))
			if err != nil {
				return nil, err
			}
			y := G.Must(G.HadamardProd(G.Must(G.Square(x)), c))
			if !tied {
				return G.Sum(y)
			}
			we, err := e.We()
			if err != nil {
				return nil, err
			}
			h := G.Must(ops.Reshape(y, tensor.Shape{6, D}))
			return G.Sum(G.Must(G.Square(G.Must(G.Mul(h, we))))) // (6, V) logits
		}
		worst := graphtest.CheckGrad(t, build, graphtest.Options{Seed: 1})
		worst32 := graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 1})
		t.Logf("tied %v: max relative error float64 %.2e, float32 %.2e", tied, worst, worst32)
	}
}

// TestSparseEmbeddingMatchesByIndices compares values and gradients with
// the ByIndices-based Embedding over several runs of one machine with
// different ids, so that a stale row in the reused gradient buffer shows.
func TestSparseEmbeddingMatchesByIndices(t *testing.T) {
	const V, D = 7, 2
	type setup struct {
		s    *graph.Scope
		ids  *G.Node
		set  func([]int) error
		mc   *graph.Machine
		out  *G.Node
		loss *G.Node
	}
	mk := func(sparse bool) setup {
		s, _ := graph.NewScope(graph.Float64, 5)
		var lookup func(*G.Node) (*G.Node, error)
		var set func(*G.Node, []int) error
		if sparse {
			e, err := NewSparseEmbedding(s.Sub("e"), EmbeddingConfig{Vocab: V, Dim: D})
			if err != nil {
				t.Fatal(err)
			}
			lookup, set = e.Lookup, e.SetIDs
		} else {
			e, err := NewEmbedding(s.Sub("e"), EmbeddingConfig{Vocab: V, Dim: D})
			if err != nil {
				t.Fatal(err)
			}
			lookup, set = e.Lookup, e.SetIDs
		}
		ids, _ := NewIDs(s, "ids", 2, 2)
		out, err := lookup(ids)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := s.Const("w", tensor.Shape{2, 2, D}, []float64{1, -2, 3, 0.5, -1, 2, 0.25, 4})
		loss := G.Must(G.Sum(G.Must(G.HadamardProd(out, w))))
		mc, err := graph.NewMachine(s, loss, graph.MachineOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return setup{s: s, ids: ids, set: func(v []int) error { return set(ids, v) }, mc: mc, out: out, loss: loss}
	}
	a, b := mk(true), mk(false)
	defer a.mc.Close()
	defer b.mc.Close()
	for _, ids := range [][]int{{1, 1, 6, 0}, {2, 3, 2, 5}, {4, 4, 4, 4}} {
		for _, x := range []setup{a, b} {
			if err := x.set(ids); err != nil {
				t.Fatal(err)
			}
			if err := x.mc.Run(); err != nil {
				t.Fatal(err)
			}
		}
		va, _ := graph.Values(a.out)
		vb, _ := graph.Values(b.out)
		graphtest.AllClose(t, "lookup", va, vb, 0)
		ga, _ := graph.GradValues(a.s.Params()[0])
		gb, _ := graph.GradValues(b.s.Params()[0])
		graphtest.AllClose(t, "gradient", ga, gb, 0)
	}
}

func TestSparseEmbeddingErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	if _, err := NewSparseEmbedding(s.Sub("bad"), EmbeddingConfig{Vocab: 0, Dim: 2}); err == nil {
		t.Error("Vocab 0: no error")
	}
	e, err := NewSparseEmbedding(s.Sub("e"), EmbeddingConfig{Vocab: 4, Dim: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Lookup(nil); err == nil {
		t.Error("nil ids: no error")
	}
	f, _ := s.Input("floats", tensor.Shape{3})
	if _, err := e.Lookup(f); err == nil || !strings.Contains(err.Error(), "want int") {
		t.Errorf("float ids: err = %v", err)
	}
	ids, _ := NewIDs(s, "ids", 3)
	if err := e.SetIDs(ids, []int{0, 4, 1}); err == nil || !strings.Contains(err.Error(), "id 4") {
		t.Errorf("SetIDs out of range: err = %v", err)
	}
	// An id written behind SetIDs's back fails the run with an error.
	out, err := e.Lookup(ids)
	if err != nil {
		t.Fatal(err)
	}
	ids.Value().Data().([]int)[1] = 9
	mc, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{out}})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	if err := mc.Run(); err == nil || !strings.Contains(err.Error(), "id 9 at position 1") {
		t.Errorf("run with id 9: err = %v", err)
	}
}

// BenchmarkEmbeddingBackward compares a training step's lookup gradient
// through ByIndices (a fresh (V, D) tensor per step) and through Gather (a
// reused buffer) at the paper's vocabulary: go test -bench EmbeddingBackward.
func BenchmarkEmbeddingBackward(b *testing.B) {
	const V, D, N = 50258, 512, 2048
	for _, sparse := range []bool{false, true} {
		name := "ByIndices"
		if sparse {
			name = "Gather"
		}
		b.Run(name, func(b *testing.B) {
			s, _ := graph.NewScope(graph.Float32, 1)
			ids, _ := NewIDs(s, "ids", N)
			var out *G.Node
			var err error
			if sparse {
				e, _ := NewSparseEmbedding(s.Sub("e"), EmbeddingConfig{Vocab: V, Dim: D})
				out, err = e.Lookup(ids)
			} else {
				e, _ := NewEmbedding(s.Sub("e"), EmbeddingConfig{Vocab: V, Dim: D})
				out, err = e.Lookup(ids)
			}
			if err != nil {
				b.Fatal(err)
			}
			loss := G.Must(G.Sum(out))
			mc, err := graph.NewMachine(s, loss, graph.MachineOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer mc.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := mc.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// centeredBuild is Σ c ⊙ (x)² for x = LookupCentered(ids) or, with ref,
// x = Lookup(ids) − (1/V) 1ᵀ w built from Gorgonia ops.
func centeredBuild(ref bool) graphtest.BuildFunc {
	const V, D = 6, 3
	return func(s *graph.Scope) (*G.Node, error) {
		e, err := NewSparseEmbedding(s.Sub("wte"), EmbeddingConfig{Vocab: V, Dim: D, WInit: graph.Normal(1)})
		if err != nil {
			return nil, err
		}
		ids, err := NewIDs(s, "ids", 2, 3)
		if err != nil {
			return nil, err
		}
		if err := e.SetIDs(ids, sparseIDs); err != nil {
			return nil, err
		}
		var x *G.Node
		if ref {
			mean, err := s.Const("mean_row", tensor.Shape{1, V}, []float64{1.0 / V, 1.0 / V, 1.0 / V, 1.0 / V, 1.0 / V, 1.0 / V})
			if err != nil {
				return nil, err
			}
			wbar := G.Must(ops.Reshape(G.Must(G.Mul(mean, e.Weight())), tensor.Shape{1, 1, D}))
			x = G.Must(G.BroadcastSub(G.Must(e.Lookup(ids)), wbar, nil, []byte{0, 1}))
		} else if x, err = e.LookupCentered(ids); err != nil {
			return nil, err
		}
		c, err := s.Const("c", tensor.Shape{2, 3, D}, graphtest.RandValues(s, 2*3*D))
		if err != nil {
			return nil, err
		}
		return G.Sum(G.Must(G.HadamardProd(G.Must(G.Square(x)), c)))
	}
}

func TestLookupCentered(t *testing.T) {
	worst := graphtest.CheckGrad(t, centeredBuild(false), graphtest.Options{Seed: 1})
	worst32 := graphtest.CheckGrad32(t, centeredBuild(false), graphtest.Options{Seed: 1})
	t.Logf("max relative error float64 %.2e, float32 %.2e", worst, worst32)
	for _, dt := range []tensor.Dtype{graph.Float64, graph.Float32} {
		got, gg := graphtest.Gradients(t, centeredBuild(false), dt, 2)
		want, wg := graphtest.Gradients(t, centeredBuild(true), dt, 2)
		tol := 1e-12
		if dt == graph.Float32 {
			tol = 1e-5
		}
		graphtest.AllClose(t, "value", []float64{got}, []float64{want}, tol)
		graphtest.AllClose(t, "gradient", gg["wte/w"], wg["wte/w"], tol)
	}
}
