package layers_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/layers"
)

// Table size of the embedding tests: small, so that ids repeat and some rows
// stay unused.
const (
	embVocab = 7
	embDim   = 3
)

// embTable draws the (embVocab, embDim) table from N(0, 1), seeded (1, 1).
func embTable() []float64 {
	rng := rand.New(rand.NewPCG(1, 1))
	w := make([]float64, embVocab*embDim)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	return w
}

// embRows is the plain-Go lookup: the rows of w (row-major, width embDim) at ids.
func embRows(w []float64, ids []int) []float64 {
	out := make([]float64, 0, len(ids)*embDim)
	for _, id := range ids {
		out = append(out, w[id*embDim:(id+1)*embDim]...)
	}
	return out
}

var embCases = []struct {
	name  string
	shape []int // shape of the ids
	ids   []int // row-major; repeats 3 (and 1), leaves 2, 4 and 5 unused
}{
	{"N", []int{5}, []int{3, 0, 3, 6, 1}},
	{"BT", []int{2, 3}, []int{1, 3, 3, 6, 0, 1}},
	{"single", []int{1}, []int{6}},
	{"single_BT", []int{1, 1}, []int{2}},
}

// embBuild builds the table under "tok" and looks up ids of the given shape.
// With r != nil it returns Σ lookup ⊙ r, else the lookup itself (after
// checking its shape).
func embBuild(shape, ids []int, r []float64) graphtest.BuildFunc {
	w := embTable()
	return func(s *graph.Scope) (*G.Node, error) {
		e, err := layers.NewEmbedding(s.Sub("tok"), layers.EmbeddingConfig{Vocab: embVocab, Dim: embDim, WInit: graph.FromValues(w)})
		if err != nil {
			return nil, err
		}
		idn, err := layers.NewIDs(s, "ids", shape...)
		if err != nil {
			return nil, err
		}
		if err := e.SetIDs(idn, ids); err != nil {
			return nil, err
		}
		y, err := e.Lookup(idn)
		if err != nil {
			return nil, err
		}
		want := append(tensor.Shape(append([]int{}, shape...)), embDim)
		if !y.Shape().Eq(want) {
			return nil, fmt.Errorf("Lookup shape %v, want %v", y.Shape(), want)
		}
		if r == nil {
			return y, nil
		}
		rn, err := s.Const("r", want, r)
		if err != nil {
			return nil, err
		}
		return G.Sum(G.Must(G.HadamardProd(y, rn)))
	}
}

func TestEmbeddingLookup(t *testing.T) {
	for _, c := range embCases {
		t.Run(c.name, func(t *testing.T) {
			want := embRows(embTable(), c.ids)
			for _, tc := range []struct {
				dt  tensor.Dtype
				tol float64
			}{
				{tensor.Float64, 0}, // a lookup copies values exactly
				{tensor.Float32, 1e-7},
			} {
				got := graphtest.Forward(t, embBuild(c.shape, c.ids, nil), tc.dt, 1)
				if diff := cmp.Diff(want, got, cmpopts.EquateApprox(tc.tol, 0)); diff != "" {
					t.Errorf("%v lookup (-want +got):\n%s", tc.dt, diff)
				}
			}
		})
	}
}

func TestEmbeddingGrad(t *testing.T) {
	for _, c := range embCases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 1))
			r := make([]float64, len(c.ids)*embDim)
			for i := range r {
				r[i] = rng.NormFloat64()
			}
			build := embBuild(c.shape, c.ids, r)
			m64 := graphtest.CheckGrad(t, build, graphtest.Options{Seed: 1})
			m32 := graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 1})
			t.Logf("max error: float64 %.3g, float32 %.3g", m64, m32)

			// Exactly: row c of dL/dw is the sum of the r rows at the positions
			// holding id c (repeated ids accumulate, unused rows are zero).
			want := make([]float64, embVocab*embDim)
			for pos, id := range c.ids {
				for j := range embDim {
					want[id*embDim+j] += r[pos*embDim+j]
				}
			}
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				_, grads := graphtest.Gradients(t, build, dt, 1)
				if diff := cmp.Diff(want, grads["tok/w"], cmpopts.EquateApprox(1e-6, 1e-6)); diff != "" {
					t.Errorf("%v dL/dw (-want +got):\n%s", dt, diff)
				}
			}
		})
	}
}

