package gd

import (
	"fmt"
	"math"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/losses"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// queryRun builds a GD model of cfg, feeds a fixed random batch and runs a
// gradient machine on the cross-entropy of the model's logits (full false:
// the last block's update at the query alone) or of logits read from the
// last row of F[K] (full true: every position's update computed). It
// returns the loss and every parameter's gradient.
func queryRun(t *testing.T, cfg Config, dt tensor.Dtype, full bool) (float64, [][]float64) {
	t.Helper()
	const B = 5
	x, y := randomBatch(3, B, cfg.N+1, cfg.D, cfg.C)
	s, err := graph.NewScope(dt, 7)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(s, cfg, B)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Feed(x, y); err != nil {
		t.Fatal(err)
	}
	logits := m.Logits
	if full {
		T := cfg.N + 1
		fK := m.F[len(m.F)-1]
		fq := G.Must(ops.Reshape(G.Must(ops.Slice(fK, 1, T-1, T)), tensor.Shape{B, cfg.DPrime}))
		head, err := layers.NewSoftmaxHead(m.We)
		if err != nil {
			t.Fatal(err)
		}
		if logits, err = head.Forward(fq); err != nil {
			t.Fatal(err)
		}
	}
	loss, err := losses.CrossEntropy(logits, m.Target)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := graph.NewMachine(s, loss, graph.MachineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	if err := vm.Run(); err != nil {
		t.Fatal(err)
	}
	l, err := graph.Scalar(loss)
	if err != nil {
		t.Fatal(err)
	}
	var grads [][]float64
	for _, p := range s.Params() {
		g, err := graph.GradValues(p)
		if err != nil {
			t.Fatal(err)
		}
		grads = append(grads, g)
	}
	return l, grads
}

// TestQueryUpdateExact checks that the structured model's loss and
// gradients, which read the last block's update at the query alone, are
// those of the full last block's query row, bit for bit, for built-in and
// combined kernels, one and two blocks and heads, both forms, N = 9 and
// 40, float64 and float32.
func TestQueryUpdateExact(t *testing.T) {
	kernels := []layers.KernelSpec{layers.Softmax(0.7), layers.RBF(0.7), layers.Linear(),
		layers.Sum(layers.RBF(0.7), layers.Scaled(0.3, layers.Linear()))}
	for ki, k := range kernels {
		for _, c := range []struct {
			form             Form
			blocks, heads, n int
		}{{Interleaved, 1, 1, 9}, {Interleaved, 2, 1, 9}, {Interleaved, 1, 2, 9}, {Interleaved, 2, 2, 9}, {OneStep, 1, 1, 9},
			{Interleaved, 1, 1, 40}, {Interleaved, 2, 1, 40}} {
			cfg := Config{D: 3, DPrime: 2, C: 4, N: c.n, Form: c.form, Blocks: c.blocks, Heads: c.heads, Kernel: k}
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				t.Run(fmt.Sprintf("kernel%d/%v/K=%d/heads=%d/N=%d/%v", ki, c.form, c.blocks, c.heads, c.n, dt), func(t *testing.T) {
					wantL, want := queryRun(t, cfg, dt, true)
					gotL, got := queryRun(t, cfg, dt, false)
					check := func(what string, g, w []float64) {
						t.Helper()
						if len(g) != len(w) {
							t.Fatalf("%s: %d values, want %d", what, len(g), len(w))
						}
						for i := range w {
							if math.Float64bits(g[i]) != math.Float64bits(w[i]) && !(g[i] == 0 && w[i] == 0) {
								t.Fatalf("%s[%d] = %v, want %v bit for bit (the full last block's)", what, i, g[i], w[i])
							}
						}
					}
					check("loss", []float64{gotL}, []float64{wantL})
					if len(got) != len(want) {
						t.Fatalf("%d gradients, want %d", len(got), len(want))
					}
					for i := range want {
						check(fmt.Sprintf("gradient %d", i), got[i], want[i])
					}
				})
			}
		}
	}
}
