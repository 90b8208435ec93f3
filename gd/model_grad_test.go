package gd

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/layers"
	G "gorgonia.org/gorgonia"
)

// modelLoss returns a build function: the mean cross-entropy of the query
// labels for a GD model on a fixed random batch.
func modelLoss(cfg Config, B int, seed uint64) graphtest.BuildFunc {
	x, y := randomBatch(seed, B, cfg.N+1, cfg.D, cfg.C)
	return func(s *graph.Scope) (*G.Node, error) {
		m, err := NewModel(s, cfg, B)
		if err != nil {
			return nil, err
		}
		if err := m.Feed(x, y); err != nil {
			return nil, err
		}
		return m.CrossEntropyLoss()
	}
}

// TestModelGradients checks every trainable parameter of every GD model form
// against central finite differences (float64, relative error < 1e-6) and
// runs the float32 build at float32 tolerance.
func TestModelGradients(t *testing.T) {
	const B, N, d, dp, C = 2, 4, 3, 2, 5
	base := Config{D: d, DPrime: dp, C: C, N: N, Alpha: 1.5, WeInit: graph.Normal(0.5)}
	type tc struct {
		name string
		cfg  Config
	}
	var cases []tc
	for _, k := range layers.KernelNames() {
		c := base
		c.Kernel, c.Blocks = layers.Builtin(k, 0.7), 2
		cases = append(cases, tc{k + "/K=2", c})
	}
	extra := []struct {
		name string
		mod  func(*Config)
	}{
		{"onestep", func(c *Config) { c.Form = OneStep }},
		{"K=1", func(c *Config) { c.Blocks = 1 }},
		{"K=1-linear", func(c *Config) { c.Blocks = 1; c.Kernel = layers.Linear() }},
		{"K=3", func(c *Config) { c.Blocks = 3 }},
		{"bias", func(c *Config) { c.Blocks = 2; c.Bias = true }},
		{"heads=2", func(c *Config) { c.Blocks = 2; c.Heads = 2 }},
		{"zerocolumn", func(c *Config) { c.Blocks = 2; c.ZeroColumn = true }},
		{"lambda-rbf", func(c *Config) { c.Blocks = 2; c.Erase = EraseLambda; c.Lambda = 3 }},
		{"fused/K=1", func(c *Config) { c.Blocks = 1; c.FuseEncoder = true }},
		{"fused/K=2-zerocolumn", func(c *Config) { c.Blocks = 2; c.ZeroColumn = true; c.FuseEncoder = true }},
		{"literal/K=2", func(c *Config) { c.Blocks = 2; c.Literal = true }},
		{"literal/heads=2", func(c *Config) { c.Blocks = 2; c.Heads = 2; c.Literal = true }},
	}
	for _, e := range extra {
		c := base
		c.Kernel = layers.Softmax(0.7)
		e.mod(&c)
		cases = append(cases, tc{"softmax/" + e.name, c})
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			build := modelLoss(c.cfg, B, uint64(100+i))
			worst := graphtest.CheckGrad(t, build, graphtest.Options{Seed: 1})
			worst32 := graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 1})
			t.Logf("max relative error: float64 %.2e, float32 %.2e", worst, worst32)
		})
	}
}

func TestModelParamNames(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := NewModel(s.Sub("gd"), Config{D: 2, DPrime: 2, C: 3, N: 3, Blocks: 2, Heads: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"gd/we", "gd/log_alpha", "gd/kernel/log_gamma", "gd/head0/lambda", "gd/head0/p", "gd/head1/lambda", "gd/head1/p"}
	if diff := cmp.Diff(want, s.ParamNames()); diff != "" {
		t.Errorf("parameter names (-want +got):\n%s", diff)
	}
	if len(m.Params()) != 7 {
		t.Errorf("Params() has %d nodes, want 7", len(m.Params()))
	}
}
