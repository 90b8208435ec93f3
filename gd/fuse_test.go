package gd

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/ops"
	"gorgonia.org/tensor"
)

// TestFuseEncoder: Config.FuseEncoder (fused residuals and cross-entropy,
// CrossEntropyLoss) gives the default construction's loss and gradients
// within rounding (1e-12 in float64, 1e-5 in float32), for one and two
// blocks, both forms, a zero column, two heads, the bias and another kernel.
func TestFuseEncoder(t *testing.T) {
	const B, N, d, dp, C = 3, 7, 3, 4, 6
	base := Config{D: d, DPrime: dp, C: C, N: N, Alpha: 1.5, WeInit: graph.Normal(0.5), Kernel: layers.Softmax(0.7)}
	mods := []struct {
		name string
		mod  func(*Config)
	}{
		{"K=1", func(c *Config) { c.Blocks = 1 }},
		{"K=2", func(c *Config) { c.Blocks = 2 }},
		{"K=3", func(c *Config) { c.Blocks = 3 }},
		{"onestep/K=1", func(c *Config) { c.Blocks = 1; c.Form = OneStep }},
		{"zerocolumn/K=2", func(c *Config) { c.Blocks = 2; c.ZeroColumn = true }},
		{"heads=2/K=1", func(c *Config) { c.Blocks = 1; c.Heads = 2 }},
		{"bias/K=1", func(c *Config) { c.Blocks = 1; c.Bias = true }},
		{"rbf/K=1", func(c *Config) { c.Blocks = 1; c.Kernel = layers.RBF(0.7) }},
	}
	for i, mc := range mods {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", mc.name, dt), func(t *testing.T) {
				cfg := base
				mc.mod(&cfg)
				l0, g0 := graphtest.Gradients(t, modelLoss(cfg, B, uint64(300+i)), dt, 1)
				cfg.FuseEncoder = true
				l1, g1 := graphtest.Gradients(t, modelLoss(cfg, B, uint64(300+i)), dt, 1)
				tol := 1e-12
				if dt == tensor.Float32 {
					tol = 1e-5
				}
				graphtest.AllClose(t, "loss", []float64{l1}, []float64{l0}, tol)
				if len(g1) != len(g0) {
					t.Fatalf("%d gradients, default %d", len(g1), len(g0))
				}
				for name, want := range g0 {
					graphtest.AllClose(t, name, g1[name], want, tol)
				}
			})
		}
	}
}

// TestFuseEncoderBuildsOneOp: with FuseEncoder the first block's residuals
// are a LabelResidualsOp, each later block's a LabelResidualsOfOp and the
// cross-entropy a SoftmaxCrossEntropyOp; without it there are none.
func TestFuseEncoderBuildsOneOp(t *testing.T) {
	for _, blocks := range []int{1, 3} {
		for _, fuse := range []bool{false, true} {
			s, err := graph.NewScope(graph.Float32, 1)
			if err != nil {
				t.Fatal(err)
			}
			m, err := NewModel(s, Config{D: 2, DPrime: 3, C: 4, N: 5, Blocks: blocks, FuseEncoder: fuse}, 2)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.CrossEntropyLoss(); err != nil {
				t.Fatal(err)
			}
			first, later, xent := 0, 0, 0
			for _, node := range s.Graph().AllNodes() {
				switch node.Op().(type) {
				case *ops.LabelResidualsOp:
					first++
				case *ops.LabelResidualsOfOp:
					later++
				case *ops.SoftmaxCrossEntropyOp:
					xent++
				}
			}
			if fuse && (first != 1 || later != blocks-1 || xent != 1) || !fuse && first+later+xent != 0 {
				t.Errorf("blocks %d, FuseEncoder %v: %d LabelResiduals, %d LabelResidualsOf and %d SoftmaxCrossEntropy ops", blocks, fuse, first, later, xent)
			}
			if m.Logits == nil {
				t.Errorf("blocks %d, FuseEncoder %v: no logits", blocks, fuse)
			}
		}
	}
}

// TestCrossEntropyLossReal: a real-valued model has no cross-entropy.
func TestCrossEntropyLossReal(t *testing.T) {
	s, err := graph.NewScope(graph.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(s, Config{D: 2, DPrime: 1, N: 3, Kernel: layers.Linear(), Likelihood: Gaussian(), FuseEncoder: true}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := m.CrossEntropyLoss(); err == nil || !strings.Contains(err.Error(), "QueryLoss") {
		t.Errorf("CrossEntropyLoss of a Gaussian model: %v, %v; want an error naming QueryLoss", n, err)
	}
}
