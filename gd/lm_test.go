package gd

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/internal/numeric"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/losses"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// lmTokens draws B·T input ids and targets in [0, V) (the last target of
// the first sequence is -1, not scored) from a fixed seed.
func lmTokens(seed uint64, B, T, V int) (ids, targets []int) {
	rng := rand.New(rand.NewPCG(seed, 3))
	ids = make([]int, B*T)
	targets = make([]int, B*T)
	for i := range ids {
		ids[i] = rng.IntN(V)
		targets[i] = rng.IntN(V)
	}
	targets[T-1] = -1
	return ids, targets
}

// lmBuild builds an LM in s.Sub("lm"), feeds fixed tokens and returns the
// loss. Embeddings start at N(0, 0.5²) so that attention is far from uniform.
func lmBuild(cfg LMConfig, B int, seed uint64) graphtest.BuildFunc {
	ids, targets := lmTokens(seed, B, cfg.Context, cfg.Vocab)
	return func(s *graph.Scope) (*G.Node, error) {
		m, err := NewLM(s.Sub("lm"), cfg, LMOptions{Batch: B})
		if err != nil {
			return nil, err
		}
		if err := m.Feed(ids, targets); err != nil {
			return nil, err
		}
		return losses.SparseSoftmaxCrossEntropy(m.Logits, m.Targets)
	}
}

// TestLMGradients checks every parameter of the GD language model against
// finite differences (float64, relative error < 1e-6) and runs the float32
// build at float32 tolerance, for each kernel and option.
func TestLMGradients(t *testing.T) {
	const B, T, V, d = 2, 4, 7, 3
	base := LMConfig{Vocab: V, DPrime: d, Context: T, Heads: 2, EmbedInit: graph.Normal(0.5)}
	cases := []struct {
		name string
		mod  func(*LMConfig)
	}{
		{"softmax", func(c *LMConfig) {}},
		{"linear", func(c *LMConfig) { c.Kernel = layers.Linear() }},
		{"rbf", func(c *LMConfig) { c.Kernel = layers.RBF(1).Fixed() }},
		{"steps=2-exactE", func(c *LMConfig) { c.Steps = 2 }},
		{"steps=2-meanE", func(c *LMConfig) { c.Steps = 2; c.MeanE = true }},
		{"diagP", func(c *LMConfig) { c.DiagP = true }},
		{"ff", func(c *LMConfig) { c.FF = true; c.FFHidden = 5 }},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			c.mod(&cfg)
			build := lmBuild(cfg, B, uint64(10+i))
			worst := graphtest.CheckGrad(t, build, graphtest.Options{Seed: 1})
			worst32 := graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 1})
			t.Logf("max relative error: float64 %.2e, float32 %.2e", worst, worst32)
		})
	}
}

