package cuda

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/losses"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// tiedModel is a language-model output path on a table wider than the
// test models' 11 tokens: h = LookupCentered(ids) (or Lookup), reshaped to
// (B·T, D), plus Lookup(ids2); logits = TiedLogits(h, w); the sparse
// cross-entropy against labels (some not scored).
func tiedModel(dt tensor.Dtype, V, D int, centered bool) (*testModel, error) {
	s, err := graph.NewScope(dt, 31)
	if err != nil {
		return nil, err
	}
	const B, T = 3, 5
	e, err := layers.NewSparseEmbedding(s.Sub("wte"), layers.EmbeddingConfig{Vocab: V, Dim: D, WInit: graph.Normal(0.6)})
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(31, 7))
	feed := func(name string, hi int, shape ...int) (*G.Node, error) {
		n, err := layers.NewIDs(s, name, shape...)
		if err != nil {
			return nil, err
		}
		vals := make([]int, B*T)
		for i := range vals {
			vals[i] = rng.IntN(hi)
		}
		if name == "labels" {
			vals[3] = -1
			return n, losses.SetLabels(n, vals, V)
		}
		vals[1] = vals[0] // a repeated id: the scatter adds two rows into one
		return n, e.SetIDs(n, vals)
	}
	ids, err := feed("ids", V, B, T)
	if err != nil {
		return nil, err
	}
	ids2, err := feed("ids2", V, B*T)
	if err != nil {
		return nil, err
	}
	labels, err := feed("labels", V, B*T)
	if err != nil {
		return nil, err
	}
	look := e.Lookup
	if centered {
		look = e.LookupCentered
	}
	h, err := look(ids)
	if err != nil {
		return nil, err
	}
	if h, err = ops.Reshape(h, tensor.Shape{B * T, D}); err != nil {
		return nil, err
	}
	h2, err := e.Lookup(ids2)
	if err != nil {
		return nil, err
	}
	if h, err = G.Add(h, h2); err != nil {
		return nil, err
	}
	logits, err := e.Logits(h)
	if err != nil {
		return nil, err
	}
	loss, err := losses.SparseSoftmaxCrossEntropy(logits, labels)
	if err != nil {
		return nil, err
	}
	return &testModel{name: "tied", s: s, loss: loss, outputs: G.Nodes{logits, h}}, nil
}

// TestExecutorTiedCentered compares the tied output layer (its three
// products on Gemm) and the centered and plain lookups (the mean row and
// the scatter-add's fill through the mean, a warp per column (chunks=0)
// or with meanChunks partial sums of one row, several rows and all rows per
// chunk) with the TapeMachine, and requires them on the device when the
// backend has kernels.
func TestExecutorTiedCentered(t *testing.T) {
	be, device := execBackend(t)
	defer func(c int, w int64) { meanChunks, warpSumMax = c, w }(meanChunks, warpSumMax)
	warpSums := warpSumMax
	for _, centered := range []bool{true, false} {
		for _, chunks := range []int{0, 64, 7, 1} {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				t.Run(fmt.Sprintf("centered=%v/chunks=%d/%v", centered, chunks, dt), func(t *testing.T) {
					meanChunks, warpSumMax = max(1, chunks), warpSums
					if chunks > 0 {
						warpSumMax = 0
					}
					run := func(factory graph.ExecutorFactory) (snapshot, *graph.Machine) {
						m, err := tiedModel(dt, 29, 6, centered)
						if err != nil {
							t.Fatal(err)
						}
						mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: factory, Outputs: m.outputs})
						if err != nil {
							t.Fatal(err)
						}
						t.Cleanup(func() { mach.Close() })
						var s snapshot
						for run := 0; run < 2; run++ { // buffers reused: the same again
							if err := mach.Run(); err != nil {
								t.Fatal(err)
							}
							s = takeSnapshot(t, m, mach)
						}
						return s, mach
					}
					want, _ := run(nil)
					c := countLaunches(be)
					got, mach := run(NewExecutorWith(c, ExecOptions{HostOnly: !device, Logf: func(string, ...any) {}}))
					if centered && chunks == 0 {
						c.took(t, device, []string{"col_mean_warp"}, []string{"col_sum_part"})
					} else if centered {
						c.took(t, device, []string{"col_sum_part", "col_mean_join"}, []string{"col_mean_warp"})
					}
					worst := compareSnapshots(t, got, want, execTol(dt))
					t.Logf("largest relative difference %.3g", worst)
					if device {
						if fb := mach.Executor().(*Exec).FallbackOps(); len(fb) > 0 {
							t.Errorf("ops on the host: %v", fb)
						}
					}
				})
			}
		}
	}
}

