package gd

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
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
	"github.com/gdattn/gdattn/ops"
)

// testPoly is a registered user kernel with a saved setting and a
// learnable parameter: κ(q, k) = c·(q·k + Offset)².
type testPoly struct {
	Offset float64 `json:"offset"`
}

func (p testPoly) Name() string     { return "gd_test_poly" }
func (p testPoly) Normalised() bool { return false }
func (p testPoly) New(s *graph.Scope) (layers.Kernel, error) {
	c, err := s.Param("c", tensor.Shape{}, graph.Constant(0.5))
	if err != nil {
		return nil, err
	}
	off, err := s.Const("offset", tensor.Shape{}, []float64{p.Offset})
	if err != nil {
		return nil, err
	}
	return func(q, k *G.Node, mask *layers.Mask) (w *G.Node, err error) {
		defer graph.Recover(&err)
		dot := G.Must(ops.BatchedMatMul(q, k, false, true))             // (B, Tq, Tk)
		w = G.Must(G.Mul(c, G.Must(G.Square(G.Must(G.Add(dot, off)))))) // (B, Tq, Tk)
		if mask != nil {
			w = G.Must(G.HadamardProd(w, mask.Keep))
		}
		return w, nil
	}, nil
}

func init() {
	if err := layers.RegisterKernel("gd_test_poly", func(p json.RawMessage) (layers.KernelSpec, error) {
		var k testPoly
		if string(p) != "null" {
			if err := json.Unmarshal(p, &k); err != nil {
				return nil, err
			}
		}
		return k, nil
	}); err != nil {
		panic(err)
	}
}

// loadCases are GD models covering every kind of parameter: W_e with and
// without the zero column, α learned or fixed, built-in, combined and user
// kernels, several heads, the literal and λ-erase builds, float32.
var loadCases = []struct {
	name string
	cfg  Config
	dt   tensor.Dtype
}{
	{"softmax", Config{D: 3, DPrime: 2, C: 4, N: 5, Blocks: 2}, tensor.Float64},
	{"rbf+beta*linear", Config{D: 3, DPrime: 2, C: 4, N: 5, Blocks: 3, Kernel: layers.Sum(layers.RBF(0.7), layers.Scaled(0.3, layers.Linear()))}, tensor.Float64},
	{"user", Config{D: 3, DPrime: 2, C: 4, N: 5, Blocks: 2, Kernel: testPoly{Offset: 1}}, tensor.Float64},
	{"onestep/fixed", Config{D: 3, DPrime: 2, C: 4, N: 5, Form: OneStep, Kernel: layers.Exp(0.5).Fixed(), FixedAlpha: true, ZeroColumn: true}, tensor.Float64},
	{"heads/literal", Config{D: 3, DPrime: 2, C: 4, N: 5, Blocks: 2, Heads: 3, Literal: true, Bias: true}, tensor.Float64},
	{"lambda", Config{D: 3, DPrime: 2, C: 4, N: 5, Blocks: 2, Erase: EraseLambda, Lambda: 5, EraseKernel: "softmax", Kernel: layers.Linear()}, tensor.Float64},
	{"float32", Config{D: 3, DPrime: 2, C: 4, N: 5, Blocks: 2, Kernel: layers.Laplacian(0.8)}, tensor.Float32},
}

// TestParamsMatchModel: the parameters Load expects from a config are
// exactly those NewModel creates, names, shapes and order.
func TestParamsMatchModel(t *testing.T) {
	for _, tc := range loadCases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := tc.cfg.Validate()
			if err != nil {
				t.Fatal(err)
			}
			want, err := cfg.params(tc.dt)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := graph.NewScope(tc.dt, 1)
			m, err := NewModel(s, cfg, 2)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range m.Params() {
				got = append(got, fmt.Sprintf("%s %v", p.Name(), []int(p.Shape())))
			}
			var exp []string
			for _, p := range want {
				exp = append(exp, fmt.Sprintf("%s %v", p.Name, p.Shape))
			}
			if !slices.Equal(got, exp) {
				t.Errorf("params\n%v\nwant (from the config)\n%v", got, exp)
			}
		})
	}
}

// randomize sets every parameter of s to seeded random values, so that a
// round trip that dropped one would show.
func randomize(t *testing.T, s *graph.Scope, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	for _, p := range s.Params() {
		v := make([]float64, max(1, p.Shape().TotalSize()))
		for i := range v {
			v[i] = 0.5 + 0.5*rng.Float64() // positive: lambda, log-parameters stay tame
		}
		if err := graph.SetValue(p, v); err != nil {
			t.Fatal(err)
		}
	}
}