// lmRef is a plain-Go forward pass of the GD language model (softmax or
// linear kernel, no FF), the explicit functional-GD unrolling of the graph:
// f_{j,0} = 0, f_{j,k+1} = f_{j,k} + Σ_m P_m Σ_{i<j} a^m_{ji}(w_{e,t_i} − E(w_e|f_{i,k})).
// It returns the logits (B·T, V) of positions 1..T.
func lmRef(cfg LMConfig, ids []int, B int, p map[string][]float64) []float64 {
	T, d, V, M := cfg.Context, cfg.DPrime, cfg.Vocab, cfg.Heads
	wte, wpe := p["lm/wte/w"], p["lm/wpe"]
	row := func(w []float64, i int) []float64 { return w[i*d : (i+1)*d] }
	expect := func(f []float64) []float64 {
		lg := make([]float64, V)
		for c := 0; c < V; c++ {
			for k := 0; k < d; k++ {
				lg[c] += wte[c*d+k] * f[k]
			}
		}
		numeric.SoftmaxInto(lg, lg)
		e := make([]float64, d)
		for c := 0; c < V; c++ {
			for k := 0; k < d; k++ {
				e[k] += lg[c] * wte[c*d+k]
			}
		}
		return e
	}
	out := make([]float64, 0, B*T*V)
	for b := 0; b < B; b++ {
		f := make([][]float64, T+1)
		for j := range f {
			f[j] = make([]float64, d)
		}
		for step := 0; step < cfg.Steps; step++ {
			vals := make([][]float64, T)
			for i := 0; i < T; i++ {
				e := expect(f[i]) // = w̄_e at f = 0
				vals[i] = make([]float64, d)
				for k := range vals[i] {
					vals[i][k] = wte[ids[b*T+i]*d+k] - e[k]
				}
			}
			next := make([][]float64, T+1)
			for j := 0; j <= T; j++ {
				next[j] = append([]float64(nil), f[j]...)
				for m := 0; m < M; m++ {
					lam := p["lm/head"+string(rune('0'+m))+"/lambda"]
					pm := p["lm/head"+string(rune('0'+m))+"/p"]
					a := make([]float64, j)
					for i := 0; i < j; i++ {
						for k := 0; k < d; k++ {
							a[i] += lam[k] * row(wpe, j)[k] * lam[k] * row(wpe, i)[k]
						}
					}
					if (cfg.Kernel == nil || cfg.Kernel.Normalised()) && j > 0 {
						numeric.SoftmaxInto(a, a)
					} else {
						for i := range a {
							a[i] /= float64(j)
						}
					}
					for i := 0; i < j; i++ {
						for k := 0; k < d; k++ {
							if len(pm) == d { // diagonal P_m
								next[j][k] += a[i] * vals[i][k] * pm[k]
								continue
							}
							for l := 0; l < d; l++ { // (o P_m)_k = Σ_l o_l P_m[l, k]
								next[j][k] += a[i] * vals[i][l] * pm[l*d+k]
							}
						}
					}
				}
			}
			f = next
		}
		for j := 1; j <= T; j++ {
			mean, vr := 0.0, 0.0
			for _, v := range f[j] {
				mean += v / float64(d)
			}
			for _, v := range f[j] {
				vr += (v - mean) * (v - mean) / float64(d)
			}
			h := make([]float64, d)
			for k, v := range f[j] {
				h[k] = (v-mean)/math.Sqrt(vr+1e-5)*p["lm/ln_f/scale"][k] + p["lm/ln_f/bias"][k]
			}
			for c := 0; c < V; c++ {
				s := 0.0
				for k := 0; k < d; k++ {
					s += h[k] * wte[c*d+k]
				}
				out = append(out, s)
			}
		}
	}
	return out
}

// TestLMMatchesReference compares the graph's logits with the explicit
// unrolled functional GD of lmRef (random parameters, so that Λ_m, P_m and
// the layer norm are not at their initial values).
func TestLMMatchesReference(t *testing.T) {
	const B = 2
	for _, c := range []struct {
		name string
		cfg  LMConfig
	}{
		{"softmax", LMConfig{Vocab: 6, DPrime: 3, Context: 5, Heads: 2}},
		{"linear", LMConfig{Vocab: 6, DPrime: 3, Context: 5, Heads: 3, Kernel: layers.Linear()}},
		{"softmax-diagP", LMConfig{Vocab: 6, DPrime: 3, Context: 5, Heads: 2, DiagP: true}},
		{"softmax-steps=3", LMConfig{Vocab: 6, DPrime: 3, Context: 5, Heads: 2, Steps: 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := graph.NewScope(graph.Float64, 4)
			m, err := NewLM(s.Sub("lm"), c.cfg, LMOptions{Batch: B})
			if err != nil {
				t.Fatal(err)
			}
			params := map[string][]float64{}
			for _, p := range m.Params() {
				vals := graphtest.RandValues(s, p.Shape().TotalSize())
				if err := graph.SetValue(p, vals); err != nil {
					t.Fatal(err)
				}
				params[p.Name()] = vals
			}
			ids, targets := lmTokens(2, B, m.Cfg.Context, m.Cfg.Vocab)
			if err := m.Feed(ids, targets); err != nil {
				t.Fatal(err)
			}
			runMachine(t, s, m.Logits)
			got, _ := graph.Values(m.Logits)
			worst := graphtest.AllClose(t, "logits", got, lmRef(m.Cfg, ids, B, params), 1e-12)
			t.Logf("max error %.2e", worst)
		})
	}
}

func runMachine(t *testing.T, s *graph.Scope, out *G.Node) {
	t.Helper()
	mc, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{out}})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	if err := mc.Run(); err != nil {
		t.Fatal(err)
	}
}

