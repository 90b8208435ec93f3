package lmio

import (
	"math"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// bagLM is the smallest causal model on a Window: its body is the identity
// on the embedded ids, so the logits of position j are ln_f(wte[id_j]) wteᵀ.
type bagLM struct {
	*Window
	emb *layers.SparseEmbedding
}

func newBag(s *graph.Scope, B, T, C, d int, next bool) (*bagLM, error) {
	w, emb, err := New(s, "bag", B, T, C, d, graph.Normal(0.5), next)
	if err != nil {
		return nil, err
	}
	x, err := emb.Lookup(IDs(w)) // (B, T, d)
	if err != nil {
		return nil, err
	}
	h, err := Rows(w, x, d) // (B·T, d) or (B, d)
	if err != nil {
		return nil, err
	}
	if err := Head(w, h, d); err != nil {
		return nil, err
	}
	return &bagLM{Window: w, emb: emb}, nil
}

// refLogits is the plain-Go forward pass of bagLM at its initial layer norm
// (scale 1, bias 0, eps 1e-5): ln(wte[id]) · wteᵀ.
func refLogits(wte []float64, C, d, id int) []float64 {
	row := wte[id*d : (id+1)*d]
	mean, v := 0.0, 0.0
	for _, x := range row {
		mean += x
	}
	mean /= float64(d)
	for _, x := range row {
		v += (x - mean) * (x - mean)
	}
	v /= float64(d)
	out := make([]float64, C)
	for c := 0; c < C; c++ {
		for k, x := range row {
			out[c] += (x - mean) / math.Sqrt(v+1e-5) * wte[c*d+k]
		}
	}
	return out
}

// TestWindowTrainingAndGeneration checks the training graph's logits against
// the plain-Go reference, and that the generation graph rebuilt from it
// (Rebuild) computes, for each window's length l, the training logits of
// position l-1.
func TestWindowTrainingAndGeneration(t *testing.T) {
	const B, T, C, d = 2, 3, 5, 4
	s, err := graph.NewScope(tensor.Float64, 7)
	if err != nil {
		t.Fatal(err)
	}
	m, err := newBag(s.Sub("lm"), B, T, C, d, false)
	if err != nil {
		t.Fatal(err)
	}
	if m.BatchSize() != B || m.ContextLen() != T || m.VocabSize() != C || m.Generates() {
		t.Fatalf("sizes %d %d %d generates %v", m.BatchSize(), m.ContextLen(), m.VocabSize(), m.Generates())
	}
	ids := []int{0, 4, 2, 3, 3, 1}
	if err := m.Feed(ids, []int{1, 2, -1, 0, 0, 4}); err != nil {
		t.Fatal(err)
	}
	logits, targets, next := m.LMOutputs()
	if targets == nil || next != nil {
		t.Fatalf("training graph outputs: targets %v next %v", targets, next)
	}
	mc, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{logits}})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	if err := mc.Run(); err != nil {
		t.Fatal(err)
	}
	got, err := graph.Values(logits)
	if err != nil {
		t.Fatal(err)
	}
	wteNode, ok := s.Sub("lm").Lookup("lm/wte/w")
	if !ok {
		var names []string
		for _, p := range s.Params() {
			names = append(names, p.Name())
		}
		t.Fatalf("no lm/wte/w among %v", names)
	}
	wte, err := graph.Values(wteNode)
	if err != nil {
		t.Fatal(err)
	}
	for r, id := range ids {
		want := refLogits(wte, C, d, id)
		for c := range want {
			if g := got[r*C+c]; math.Abs(g-want[c]) > 1e-9 {
				t.Fatalf("logit (%d, %d): got %v, want %v", r, c, g, want[c])
			}
		}
	}

	g, err := Rebuild(s.Sub("lm"), func(s *graph.Scope) (*bagLM, error) { return newBag(s, B, T, C, d, true) })
	if err != nil {
		t.Fatal(err)
	}
	if !g.Generates() {
		t.Fatal("rebuilt graph does not generate")
	}
	lengths := []int{3, 1}
	if err := g.FeedNext(ids, lengths); err != nil {
		t.Fatal(err)
	}
	_, _, nextL := g.LMOutputs()
	gm, err := graph.NewMachine(g.Window.s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{nextL}})
	if err != nil {
		t.Fatal(err)
	}
	defer gm.Close()
	if err := gm.Run(); err != nil {
		t.Fatal(err)
	}
	gotNext, err := graph.Values(nextL)
	if err != nil {
		t.Fatal(err)
	}
	for b, l := range lengths {
		row := b*T + l - 1
		for c := 0; c < C; c++ {
			if a, w := gotNext[b*C+c], got[row*C+c]; math.Abs(a-w) > 1e-12 {
				t.Fatalf("next logit (%d, %d): got %v, want the training row %d's %v", b, c, a, row, w)
			}
		}
	}
}

