package gd

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/losses"
)

// TestRepeatedRunsMatchFreshMachine checks the state the fused ops keep
// between runs (intermediate values, gradients, reused output memory): a
// machine that has run on other minibatches and other parameter values
// gives, on a minibatch and parameters, the same loss and gradients as a
// fresh machine on a fresh graph (structured GD models with 1 and 2 blocks,
// and 2 heads; float64 and float32).
func TestRepeatedRunsMatchFreshMachine(t *testing.T) {
	const B = 8
	tc := data.SyntheticConfig{C: 6, DPrime: 3, D: 4, N: 5}
	task, err := data.NewSynthetic(tc, 1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	var batches [3]graphtest.Batch
	for i := 0; i < 3; i++ {
		b, err := task.Sample(B, rng)
		if err != nil {
			t.Fatal(err)
		}
		batches[i] = graphtest.Batch{X: b.X, Y: b.Y}
	}
	for _, dt := range []struct {
		name string
		dt   tensor.Dtype
		tol  float64
	}{{"float64", graph.Float64, 1e-12}, {"float32", graph.Float32, 1e-5}} {
		for _, cfg := range []Config{
			{D: tc.D, DPrime: tc.DPrime, C: tc.C, N: tc.N, Blocks: 1, Kernel: layers.Softmax(1)},
			{D: tc.D, DPrime: tc.DPrime, C: tc.C, N: tc.N, Blocks: 2, Kernel: layers.Softmax(1)},
			{D: tc.D, DPrime: tc.DPrime, C: tc.C, N: tc.N, Blocks: 2, Kernel: layers.RBF(1), Heads: 2},
		} {
			t.Run(fmt.Sprintf("%s/blocks=%d/%s/heads=%d", dt.name, cfg.Blocks, cfg.Kernel.Name(), cfg.Heads), func(t *testing.T) {
				graphtest.CheckReusedMachine(t, func() graphtest.Fresh {
					s, _ := graph.NewScope(dt.dt, 1)
					m, err := NewModel(s, cfg, B)
					if err != nil {
						t.Fatal(err)
					}
					loss, err := losses.CrossEntropy(m.Logits, m.Target)
					if err != nil {
						t.Fatal(err)
					}
					vm, err := graph.NewMachine(s, loss, graph.MachineOptions{})
					if err != nil {
						t.Fatal(err)
					}
					return graphtest.Fresh{Machine: vm, Loss: loss, Params: m.Params(), Feed: m.Feed}
				}, batches, dt.tol)
			})
		}
	}
}