// TestEmbeddingReuse compiles one machine and feeds it several minibatches of
// ids, as a training loop does.
func TestEmbeddingReuse(t *testing.T) {
	w := embTable()
	s, err := graph.NewScope(tensor.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	e, err := layers.NewEmbedding(s.Sub("tok"), layers.EmbeddingConfig{Vocab: embVocab, Dim: embDim, WInit: graph.FromValues(w)})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := layers.NewIDs(s, "ids", 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	y, err := e.Forward(ids)
	if err != nil {
		t.Fatal(err)
	}
	m := G.NewTapeMachine(s.Graph())
	defer m.Close()
	for step, batch := range [][]int{{0, 1, 2, 3}, {6, 6, 5, 0}, {4, 4, 4, 4}} {
		if err := e.SetIDs(ids, batch); err != nil {
			t.Fatal(err)
		}
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
		got, err := graph.Values(y)
		if err != nil {
			t.Fatal(err)
		}
		m.Reset()
		if diff := cmp.Diff(embRows(w, batch), got); diff != "" {
			t.Errorf("step %d, ids %v (-want +got):\n%s", step, batch, diff)
		}
	}
}

func TestEmbeddingSetIDsErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shape []int
		vals  []int
		want  []string // substrings of the error
	}{
		{"negative", []int{4}, []int{0, 1, -1, 2}, []string{"id -1 at position 2", "[0, 7)"}},
		{"too_large", []int{2, 3}, []int{0, 1, 2, 3, 7, 9}, []string{"id 7 at position 4 (row 1, column 1)"}},
		{"length", []int{2, 3}, []int{0, 1, 2}, []string{"has 6 elements", "got 3 ids"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := graph.NewScope(tensor.Float64, 1)
			if err != nil {
				t.Fatal(err)
			}
			e, err := layers.NewEmbedding(s.Sub("blk").Sub("tok"), layers.DefaultEmbeddingConfig(embVocab, embDim))
			if err != nil {
				t.Fatal(err)
			}
			ids, err := layers.NewIDs(s, "ids", tc.shape...)
			if err != nil {
				t.Fatal(err)
			}
			err = e.SetIDs(ids, tc.vals)
			if err == nil {
				t.Fatalf("SetIDs(%v) = nil error", tc.vals)
			}
			for _, want := range append(tc.want, `embedding "blk/tok"`) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			// Nothing was written.
			if got := ids.Value().Data().([]int); !cmp.Equal(got, make([]int, len(got))) {
				t.Errorf("ids after a failed SetIDs = %v, want all zeros", got)
			}
		})
	}
	t.Run("float_node", func(t *testing.T) {
		s, _ := graph.NewScope(tensor.Float64, 1)
		e, err := layers.NewEmbedding(s.Sub("tok"), layers.DefaultEmbeddingConfig(embVocab, embDim))
		if err != nil {
			t.Fatal(err)
		}
		x, err := s.Input("x", tensor.Shape{2})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.SetIDs(x, []int{0, 1}); err == nil || !strings.Contains(err.Error(), "not an int") {
			t.Errorf("SetIDs(float node) error = %v, want one containing %q", err, "not an int")
		}
		if err := e.SetIDs(nil, []int{0}); err == nil {
			t.Error("SetIDs(nil) = nil error")
		}
	})
}

func TestEmbeddingConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  layers.EmbeddingConfig
		want string
	}{
		{"zero_vocab", layers.EmbeddingConfig{Dim: 3}, "Vocab = 0"},
		{"negative_vocab", layers.EmbeddingConfig{Vocab: -1, Dim: 3}, "Vocab = -1"},
		{"zero_dim", layers.EmbeddingConfig{Vocab: 3}, "Dim = 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := graph.NewScope(tensor.Float64, 1)
			_, err := layers.NewEmbedding(s.Sub("blk").Sub("tok"), tc.cfg)
			if err == nil {
				t.Fatalf("NewEmbedding(%+v) = nil error", tc.cfg)
			}
			for _, want := range []string{tc.want, `embedding "blk/tok"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
	t.Run("duplicate", func(t *testing.T) {
		s, _ := graph.NewScope(tensor.Float64, 1)
		cfg := layers.DefaultEmbeddingConfig(3, 2)
		if _, err := layers.NewEmbedding(s.Sub("tok"), cfg); err != nil {
			t.Fatal(err)
		}
		if _, err := layers.NewEmbedding(s.Sub("tok"), cfg); err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Errorf("second NewEmbedding in the same scope: error %v, want one containing %q", err, "already exists")
		}
	})
}

func TestEmbeddingLookupErrors(t *testing.T) {
	s, _ := graph.NewScope(tensor.Float64, 1)
	e, err := layers.NewEmbedding(s.Sub("blk").Sub("tok"), layers.DefaultEmbeddingConfig(embVocab, embDim))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := graph.NewScope(tensor.Float64, 1)
	foreign, err := layers.NewIDs(other, "ids", 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ids  *G.Node
		want string
	}{
		{"nil", nil, "nil"},
		{"float", G.NewVector(s.Graph(), tensor.Float64, G.WithShape(3), G.WithName("f")), "dtype float64, want int"},
		{"rank3", G.NewTensor(s.Graph(), tensor.Int, 3, G.WithShape(2, 2, 2), G.WithName("i3")), "want (N) or (B, T)"},
		{"other_graph", foreign, "another graph"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Lookup(tc.ids)
			if err == nil {
				t.Fatal("Lookup = nil error")
			}
			for _, want := range []string{tc.want, `embedding "blk/tok"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestNewIDsErrors(t *testing.T) {
	s, _ := graph.NewScope(tensor.Float64, 1)
	if _, err := layers.NewIDs(s.Sub("data"), "ids", 4); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		id    string
		shape []int
		want  string
	}{
		{"duplicate", "ids", []int{4}, "already has a node"},
		{"rank0", "a", nil, "want (N) or (B, T)"},
		{"rank3", "b", []int{1, 2, 3}, "want (N) or (B, T)"},
		{"zero", "c", []int{2, 0}, "positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := layers.NewIDs(s.Sub("data"), tc.id, tc.shape...)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "data/"+tc.id) {
				t.Errorf("NewIDs(%q, %v) error = %v, want one naming %q and containing %q", tc.id, tc.shape, err, "data/"+tc.id, tc.want)
			}
		})
	}
}

