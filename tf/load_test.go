package tf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
)

// loadCases cover every kind of tf.Model parameter.
var loadCases = []struct {
	name string
	cfg  Config
	dt   tensor.Dtype
}{
	{"plain", Config{D: 3, DPrime: 2, C: 4, N: 5}, tensor.Float64},
	{"cross/heads", Config{D: 3, DPrime: 2, C: 4, N: 5, Layers: 2, Heads: 2, Cross: true, DK: 4, ZeroColumn: true,
		HeadKernels: []layers.KernelSpec{nil, layers.Sum(layers.RBF(1), layers.Scaled(0.5, layers.Linear()))}}, tensor.Float64},
	{"fixed/init", Config{D: 3, DPrime: 2, C: 4, N: 5, Kernel: layers.Exp(0.5).Fixed(), Init: testInit(1, 1, 7, 2, false)}, tensor.Float64},
	{"float32", Config{D: 3, DPrime: 2, C: 4, N: 5, Layers: 2, Kernel: layers.Linear()}, tensor.Float32},
}

// paramList renders parameters as "name shape" lines, dropping prefix.
func paramList(ps G.Nodes, prefix string) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s %v", strings.TrimPrefix(p.Name(), prefix), []int(p.Shape())))
	}
	return out
}

// randomize sets every parameter of s to seeded random values.
func randomize(t *testing.T, s *graph.Scope, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	for _, p := range s.Params() {
		v := make([]float64, max(1, p.Shape().TotalSize()))
		for i := range v {
			v[i] = rng.Float64() - 0.5
		}
		if err := graph.SetValue(p, v); err != nil {
			t.Fatal(err)
		}
	}
}

// forward runs a forward pass of the graph of s and returns out's values.
func forward(t *testing.T, s *graph.Scope, out *G.Node) []float64 {
	t.Helper()
	vm, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{out}})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	if err := vm.Run(); err != nil {
		t.Fatal(err)
	}
	v, err := graph.Values(out)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSaveLoadRoundTrip: the parameters Load expects from a config are
// those NewModel creates, and build, randomise, save, Load gives the same
// config and identical logits.
func TestSaveLoadRoundTrip(t *testing.T) {
	const B = 2
	for i, tc := range loadCases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := graph.NewScope(tc.dt, 1)
			m, err := NewModel(s.Sub("tf"), tc.cfg, B)
			if err != nil {
				t.Fatal(err)
			}
			want, err := m.Cfg.params(tc.dt)
			if err != nil {
				t.Fatal(err)
			}
			var exp []string
			for _, p := range want {
				exp = append(exp, fmt.Sprintf("%s %v", p.Name, p.Shape))
			}
			if got := paramList(m.Params(), "tf/"); !slices.Equal(got, exp) {
				t.Errorf("params\n%v\nwant (from the config)\n%v", got, exp)
			}
			randomize(t, s, uint64(i))
			x, y := randomBatch(uint64(30+i), B, tc.cfg.N+1, tc.cfg.D, tc.cfg.C)
			if err := m.Feed(x, y); err != nil {
				t.Fatal(err)
			}
			before := forward(t, s, m.Logits)
			dir := filepath.Join(t.TempDir(), "ckpt")
			if err := m.Save(dir); err != nil {
				t.Fatal(err)
			}
			l, err := Load(dir, B)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(m.Cfg)
			b, _ := json.Marshal(l.Cfg)
			if !bytes.Equal(a, b) || l.Scope().Path() != "tf" || l.Scope().Dtype() != tc.dt {
				t.Errorf("loaded config %s in %q (%v), want %s in \"tf\" (%v)", b, l.Scope().Path(), l.Scope().Dtype(), a, tc.dt)
			}
			if err := l.Feed(x, y); err != nil {
				t.Fatal(err)
			}
			after := forward(t, l.Scope(), l.Logits)
			for j := range before {
				if after[j] != before[j] {
					t.Fatalf("logit %d = %v after the round trip, want %v", j, after[j], before[j])
				}
			}
		})
	}
}

func TestGPTSaveLoadRoundTrip(t *testing.T) {
	const B = 2
	cfg := GPTConfig{Vocab: 7, Context: 4, DModel: 4, Heads: 2, Layers: 2, FFHidden: 6}
	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := NewGPT(s, cfg, GPTOptions{Batch: B})
	if err != nil {
		t.Fatal(err)
	}
	var exp []string
	for _, p := range m.Cfg.params() {
		exp = append(exp, fmt.Sprintf("%s %v", p.Name, p.Shape))
	}
	if got := paramList(m.Params(), ""); !slices.Equal(got, exp) {
		t.Errorf("params\n%v\nwant (from the config)\n%v", got, exp)
	}
	randomize(t, s, 1)
	rng := rand.New(rand.NewPCG(2, 5))
	ids, targets := make([]int, B*cfg.Context), make([]int, B*cfg.Context)
	for j := range ids {
		ids[j], targets[j] = rng.IntN(cfg.Vocab), rng.IntN(cfg.Vocab)
	}
	if err := m.Feed(ids, targets); err != nil {
		t.Fatal(err)
	}
	before := forward(t, s, m.Logits)
	dir := filepath.Join(t.TempDir(), "ckpt")
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	l, err := LoadGPT(dir, GPTOptions{Batch: B})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Feed(ids, targets); err != nil {
		t.Fatal(err)
	}
	after := forward(t, l.Scope(), l.Logits)
	for j := range before {
		if after[j] != before[j] {
			t.Fatalf("logit %d = %v after the round trip, want %v", j, after[j], before[j])
		}
	}
	if _, err := Load(dir, B); err == nil || !strings.Contains(err.Error(), "holds a tf.GPT") {
		t.Errorf("Load of a GPT checkpoint: %v, want an error saying it holds a tf.GPT", err)
	}
}

func TestLoadErrors(t *testing.T) {
	good := Config{D: 3, DPrime: 2, C: 4, N: 5, Layers: 2, Cross: true}
	for _, tc := range []struct {
		name string
		edit func(c map[string]any)
		want []string
	}{
		{"unknown key", func(c map[string]any) { c["tf"].(map[string]any)["init"] = nil }, []string{`unknown key "init"`}},
		{"layers", func(c map[string]any) { c["tf"].(map[string]any)["layers"] = 3 }, []string{`"layer2/head0/wq"`, "lacks"}},
		{"cross", func(c map[string]any) { c["tf"].(map[string]any)["cross"] = false }, []string{"layer0/cross/wk", "does not imply"}},
		{"dk", func(c map[string]any) { c["tf"].(map[string]any)["dk"] = 3 }, []string{`"layer0/head0/wq" has shape [9 9] in the checkpoint, the config implies [9 3]`}},
		{"kernel", func(c map[string]any) {
			c["tf"].(map[string]any)["kernel"] = map[string]any{"name": "linear"}
		}, []string{"log_gamma", "does not imply"}},
		{"family", func(c map[string]any) { c["gd"] = c["tf"]; delete(c, "tf") }, []string{"holds a gd.Model"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := graph.NewScope(graph.Float64, 1)
			m, err := NewModel(s, good, 1)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "ckpt")
			if err := m.Save(dir); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "config.json")
			raw, _ := os.ReadFile(path)
			var doc map[string]any
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			tc.edit(doc["config"].(map[string]any))
			raw, _ = json.Marshal(doc)
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := checkpoint.Reseal(dir); err != nil { // a deliberate edit
				t.Fatal(err)
			}
			l, err := Load(dir, 1)
			if l != nil || err == nil {
				t.Fatalf("Load: %v, want an error", err)
			}
			for _, w := range append([]string{"tf: load "}, tc.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
