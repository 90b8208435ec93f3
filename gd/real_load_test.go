package gd

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	G "gorgonia.org/gorgonia"
)

// predReal feeds m and returns its query prediction, from a forward
// machine restricted to the prediction (as train.Runner compiles it: a
// machine over the whole graph would also run the loss, which may reuse
// the prediction's memory).
func predReal(t *testing.T, m *Model, x, y []float64) []float64 {
	t.Helper()
	if err := m.FeedReal(x, y); err != nil {
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
	p, _ := graph.Values(m.Logits)
	return append([]float64(nil), p...)
}

// TestGaussianSaveLoad: a Gaussian model with the softmax kernel and 2
// heads survives Save/Load with identical predictions; its config has
// "likelihood": "gaussian" and no "c"; a user likelihood cannot be saved.
func TestGaussianSaveLoad(t *testing.T) {
	const B, N, d, dy = 3, 5, 3, 2
	s, _ := graph.NewScope(graph.Float64, 4)
	cfg := Config{D: d, DPrime: dy, N: N, Blocks: 2, Heads: 2, Kernel: layers.Softmax(0.8), Alpha: 1.3, Likelihood: Gaussian()}
	m, err := NewModel(s, cfg, B)
	if err != nil {
		t.Fatal(err)
	}
	x, y := realBatch(3, B, N+1, d, dy)
	want := predReal(t, m, x, y)
	raw, err := m.SavedConfig()
	if err != nil {
		t.Fatal(err)
	}
	if js := string(raw); !strings.Contains(js, `"likelihood":"gaussian"`) || strings.Contains(js, `"c":`) || strings.Contains(js, `"we"`) {
		t.Errorf("saved config %s: want \"likelihood\":\"gaussian\", no \"c\"", js)
	}
	dir := filepath.Join(t.TempDir(), "ckpt")
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(dir, B)
	if err != nil {
		t.Fatal(err)
	}
	if !isGaussian(m2.Cfg.Likelihood) || m2.Cfg.C != 0 {
		t.Fatalf("loaded config %+v", m2.Cfg)
	}
	got := predReal(t, m2, x, y)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("prediction %d: %v after loading, %v before", i, got[i], want[i])
		}
	}
	s3, _ := graph.NewScope(graph.Float64, 4)
	mu, _ := NewModel(s3, Config{D: d, DPrime: dy, N: N, Likelihood: tanhLikelihood{}}, B)
	if err := mu.Save(filepath.Join(t.TempDir(), "u")); err == nil || !strings.Contains(err.Error(), "cannot be saved") {
		t.Errorf("saving a user likelihood: err = %v", err)
	}
	// Config JSON: an unknown likelihood, and a Gaussian config with c.
	for _, js := range []string{
		`{"d":2,"d_prime":1,"n":3,"likelihood":"poisson"}`,
	} {
		var c Config
		if err := c.UnmarshalJSON([]byte(js)); err == nil || !strings.Contains(err.Error(), "likelihood") {
			t.Errorf("%s: err = %v", js, err)
		}
	}
	var c Config
	if err := c.UnmarshalJSON([]byte(`{"d":2,"d_prime":1,"c":4,"n":3,"likelihood":"gaussian"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Validate(); err == nil {
		t.Errorf("Gaussian config with c = 4: Validate passed")
	}
	if err := c.UnmarshalJSON([]byte(`{"d":2,"d_prime":1,"c":4,"n":3}`)); err != nil || c.Real() {
		t.Errorf("no likelihood key: categorical expected, got %v, %v", c.LikelihoodName(), err)
	}
}

// TestLoadNumpyGaussian loads the checkpoint written by numpy alone
// (testdata/write_gaussian_ckpt.py: 3 linear-kernel GD steps, α = 0.5,
// d = 3, d_y = 2, N = 4) and checks its predictions against ReferenceReal.
func TestLoadNumpyGaussian(t *testing.T) {
	const B, N, d, dy = 4, 4, 3, 2
	m, err := Load(filepath.Join("testdata", "numpy-gaussian-ckpt"), B)
	if err != nil {
		t.Fatal(err)
	}
	if m.Cfg.Blocks != 3 || !isGaussian(m.Cfg.Likelihood) {
		t.Fatalf("config %+v", m.Cfg)
	}
	x, y := realBatch(8, B, N+1, d, dy)
	got := predReal(t, m, x, y)
	ref, err := ReferenceReal(x, y, B, N+1, d, dy, nil, ReferenceConfig{Steps: 3, Alpha: 0.5, Kernel: "linear"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if math.Abs(got[i]-ref.Pred[i]) > 1e-12 {
			t.Fatalf("prediction %d = %v, reference %v", i, got[i], ref.Pred[i])
		}
	}
}
