package tf

import (
	"fmt"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/losses"
)

// TestRepeatedRunsMatchFreshMachine checks the state the fused ops keep
// between runs (intermediate values, gradients, reused output memory): a
// machine that has run on other minibatches and other parameter values
// gives, on a minibatch and parameters, the same loss and gradients as a
// fresh machine on a fresh graph (1 and 2 layers, with cross-attention;
// float64 and float32).
func TestRepeatedRunsMatchFreshMachine(t *testing.T) {
	const B = 8
	tc := data.SyntheticConfig{C: 6, DPrime: 3, D: 4, N: 5}
	task, err := data.NewSynthetic(tc, 1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	var batches []*data.Batch
	for i := 0; i < 3; i++ {
		b, err := task.Sample(B, rng)
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	for _, dt := range []struct {
		name string
		dt   tensor.Dtype
		tol  float64
	}{{"float64", graph.Float64, 1e-12}, {"float32", graph.Float32, 1e-5}} {
		for _, cfg := range []Config{
			{D: tc.D, DPrime: tc.DPrime, C: tc.C, N: tc.N},
			{D: tc.D, DPrime: tc.DPrime, C: tc.C, N: tc.N, Layers: 2, Cross: true},
		} {
			t.Run(fmt.Sprintf("%s/layers=%d/cross=%v", dt.name, cfg.Layers, cfg.Cross), func(t *testing.T) {
				build := func() (*Model, *graph.Machine, *G.Node) {
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
					return m, vm, loss
				}
				run := func(m *Model, vm *graph.Machine, loss *G.Node, b *data.Batch) []float64 {
					if err := m.Feed(b.X, b.Y); err != nil {
						t.Fatal(err)
					}
					if err := vm.Run(); err != nil {
						t.Fatal(err)
					}
					l, err := graph.Scalar(loss)
					if err != nil {
						t.Fatal(err)
					}
					out := []float64{l}
					for _, p := range m.Params() {
						g, err := graph.GradValues(p)
						if err != nil {
							t.Fatal(err)
						}
						out = append(out, g...)
					}
					return out
				}
				m1, vm1, loss1 := build()
				defer vm1.Close()
				run(m1, vm1, loss1, batches[0])
				run(m1, vm1, loss1, batches[1])
				// Move every parameter, as an optimiser step would.
				for _, p := range m1.Params() {
					v, err := graph.Values(p)
					if err != nil {
						t.Fatal(err)
					}
					for i := range v {
						v[i] += 0.01 * float64(i%7-3)
					}
					if err := graph.SetValue(p, v); err != nil {
						t.Fatal(err)
					}
				}
				got := run(m1, vm1, loss1, batches[2])
				again := run(m1, vm1, loss1, batches[2])
				m2, vm2, loss2 := build()
				defer vm2.Close()
				for i, p := range m2.Params() {
					v, err := graph.Values(m1.Params()[i])
					if err != nil {
						t.Fatal(err)
					}
					if err := graph.SetValue(p, v); err != nil {
						t.Fatal(err)
					}
				}
				want := run(m2, vm2, loss2, batches[2])
				for i := range want {
					if d := got[i] - want[i]; d > dt.tol*(1+abs(want[i])) || -d > dt.tol*(1+abs(want[i])) {
						t.Fatalf("value %d (0: loss, then gradients): reused machine %v, fresh machine %v", i, got[i], want[i])
					}
					if again[i] != got[i] {
						t.Fatalf("value %d: second run on the same inputs gives %v, first %v", i, again[i], got[i])
					}
				}
			})
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
