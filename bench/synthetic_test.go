package bench

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/losses"
	"gorgonia.org/tensor"
)

var sink float64

// gdStep builds a GD model with its trainer for one synthetic minibatch.
func gdStep(b *testing.B, dt tensor.Dtype, batch, n, blocks int) (*graph.Trainer, func() error) {
	b.Helper()
	cfg := data.DefaultSyntheticConfig()
	cfg.N = n
	task, err := data.NewSynthetic(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	mb, err := task.Sample(batch, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	s, _ := graph.NewScope(dt, 1)
	m, err := gd.NewModel(s, gd.Config{D: cfg.D, DPrime: cfg.DPrime, C: cfg.C, N: n, Blocks: blocks, Kernel: "softmax"}, batch)
	if err != nil {
		b.Fatal(err)
	}
	loss, err := losses.CrossEntropy(m.Logits, m.Target)
	if err != nil {
		b.Fatal(err)
	}
	mach, err := graph.NewMachine(s, loss, graph.MachineOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { mach.Close() })
	tr, err := graph.NewTrainer(mach, graph.TrainConfig{LR: 1e-3})
	if err != nil {
		b.Fatal(err)
	}
	return tr, func() error { return m.Feed(mb.X, mb.Y) }
}

// BenchmarkGDTrainStep times one training step (forward, backward, Adam) of
// the synthetic GD model at the paper's sizes: batch 512, N=10, d=10, d'=5,
// C=25, softmax kernel.
func BenchmarkGDTrainStep(b *testing.B) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for _, blocks := range []int{1, 2} {
			b.Run(fmt.Sprintf("blocks=%d/%v", blocks, dt), func(b *testing.B) {
				tr, feed := gdStep(b, dt, 512, 10, blocks)
				if err := feed(); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					l, err := tr.Step()
					if err != nil {
						b.Fatal(err)
					}
					sink = l
				}
			})
		}
	}
}