// TestEmbeddingWe checks the paper-layout view W_e = wᵀ (Dim, Vocab) and
// that gradients flow through it together with a lookup of the same table.
func TestEmbeddingWe(t *testing.T) {
	w := embTable()
	want := make([]float64, len(w)) // wᵀ, row-major (embDim, embVocab)
	for c := range embVocab {
		for j := range embDim {
			want[j*embVocab+c] = w[c*embDim+j]
		}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	r := make([]float64, len(w))
	for i := range r {
		r[i] = rng.NormFloat64()
	}
	build := func(withLoss bool) graphtest.BuildFunc {
		return func(s *graph.Scope) (*G.Node, error) {
			e, err := layers.NewEmbedding(s.Sub("tok"), layers.EmbeddingConfig{Vocab: embVocab, Dim: embDim, WInit: graph.FromValues(w)})
			if err != nil {
				return nil, err
			}
			we, err := e.We()
			if err != nil {
				return nil, err
			}
			if again, _ := e.We(); again != we {
				return nil, fmt.Errorf("a second We() built a new node")
			}
			if !we.Shape().Eq(tensor.Shape{embDim, embVocab}) {
				return nil, fmt.Errorf("We shape %v, want (%d, %d)", we.Shape(), embDim, embVocab)
			}
			if !withLoss {
				return we, nil
			}
			rn, err := s.Const("r", tensor.Shape{embDim, embVocab}, r)
			if err != nil {
				return nil, err
			}
			// Tied use, as in the GD models: the same table is also looked up.
			ids, err := layers.NewIDs(s, "ids", 4)
			if err != nil {
				return nil, err
			}
			if err := e.SetIDs(ids, []int{2, 0, 2, 5}); err != nil {
				return nil, err
			}
			x, err := e.Lookup(ids) // (4, embDim)
			if err != nil {
				return nil, err
			}
			l1 := G.Must(G.Sum(G.Must(G.HadamardProd(we, rn))))
			return G.Add(l1, G.Must(G.Sum(G.Must(G.Square(x)))))
		}
	}
	if diff := cmp.Diff(want, graphtest.Forward(t, build(false), tensor.Float64, 1)); diff != "" {
		t.Errorf("We values (-want +got):\n%s", diff)
	}
	graphtest.CheckGrad(t, build(true), graphtest.Options{Seed: 1})
}

func TestEmbeddingParams(t *testing.T) {
	s, _ := graph.NewScope(tensor.Float64, 1)
	e, err := layers.NewEmbedding(s.Sub("pos"), layers.EmbeddingConfig{Vocab: 5, Dim: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Params(); len(got) != 1 || got[0] != e.Weight() || got[0].Name() != "pos/w" {
		t.Errorf("Params = %v, want [pos/w]", got)
	}
	if !e.Weight().Shape().Eq(tensor.Shape{5, 2}) {
		t.Errorf("w shape %v, want (5, 2)", e.Weight().Shape())
	}
	if e.Config().WInit == nil {
		t.Error("Config().WInit = nil, want the Normal(0.02) default filled in")
	}
}

// ExampleEmbedding compiles a graph once and feeds it two minibatches of ids.
func ExampleEmbedding() {
	s, err := graph.NewScope(graph.Float64, 1)
	if err != nil {
		panic(err)
	}
	// Row c of the table is (c, 10c), so the output shows which rows were read.
	tok, err := layers.NewEmbedding(s.Sub("tok"), layers.EmbeddingConfig{
		Vocab: 4, Dim: 2, WInit: graph.FromValues([]float64{0, 0, 1, 10, 2, 20, 3, 30}),
	})
	if err != nil {
		panic(err)
	}
	ids, err := layers.NewIDs(s, "ids", 1, 3) // (B, T)
	if err != nil {
		panic(err)
	}
	x, err := tok.Lookup(ids) // (B, T, Dim)
	if err != nil {
		panic(err)
	}
	m := G.NewTapeMachine(s.Graph())
	defer m.Close()
	for _, batch := range [][]int{{1, 2, 3}, {3, 3, 0}} {
		if err := tok.SetIDs(ids, batch); err != nil {
			panic(err)
		}
		if err := m.RunAll(); err != nil {
			panic(err)
		}
		v, _ := graph.Values(x)
		fmt.Println(x.Shape(), v)
		m.Reset()
	}
	fmt.Println(s.ParamNames())
	fmt.Println(tok.SetIDs(ids, []int{0, 4, 1}))
	// Output:
	// (1, 3, 2) [1 10 2 20 3 30]
	// (1, 3, 2) [3 30 3 30 0 0]
	// [tok/w]
	// layers: embedding "tok": id 4 at position 1 (row 0, column 1) of "ids" is out of range [0, 4)
}