// logits feeds (x, y) to m, runs a forward pass and returns the logits.
func logits(t *testing.T, m *Model, x []float64, y []int) []float64 {
	t.Helper()
	if err := m.Feed(x, y); err != nil {
		t.Fatal(err)
	}
	vm, err := graph.NewMachine(m.Scope(), nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{m.Logits}})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	if err := vm.Run(); err != nil {
		t.Fatal(err)
	}
	v, err := graph.Values(m.Logits)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSaveLoadRoundTrip: build, set random parameters, save, Load: the
// loaded model has the same config and parameters and gives identical
// logits (bit for bit).
func TestSaveLoadRoundTrip(t *testing.T) {
	const B = 3
	for i, tc := range loadCases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := graph.NewScope(tc.dt, 1)
			m, err := NewModel(s.Sub("model"), tc.cfg, B)
			if err != nil {
				t.Fatal(err)
			}
			randomize(t, s, uint64(i))
			x, y := randomBatch(uint64(40+i), B, tc.cfg.N+1, tc.cfg.D, tc.cfg.C)
			want := logits(t, m, x, y)
			dir := filepath.Join(t.TempDir(), "ckpt")
			if err := m.Save(dir); err != nil {
				t.Fatal(err)
			}
			l, err := Load(dir, B)
			if err != nil {
				t.Fatal(err)
			}
			if l.Scope().Path() != "model" || l.Scope().Dtype() != tc.dt {
				t.Errorf("loaded into scope %q of %v, want \"model\" of %v", l.Scope().Path(), l.Scope().Dtype(), tc.dt)
			}
			a, _ := json.Marshal(m.Cfg)
			b, _ := json.Marshal(l.Cfg)
			if !bytes.Equal(a, b) {
				t.Errorf("loaded config %s, want %s", b, a)
			}
			cfg, dt, err := LoadConfig(dir)
			if err != nil {
				t.Fatal(err)
			}
			if c, _ := json.Marshal(cfg); !bytes.Equal(a, c) || dt != tc.dt {
				t.Errorf("LoadConfig = %s, %v; want %s, %v", c, dt, a, tc.dt)
			}
			got := logits(t, l, x, y)
			for j := range want {
				if got[j] != want[j] {
					t.Fatalf("logit %d = %v after the round trip, want %v", j, got[j], want[j])
				}
			}
		})
	}
}

func TestSaveErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	unregistered := layers.Custom("gd_test_unregistered_save", false, func(*graph.Scope) (layers.Kernel, error) { return layers.LinearKernel(), nil })
	m, err := NewModel(s, Config{D: 2, DPrime: 2, C: 3, N: 3, Kernel: unregistered}, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ckpt")
	err = m.Save(dir)
	if err == nil || !strings.Contains(err.Error(), `"gd_test_unregistered_save"`) || !strings.Contains(err.Error(), "not registered") {
		t.Errorf("Save with an unregistered kernel: %v, want an error naming it", err)
	}
	if _, serr := os.Stat(dir); serr == nil {
		t.Errorf("a failed Save left %s behind", dir)
	}
}

