package tf

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/losses"
	G "gorgonia.org/gorgonia"
)

func gptTokens(seed uint64, B, T, V int) (ids, targets []int) {
	rng := rand.New(rand.NewPCG(seed, 5))
	ids = make([]int, B*T)
	targets = make([]int, B*T)
	for i := range ids {
		ids[i] = rng.IntN(V)
		targets[i] = rng.IntN(V)
	}
	targets[0] = -1
	return ids, targets
}

// gptScale redraws every parameter from N(0, std²) (the scope's seeded
// generator), so that the tests run away from the near-uniform nanoGPT init.
func gptScale(s *graph.Scope, std float64) error {
	for _, p := range s.Params() {
		v := make([]float64, p.Shape().TotalSize())
		for i := range v {
			v[i] = std * s.Rand().NormFloat64()
		}
		if err := graph.SetValue(p, v); err != nil {
			return err
		}
	}
	return nil
}

// TestGPTGradients checks every parameter of the GPT language model against
// finite differences (float64, relative error < 1e-6) and runs the float32
// build at float32 tolerance.
func TestGPTGradients(t *testing.T) {
	const B, T, V = 2, 3, 7
	for _, c := range []struct {
		name string
		cfg  GPTConfig
	}{
		{"1 layer", GPTConfig{Vocab: V, Context: T, DModel: 4, Heads: 2, FFHidden: 5}},
		{"2 layers", GPTConfig{Vocab: V, Context: T, DModel: 2, Heads: 1, Layers: 2, FFHidden: 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ids, targets := gptTokens(3, B, T, V)
			build := func(s *graph.Scope) (*G.Node, error) {
				m, err := NewGPT(s.Sub("gpt"), c.cfg, GPTOptions{Batch: B})
				if err != nil {
					return nil, err
				}
				if err := gptScale(s, 0.4); err != nil {
					return nil, err
				}
				if err := m.Feed(ids, targets); err != nil {
					return nil, err
				}
				return losses.SparseSoftmaxCrossEntropy(m.Logits, m.Targets)
			}
			worst := graphtest.CheckGrad(t, build, graphtest.Options{Seed: 1})
			worst32 := graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 1})
			t.Logf("max relative error: float64 %.2e, float32 %.2e", worst, worst32)
		})
	}
}

func gptLogits(t *testing.T, cfg GPTConfig, B int, ids []int) []float64 {
	t.Helper()
	s, _ := graph.NewScope(graph.Float64, 2)
	m, err := NewGPT(s, cfg, GPTOptions{Batch: B})
	if err != nil {
		t.Fatal(err)
	}
	if err := gptScale(s, 0.2); err != nil {
		t.Fatal(err)
	}
	if err := m.Feed(ids, make([]int, len(ids))); err != nil {
		t.Fatal(err)
	}
	mc, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{m.Logits}})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	if err := mc.Run(); err != nil {
		t.Fatal(err)
	}
	v, _ := graph.Values(m.Logits)
	return v
}

// TestGPTCausal checks standard causal attention: changing token k changes
// the logits at positions >= k (a position sees itself) and leaves the
// positions before k unchanged.
func TestGPTCausal(t *testing.T) {
	const T, V = 5, 6
	cfg := GPTConfig{Vocab: V, Context: T, DModel: 4, Heads: 2}
	ids, _ := gptTokens(4, 1, T, V)
	base := gptLogits(t, cfg, 1, ids)
	for k := 0; k < T; k++ {
		changed := append([]int(nil), ids...)
		changed[k] = (changed[k] + 1) % V
		got := gptLogits(t, cfg, 1, changed)
		for j := 0; j < T; j++ {
			diff := 0.0
			for c := 0; c < V; c++ {
				diff = math.Max(diff, math.Abs(got[j*V+c]-base[j*V+c]))
			}
			if j < k && diff != 0 {
				t.Errorf("token %d changed the logits of earlier position %d by %g", k, j, diff)
			}
			if j >= k && diff < 1e-12 {
				t.Errorf("token %d did not change the logits of position %d", k, j)
			}
		}
	}
}