// TestLMMatchesAttention checks that a head of the LM computes what a
// layers.Attention head computes on the paper's tokens z_i = (p_i, v_i)
// (v_i = w_{e,t_i} − w̄_e, v_T = 0) with W_Q = W_K = [Λ; 0], W_V = [0; I],
// P = P_m and CausalKeys.
func TestLMMatchesAttention(t *testing.T) {
	const B, T, V, d = 2, 5, 6, 3
	cfg := LMConfig{Vocab: V, DPrime: d, Context: T, Heads: 1, EmbedInit: graph.Normal(0.7)}
	s, _ := graph.NewScope(graph.Float64, 9)
	m, err := NewLM(s.Sub("lm"), cfg, LMOptions{Batch: B})
	if err != nil {
		t.Fatal(err)
	}
	ids, targets := lmTokens(5, B, T, V)
	if err := m.Feed(ids, targets); err != nil {
		t.Fatal(err)
	}
	runMachine(t, s, m.F)
	fGot, _ := graph.Values(m.F)
	wte, _ := graph.Values(s.Params()[0])
	wpe, _ := graph.Values(s.Params()[1])
	lam, _ := graph.Values(s.Params()[2])
	pm, _ := graph.Values(s.Params()[3])

	// Tokens z (B, T+1, 2d) and the construction's matrices, in a new graph.
	s2, _ := graph.NewScope(graph.Float64, 1)
	wbar := make([]float64, d)
	for c := 0; c < V; c++ {
		for k := 0; k < d; k++ {
			wbar[k] += wte[c*d+k] / V
		}
	}
	z := make([]float64, B*(T+1)*2*d)
	for b := 0; b < B; b++ {
		for j := 0; j <= T; j++ {
			o := (b*(T+1) + j) * 2 * d
			copy(z[o:o+d], wpe[j*d:(j+1)*d])
			if j < T {
				for k := 0; k < d; k++ {
					z[o+d+k] = wte[ids[b*T+j]*d+k] - wbar[k]
				}
			}
		}
	}
	wq := make([]float64, 2*d*d)
	wv := make([]float64, 2*d*d)
	p := pm // P_m (d', d')
	for k := 0; k < d; k++ {
		wq[k*d+k] = lam[k]
		wv[(d+k)*d+k] = 1
	}
	zn, _ := s2.Const("z", tensor.Shape{B, T + 1, 2 * d}, z)
	wqn, _ := s2.Const("wq", tensor.Shape{2 * d, d}, wq)
	wvn, _ := s2.Const("wv", tensor.Shape{2 * d, d}, wv)
	pn, _ := s2.Const("p", tensor.Shape{d, d}, p)
	kern, _ := layers.NewKernel(s2.Sub("k"), layers.KernelSoftmax, layers.KernelConfig{})
	att, err := layers.NewAttention(s2.Sub("attn"), layers.AttentionConfig{
		DIn: 2 * d, DK: d, DV: d, DOut: d, Kernel: kern, Keys: layers.CausalKeys,
		WQ: wqn, TieQK: true, WV: wvn, P: pn,
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := att.Forward(zn)
	if err != nil {
		t.Fatal(err)
	}
	runMachine(t, s2, out)
	all, _ := graph.Values(out) // (B, T+1, d); positions 1..T are the LM's F
	var want []float64
	for b := 0; b < B; b++ {
		want = append(want, all[(b*(T+1)+1)*d:(b+1)*(T+1)*d]...)
	}
	worst := graphtest.AllClose(t, "f", fGot, want, 1e-13)
	t.Logf("max error %.2e", worst)
}

// TestLMNextLogits checks that the generation graph's logits at the chosen
// positions equal the training graph's logits there (same seed, same
// parameters), and that positions after the chosen one do not matter.
func TestLMNextLogits(t *testing.T) {
	const B, T, V = 3, 6, 9
	for _, ff := range []bool{false, true} {
		cfg := LMConfig{Vocab: V, DPrime: 4, Context: T, Heads: 2, FF: ff, EmbedInit: graph.Normal(0.5)}
		ids, targets := lmTokens(8, B, T, V)
		s1, _ := graph.NewScope(graph.Float64, 3)
		train, err := NewLM(s1, cfg, LMOptions{Batch: B})
		if err != nil {
			t.Fatal(err)
		}
		if err := train.Feed(ids, targets); err != nil {
			t.Fatal(err)
		}
		runMachine(t, s1, train.Logits)
		all, _ := graph.Values(train.Logits)

		s2, _ := graph.NewScope(graph.Float64, 3)
		gen, err := NewLM(s2, cfg, LMOptions{Batch: B, Next: true})
		if err != nil {
			t.Fatal(err)
		}
		lengths := []int{1, 4, 6}
		noisy := append([]int(nil), ids...)
		for b, l := range lengths {
			for j := l; j < T; j++ {
				noisy[b*T+j] = (noisy[b*T+j] + 1) % V // must not matter
			}
		}
		if err := gen.FeedNext(noisy, lengths); err != nil {
			t.Fatal(err)
		}
		runMachine(t, s2, gen.NextLogits)
		got, _ := graph.Values(gen.NextLogits)
		var want []float64
		for b, l := range lengths {
			r := b*T + l - 1
			want = append(want, all[r*V:(r+1)*V]...)
		}
		graphtest.AllClose(t, "next logits", got, want, 1e-12)
	}
}

func TestLMNumParams(t *testing.T) {
	// The paper's GD language model: d' = 512, 8 heads, context 256. With
	// diagonal P_m, Λ_m and P_m give 2·8·512 = 8192 attention parameters (the
	// paper's "8K"); with full P_m (Appendix H), 8·(512 + 512²).
	for _, c := range []struct {
		diag bool
		want int
	}{{true, 8192}, {false, 8 * (512 + 512*512)}} {
		s, _ := graph.NewScope(graph.Float32, 1)
		m, err := NewLM(s, LMConfig{Vocab: 10, DPrime: 512, Context: 256, Heads: 8, DiagP: c.diag}, LMOptions{Batch: 1})
		if err != nil {
			t.Fatal(err)
		}
		attn, rest := m.NumParams()
		if attn != c.want {
			t.Errorf("DiagP %v: attention parameters = %d, want %d", c.diag, attn, c.want)
		}
		// wte 10×512, wpe 257×512, ln_f 2×512.
		if want := 10*512 + 257*512 + 2*512; rest != want {
			t.Errorf("other parameters = %d, want %d", rest, want)
		}
	}
}

func TestLMErrors(t *testing.T) {
	good := LMConfig{Vocab: 5, DPrime: 2, Context: 3, Heads: 1}
	for _, c := range []struct {
		name string
		cfg  LMConfig
		opts LMOptions
		want string
	}{
		{"vocab", LMConfig{Vocab: 1, DPrime: 2, Context: 3}, LMOptions{Batch: 1}, "Vocab = 1"},
		{"dprime", LMConfig{Vocab: 5, Context: 3}, LMOptions{Batch: 1}, "DPrime = 0"},
		{"context", LMConfig{Vocab: 5, DPrime: 2}, LMOptions{Batch: 1}, "Context = 0"},
		{"kernel", LMConfig{Vocab: 5, DPrime: 2, Context: 3, Kernel: layers.Builtin("cosine", 1)}, LMOptions{Batch: 1}, "unknown kernel"},
		{"steps", LMConfig{Vocab: 5, DPrime: 2, Context: 3, Steps: -1}, LMOptions{Batch: 1}, "Steps = -1"},
		{"batch", good, LMOptions{}, "batch = 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := graph.NewScope(graph.Float64, 1)
			_, err := NewLM(s, c.cfg, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := NewLM(s, good, LMOptions{Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name         string
		ids, targets []int
		want         string
	}{
		{"id range", []int{0, 1, 2, 3, 4, 5}, []int{0, 0, 0, 0, 0, 0}, "id 5"},
		{"target range", []int{0, 1, 2, 3, 4, 0}, []int{0, 0, 7, 0, 0, 0}, "label 7"},
		{"length", []int{0, 1}, []int{0, 0, 0, 0, 0, 0}, "2 ids"},
	} {
		if err := m.Feed(c.ids, c.targets); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
	if err := m.FeedNext(make([]int, 6), []int{1, 1}); err == nil {
		t.Error("FeedNext on a training graph: no error")
	}
	s2, _ := graph.NewScope(graph.Float64, 1)
	g, _ := NewLM(s2, good, LMOptions{Batch: 2, Next: true})
	if err := g.FeedNext(make([]int, 6), []int{1, 4}); err == nil || !strings.Contains(err.Error(), "length 4") {
		t.Errorf("FeedNext with a length past T: err = %v", err)
	}
	if err := g.Feed(make([]int, 6), make([]int, 6)); err == nil {
		t.Error("Feed on a generation graph: no error")
	}
}