// saveTo saves a small model and returns the checkpoint directory.
func saveTo(t *testing.T, cfg Config) string {
	t.Helper()
	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := NewModel(s, cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ckpt")
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// editConfig rewrites the "config" object of the checkpoint in dir.
func editConfig(t *testing.T, dir string, edit func(cfg map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc["config"].(map[string]any))
	if raw, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Reseal(dir); err != nil { // a deliberate edit
		t.Fatal(err)
	}
}

func TestLoadErrors(t *testing.T) {
	good := Config{D: 2, DPrime: 2, C: 3, N: 3, Blocks: 2}
	gdCfg := func(c map[string]any) map[string]any { return c["gd"].(map[string]any) }
	for _, tc := range []struct {
		name  string
		edit  func(c map[string]any)
		batch int
		want  []string
	}{
		{"unknown key", func(c map[string]any) { gdCfg(c)["dprime"] = 2 }, 1, []string{`unknown key "dprime"`}},
		{"unknown top key", func(c map[string]any) { c["optimizer"] = "adam" }, 1, []string{`unknown key "optimizer"`}},
		{"form", func(c map[string]any) { gdCfg(c)["form"] = "onestep" }, 1, []string{`key "form"`, `"onestep"`}},
		{"kernel", func(c map[string]any) { gdCfg(c)["kernel"] = map[string]any{"name": "cosine"} }, 1, []string{`key "kernel"`, `"cosine"`}},
		{"invalid", func(c map[string]any) { gdCfg(c)["c"] = 1 }, 1, []string{"C = 1"}},
		{"c mismatch", func(c map[string]any) { gdCfg(c)["c"] = 5 }, 1, []string{`"we" has shape [2 3] in the checkpoint, the config implies [2 5]`}},
		{"missing param", func(c map[string]any) { gdCfg(c)["heads"] = 2 }, 1, []string{"head0/lambda", "lacks"}},
		{"extra param", func(c map[string]any) { gdCfg(c)["fixed_alpha"] = true }, 1, []string{`"log_alpha"`, "does not imply"}},
		{"kernel params", func(c map[string]any) {
			gdCfg(c)["kernel"] = map[string]any{"name": "softmax", "learnable": false}
		}, 1, []string{`"kernel/log_gamma"`, "does not imply"}},
		{"dtype", func(c map[string]any) { c["dtype"] = "float32" }, 1, []string{"dtype is float64", "float32"}},
		{"dtype unknown", func(c map[string]any) { c["dtype"] = "int8" }, 1, []string{`key "dtype"`}},
		{"scope", func(c map[string]any) { c["scope"] = "model" }, 1, []string{`"model/we"`}},
		{"bad scope", func(c map[string]any) { c["scope"] = "a//b" }, 1, []string{`key "scope"`}},
		{"other family", func(c map[string]any) { c["tf"] = c["gd"]; delete(c, "gd") }, 1, []string{"holds a tf.Model", "not a gd.Model"}},
		{"batch", func(c map[string]any) {}, 0, []string{"batch = 0"}},
		{"huge batch", func(c map[string]any) {}, 1 << 40, []string{"batch"}},
		{"huge blocks", func(c map[string]any) { gdCfg(c)["blocks"] = 1 << 40 }, 1, []string{"Blocks"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := saveTo(t, good)
			editConfig(t, dir, tc.edit)
			m, err := Load(dir, tc.batch)
			if m != nil || err == nil {
				t.Fatalf("Load: model %v, error %v; want an error", m, err)
			}
			for _, w := range append([]string{"gd: load "}, tc.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none"), 1); err == nil {
		t.Errorf("Load of a missing directory: no error")
	}
}

// npyBytes is an array in the .npy format exactly as numpy's np.save
// writes it (version 1.0, little-endian <f8, C order, the header padded
// with spaces to a multiple of 64 bytes and ended by '\n'), written here
// by hand rather than by package npy so that the test checks the layout,
// not the writer against itself.
func npyBytes(shape []int, vals []float64) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	tuple := "(" + strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	tuple += ")"
	header := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': %s, }", tuple)
	total := 10 + len(header) + 1
	header += strings.Repeat(" ", (64-total%64)%64) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(header)))
	b.WriteString(header)
	for _, v := range vals {
		binary.Write(&b, binary.LittleEndian, math.Float64bits(v))
	}
	return b.Bytes()
}

// TestLoadHandWritten writes, byte by byte, the checkpoint of the Python
// example of docs/checkpoints.md ("From Python", testdata/write_ckpt.py: a
// 2-block softmax GD model, d = 2, d' = 3, C = 4, N = 5, with W_e and α set
// by numpy), checks that every file is byte-identical to what numpy wrote
// (testdata/numpy-ckpt), and loads both: the model has those values and
// computes what a model given them directly computes.
func TestLoadHandWritten(t *testing.T) {
	const d, dp, C, N, B = 2, 3, 4, 5, 2
	we := make([]float64, dp*C) // np.arange(12).reshape(3, 4) / 10
	for i := range we {
		we[i] = float64(i) / 10
	}
	logAlpha := math.Log(2.0) // np.log(2.0)
	dir := filepath.Join(t.TempDir(), "ckpt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// config.json as the snippet's json.dump(..., indent=1) writes it: keys
	// in the order given, one space per level, no final newline.
	type param struct {
		Name  string `json:"name"`
		Shape []int  `json:"shape"`
		Dtype string `json:"dtype"`
		File  string `json:"file"`
	}
	type kernel struct {
		Name      string  `json:"name"`
		Gamma     float64 `json:"gamma"`
		Learnable bool    `json:"learnable"`
	}
	type gdConfig struct {
		D      int    `json:"d"`
		DPrime int    `json:"d_prime"`
		C      int    `json:"c"`
		N      int    `json:"n"`
		Form   string `json:"form"`
		Blocks int    `json:"blocks"`
		Kernel kernel `json:"kernel"`
	}
	doc := struct {
		Manifest struct {
			Format  string  `json:"format"`
			Version int     `json:"version"`
			Dtype   string  `json:"dtype"`
			Params  []param `json:"params"`
		} `json:"manifest"`
		Config struct {
			Dtype string   `json:"dtype"`
			GD    gdConfig `json:"gd"`
		} `json:"config"`
	}{}
	doc.Manifest.Format, doc.Manifest.Version, doc.Manifest.Dtype = "gdattn-checkpoint", 1, "float64"
	doc.Manifest.Params = []param{
		{"we", []int{dp, C}, "float64", "we.npy"},
		{"log_alpha", []int{}, "float64", "log_alpha.npy"},
		{"kernel/log_gamma", []int{}, "float64", "kernel__log_gamma.npy"},
	}
	doc.Config.Dtype = "float64"
	doc.Config.GD = gdConfig{D: d, DPrime: dp, C: C, N: N, Form: "interleaved", Blocks: 2, Kernel: kernel{"softmax", 1, true}}
	config, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"config.json":           config,
		"we.npy":                npyBytes([]int{dp, C}, we),
		"log_alpha.npy":         npyBytes(nil, []float64{logAlpha}),
		"kernel__log_gamma.npy": npyBytes(nil, []float64{0}),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		numpy, err := os.ReadFile(filepath.Join("testdata", "numpy-ckpt", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, numpy) {
			t.Errorf("%s differs from what numpy wrote:\n%q\nnumpy:\n%q", name, b, numpy)
		}
	}
	// The same model, given the values directly.
	s, _ := graph.NewScope(graph.Float64, 7)
	ref, err := NewModel(s, Config{D: d, DPrime: dp, C: C, N: N, Blocks: 2}, B)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range [][]float64{we, {logAlpha}, {0}} {
		if err := graph.SetValue(ref.Params()[i], v); err != nil {
			t.Fatal(err)
		}
	}
	x, y := randomBatch(9, B, N+1, d, C)
	want := logits(t, ref, x, y)
	for _, dir := range []string{dir, filepath.Join("testdata", "numpy-ckpt")} {
		m, err := Load(dir, B)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := graph.Values(m.Params()[0]); !slices.Equal(got, we) {
			t.Errorf("%s: we = %v, want %v", dir, got, we)
		}
		got := logits(t, m, x, y)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: logit %d = %v, want %v", dir, i, got[i], want[i])
			}
		}
	}
}

// TestLMSaveLoadRoundTrip: the GD language model's round trip, training
// and generation graphs, identical logits.
func TestLMSaveLoadRoundTrip(t *testing.T) {
	const B = 2
	for i, cfg := range []LMConfig{
		{Vocab: 7, DPrime: 3, Context: 4, Heads: 2},
		{Vocab: 7, DPrime: 3, Context: 4, Heads: 2, Steps: 2, DiagP: true, FF: true, FFHidden: 5, Kernel: layers.RBF(0.5)},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			s, _ := graph.NewScope(graph.Float64, 1)
			m, err := NewLM(s.Sub("lm"), cfg, LMOptions{Batch: B})
			if err != nil {
				t.Fatal(err)
			}
			want, err := cfg.Validate()
			if err != nil {
				t.Fatal(err)
			}
			wantParams, err := want.params(tensor.Float64)
			if err != nil {
				t.Fatal(err)
			}
			var got, exp []string
			for _, p := range m.Params() {
				got = append(got, fmt.Sprintf("%s %v", strings.TrimPrefix(p.Name(), "lm/"), []int(p.Shape())))
			}
			for _, p := range wantParams {
				exp = append(exp, fmt.Sprintf("%s %v", p.Name, p.Shape))
			}
			if !slices.Equal(got, exp) {
				t.Errorf("params\n%v\nwant (from the config)\n%v", got, exp)
			}
			randomize(t, s, uint64(i))
			rng := rand.New(rand.NewPCG(uint64(i), 5))
			ids, targets := make([]int, B*cfg.Context), make([]int, B*cfg.Context)
			for j := range ids {
				ids[j], targets[j] = rng.IntN(cfg.Vocab), rng.IntN(cfg.Vocab)
			}
			run := func(m *LM) []float64 {
				if err := m.Feed(ids, targets); err != nil {
					t.Fatal(err)
				}
				vm, err := graph.NewMachine(m.Scope(), nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{m.Logits}})
				if err != nil {
					t.Fatal(err)
				}
				defer vm.Close()
				if err := vm.Run(); err != nil {
					t.Fatal(err)
				}
				v, _ := graph.Values(m.Logits)
				return v
			}
			before := run(m)
			dir := filepath.Join(t.TempDir(), "ckpt")
			if err := m.Save(dir); err != nil {
				t.Fatal(err)
			}
			l, err := LoadLM(dir, LMOptions{Batch: B})
			if err != nil {
				t.Fatal(err)
			}
			after := run(l)
			for j := range before {
				if after[j] != before[j] {
					t.Fatalf("logit %d = %v after the round trip, want %v", j, after[j], before[j])
				}
			}
			if g, err := LoadLM(dir, LMOptions{Batch: B, Next: true}); err != nil || g.NextLogits == nil {
				t.Errorf("LoadLM with Next: %v", err)
			}
			if _, err := Load(dir, B); err == nil || !strings.Contains(err.Error(), "holds a gd.LM") {
				t.Errorf("Load of an LM checkpoint: %v, want an error saying it holds a gd.LM", err)
			}
		})
	}
}
