package train_test

import (
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
)

// copyFed hides a model's PrepareContexts and FeedPrepared: Fit then
// copies every minibatch out of the set and feeds it with Feed (its path
// for any other model).
type copyFed struct{ train.Model }

// TestFitFeedPreparedSame checks that Fit through a prepared set
// (PrepareContexts and FeedPrepared of tf.Model and gd.Model) trains the
// same parameters bit for bit as Fit through Feed of each minibatch copied
// out: both dtypes, a set that is not a multiple of the batch (the last
// minibatch wraps), two epochs, evaluation after each.
func TestFitFeedPreparedSame(t *testing.T) {
	const B, N, d, dp, C, n = 4, 3, 2, 2, 6, 10
	task, err := data.NewSynthetic(data.SyntheticConfig{N: N, D: d, DPrime: dp, C: C}, 1)
	if err != nil {
		t.Fatal(err)
	}
	set, err := task.Sample(n, rand.New(rand.NewPCG(2, 3)))
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for _, kind := range []string{"tf", "gd"} {
			build := func() (train.Model, G.Nodes) {
				s, err := graph.NewScope(dt, 1)
				if err != nil {
					t.Fatal(err)
				}
				if kind == "tf" {
					m, err := tf.NewModel(s, tf.Config{D: d, DPrime: dp, C: C, N: N, Layers: 2, Cross: true, Kernel: layers.Softmax(1)}, B)
					if err != nil {
						t.Fatal(err)
					}
					return m, m.Params()
				}
				m, err := gd.NewModel(s, gd.Config{D: d, DPrime: dp, C: C, N: N, Blocks: 1, Kernel: layers.Softmax(1)}, B)
				if err != nil {
					t.Fatal(err)
				}
				return m, m.Params()
			}
			fit := func(m train.Model) {
				r, err := train.NewRunner(m, train.RunnerConfig{Optim: train.Config{LR: 0.05}})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				if err := r.Fit(set, train.FitConfig{Epochs: 2, Seed: 5, AfterEpoch: func(int, float64) error {
					_, err := r.Evaluate(set)
					return err
				}}); err != nil {
					t.Fatal(err)
				}
			}
			direct, pd := build()
			if _, ok := direct.(interface {
				PrepareContexts([]float64, []int) (*layers.Contexts, error)
				FeedPrepared(*layers.Contexts, []int) error
			}); !ok {
				t.Fatalf("%s: the model has no PrepareContexts and FeedPrepared", kind)
			}
			copied, pc := build()
			fit(direct)
			fit(copyFed{copied})
			for i, p := range pd {
				a, err := graph.Values(p)
				if err != nil {
					t.Fatal(err)
				}
				b, err := graph.Values(pc[i])
				if err != nil {
					t.Fatal(err)
				}
				for j := range a {
					if a[j] != b[j] {
						t.Fatalf("%s %v: parameter %s[%d] = %v through FeedPrepared, %v through Feed", kind, dt, p.Name(), j, a[j], b[j])
					}
				}
			}
		}
	}
}