// TestExecutorCenteredLookupOnHost: with the gather and scatter-add forced
// onto the host (ExecOptions.HostOps), the language model's centered lookup
// and its gradient run through the CPU fallback, between device ops that
// feed and read them, and the results still match the TapeMachine.
func TestExecutorCenteredLookupOnHost(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("everything runs on the host already")
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		want := tapeRun(t, "gdlm", dt)
		m, err := buildModel("gdlm", dt, 5)
		if err != nil {
			t.Fatal(err)
		}
		opts := ExecOptions{HostOps: []string{"ops.GatherOp", "ops.ScatterOp"}, Logf: func(string, ...any) {}}
		mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Outputs: m.outputs, Executor: NewExecutorWith(be, opts)})
		if err != nil {
			t.Fatal(err)
		}
		if err := mach.Run(); err != nil {
			t.Fatal(err)
		}
		compareSnapshots(t, takeSnapshot(t, m, mach), want, execTol(dt))
		fb := strings.Join(mach.Executor().(*Exec).FallbackOps(), "; ")
		for _, want := range []string{"ops.GatherOp Gather", "ops.ScatterOp ScatterAdd"} {
			if !strings.Contains(fb, want) {
				t.Errorf("%v: host ops %q lack %q", dt, fb, want)
			}
		}
		mach.Close()
	}
}

// TestExecutorXentFloat32 checks that the executor refuses the sparse
// cross-entropy's Float32 option when it lowers the graph to the device
// (there are no device kernels of that arithmetic), and that with HostOnly
// it computes the host op's loss, bit for bit that of Gorgonia's machine.
func TestExecutorXentFloat32(t *testing.T) {
	be, _ := execBackend(t)
	build := func() (*graph.Scope, *G.Node) {
		s, err := graph.NewScope(tensor.Float32, 5)
		if err != nil {
			t.Fatal(err)
		}
		logits, err := s.Param("logits", tensor.Shape{4, 9}, graph.Normal(2))
		if err != nil {
			t.Fatal(err)
		}
		l, err := layers.NewIDs(s, "labels", 4)
		if err != nil {
			t.Fatal(err)
		}
		if err := losses.SetLabels(l, []int{3, -1, 8, 0}, 9); err != nil {
			t.Fatal(err)
		}
		loss, err := losses.SparseSoftmaxCrossEntropyWith(logits, l, losses.SparseOptions{Float32: true})
		if err != nil {
			t.Fatal(err)
		}
		return s, loss
	}
	s, loss := build()
	if m, err := graph.NewMachine(s, loss, graph.MachineOptions{Executor: NewExecutorWith(be, ExecOptions{Logf: t.Logf})}); err == nil || !strings.Contains(err.Error(), "Float32 option") {
		if m != nil {
			m.Close()
		}
		t.Fatalf("device lowering of the Float32 option: error %v, want a refusal", err)
	}
	run := func(f graph.ExecutorFactory) float32 {
		s, loss := build()
		m, err := graph.NewMachine(s, loss, graph.MachineOptions{Executor: f})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if err := m.Run(); err != nil {
			t.Fatal(err)
		}
		return loss.Value().Data().(float32)
	}
	host, vm := run(NewExecutorWith(be, ExecOptions{HostOnly: true})), run(nil)
	if host != vm {
		t.Errorf("HostOnly loss %v, Gorgonia's machine %v", host, vm)
	}
}