// TestGPTNextLogits checks that the generation graph gives the training
// graph's logits at the selected positions.
func TestGPTNextLogits(t *testing.T) {
	const B, T, V = 3, 5, 7
	cfg := GPTConfig{Vocab: V, Context: T, DModel: 4, Heads: 2}
	ids, _ := gptTokens(6, B, T, V)
	all := gptLogits(t, cfg, B, ids)
	s, _ := graph.NewScope(graph.Float64, 2)
	m, err := NewGPT(s, cfg, GPTOptions{Batch: B, Next: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := gptScale(s, 0.2); err != nil {
		t.Fatal(err)
	}
	lengths := []int{2, 5, 1}
	if err := m.FeedNext(ids, lengths); err != nil {
		t.Fatal(err)
	}
	mc, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{m.NextLogits}})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	if err := mc.Run(); err != nil {
		t.Fatal(err)
	}
	got, _ := graph.Values(m.NextLogits)
	var want []float64
	for b, l := range lengths {
		r := b*T + l - 1
		want = append(want, all[r*V:(r+1)*V]...)
	}
	graphtest.AllClose(t, "next logits", got, want, 1e-12)
}

func TestGPTNumParams(t *testing.T) {
	// The paper's sizes: d' = 512, 8 heads, 256 positions, 1 layer. Attention:
	// W_Q, W_K, W_V and P, 4·512² = 1,048,576. The rest: wte 10×512 (a
	// 10-token vocabulary here), wpe 256×512, three layer norms 3·2·512 and
	// the MLP 512·2048 + 2048 + 2048·512 + 512.
	s, _ := graph.NewScope(graph.Float32, 1)
	m, err := NewGPT(s, GPTConfig{Vocab: 10, Context: 256, DModel: 512, Heads: 8}, GPTOptions{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	attn, rest := m.NumParams()
	if attn != 4*512*512 {
		t.Errorf("attention parameters = %d, want %d", attn, 4*512*512)
	}
	if want := 10*512 + 256*512 + 6*512 + 512*2048 + 2048 + 2048*512 + 512; rest != want {
		t.Errorf("other parameters = %d, want %d", rest, want)
	}
}

func TestGPTInit(t *testing.T) {
	// nanoGPT: std 0.02, residual projections 0.02/sqrt(2L).
	s, _ := graph.NewScope(graph.Float64, 1)
	_, err := NewGPT(s, GPTConfig{Vocab: 300, Context: 64, DModel: 64, Heads: 4, Layers: 2}, GPTOptions{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		std  float64
	}{
		{"wte/w", 0.02}, {"h0/attn/head0/wq", 0.02}, {"h0/attn/head0/wo", 0.01}, {"h1/mlp/w1", 0.02}, {"h1/mlp/w2", 0.01},
	} {
		p, ok := s.Lookup(c.name)
		if !ok {
			t.Fatalf("no parameter %q", c.name)
		}
		v, _ := graph.Values(p)
		ss := 0.0
		for _, x := range v {
			ss += x * x
		}
		if got := math.Sqrt(ss / float64(len(v))); math.Abs(got-c.std) > 0.15*c.std {
			t.Errorf("%s: std %.4f, want %.4f", c.name, got, c.std)
		}
	}
}

func TestGPTErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  GPTConfig
		want string
	}{
		{"vocab", GPTConfig{Vocab: 1, Context: 2, DModel: 4}, "Vocab = 1"},
		{"context", GPTConfig{Vocab: 5, DModel: 4}, "Context = 0"},
		{"heads", GPTConfig{Vocab: 5, Context: 2, DModel: 6, Heads: 4}, "not a multiple"},
	} {
		s, _ := graph.NewScope(graph.Float64, 1)
		if _, err := NewGPT(s, c.cfg, GPTOptions{Batch: 1}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := NewGPT(s, GPTConfig{Vocab: 5, Context: 2, DModel: 4, Heads: 2}, GPTOptions{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Feed([]int{0, 9}, []int{0, 0}); err == nil || !strings.Contains(err.Error(), "id 9") {
		t.Errorf("Feed with an id out of range: err = %v", err)
	}
	if err := m.FeedNext([]int{0, 1}, []int{1}); err == nil {
		t.Error("FeedNext on a training graph: no error")
	}
}