// TestWindowRefusals checks the errors of feeding the wrong graph, bad
// lengths, bad ids and a mismatched codec; none panics.
func TestWindowRefusals(t *testing.T) {
	const B, T, C, d = 2, 3, 5, 4
	s, _ := graph.NewScope(tensor.Float64, 1)
	tr, err := newBag(s.Sub("a"), B, T, C, d, false)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := newBag(s.Sub("b"), B, T, C, d, true)
	if err != nil {
		t.Fatal(err)
	}
	ids := []int{0, 1, 2, 3, 4, 0}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"FeedNext on training", tr.FeedNext(ids, []int{1, 1}), "FeedNext on a training graph"},
		{"Feed on generation", gen.Feed(ids, ids), "Feed on a generation graph"},
		{"lengths count", gen.FeedNext(ids, []int{1}), "1 lengths for a batch of 2"},
		{"length 0", gen.FeedNext(ids, []int{0, 1}), "length 0 of sequence 0 is outside [1, 3]"},
		{"length > T", gen.FeedNext(ids, []int{1, 4}), "length 4 of sequence 1"},
		{"id out of range", tr.Feed([]int{0, 1, 2, 3, 4, 5}, ids), "ids"},
		{"target out of range", tr.Feed(ids, []int{0, 1, 2, 3, 4, 9}), "targets"},
		{"short ids", tr.Feed(ids[:5], ids), "ids"},
		{"codec without vocabulary", tr.SetTextCodec(&data.TextCodec{}), "without a tokenizer or a vocabulary"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", c.err, c.want)
			}
			if !strings.HasPrefix(c.err.Error(), "bag: ") {
				t.Errorf("error %q does not start with the model's prefix", c.err)
			}
		})
	}
	tok, err := data.NewGPT2Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	full := &data.TextCodec{Tok: tok, Vocab: data.FullVocab()}
	if err := tr.SetTextCodec(full); err == nil || !strings.Contains(err.Error(), "the model 5") {
		t.Fatalf("codec of %d ids on a model of 5: got %v", full.Vocab.Size(), err)
	}
	if err := tr.SetTextCodec(nil); err != nil || tr.TextCodec() != nil {
		t.Fatalf("removing the codec: %v, %v", err, tr.TextCodec())
	}
}

type cfgT struct{ n int }

func (c cfgT) Validate() (cfgT, error) {
	if c.n == 0 {
		c.n = 3
	}
	return c, nil
}

// TestBuild checks that Build refuses a nil scope, fills the defaults
// before sizes and build, and prefixes build's error with the scope path.
func TestBuild(t *testing.T) {
	ok := func(cfgT) error { return nil }
	if _, err := Build("m", nil, cfgT{}, ok, func(cfgT) (int, error) { return 1, nil }); err == nil || err.Error() != "m: scope is nil" {
		t.Fatalf("nil scope: %v", err)
	}
	s, _ := graph.NewScope(tensor.Float64, 1)
	n, err := Build("m", s.Sub("x"), cfgT{}, ok, func(c cfgT) (int, error) { return c.n, nil })
	if err != nil || n != 3 {
		t.Fatalf("defaults: got %d, %v; want 3", n, err)
	}
	_, err = Build("m", s.Sub("y"), cfgT{}, ok, func(cfgT) (int, error) { return 0, errBoom{} })
	if err == nil || err.Error() != `m "y": boom` {
		t.Fatalf("build error: %v", err)
	}
}

type errBoom struct{}

func (errBoom) Error() string { return "boom" }
