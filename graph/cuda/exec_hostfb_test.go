package cuda

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/losses"
	"github.com/gdattn/gdattn/tf"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// fbLM is a tiny language model's training graph with its loss built with
// the given options, and a feed of a fresh minibatch drawn from a seed.
type fbLM struct {
	s    *graph.Scope
	loss *G.Node
	feed func(seed uint64) error
}

func buildFbLM(name string, dt tensor.Dtype, o losses.SparseOptions) (*fbLM, error) {
	s, err := graph.NewScope(dt, 9)
	if err != nil {
		return nil, err
	}
	const B, V, ctx = 3, 11, 5
	var logits, targets *G.Node
	var feed func(ids, targets []int) error
	switch name {
	case "gdlm":
		m, err := gd.NewLM(s, gd.LMConfig{Vocab: V, DPrime: 4, Context: ctx, Heads: 2, Steps: 2}, gd.LMOptions{Batch: B})
		if err != nil {
			return nil, err
		}
		logits, targets, feed = m.Logits, m.Targets, m.Feed
	case "gpt":
		m, err := tf.NewGPT(s, tf.GPTConfig{Vocab: V, Context: ctx, DModel: 4, Heads: 2, Layers: 2}, tf.GPTOptions{Batch: B})
		if err != nil {
			return nil, err
		}
		logits, targets, feed = m.Logits, m.Targets, m.Feed
	default:
		return nil, fmt.Errorf("unknown model %q", name)
	}
	loss, err := losses.SparseSoftmaxCrossEntropyWith(logits, targets, o)
	if err != nil {
		return nil, err
	}
	return &fbLM{s: s, loss: loss, feed: func(seed uint64) error {
		rng := rand.New(rand.NewPCG(seed, 3))
		ids, tg := make([]int, B*ctx), make([]int, B*ctx)
		for i := range ids {
			ids[i], tg[i] = rng.IntN(V), rng.IntN(V)
		}
		tg[int(seed)%len(tg)] = -1 // a position not scored, moving from batch to batch
		return feed(ids, tg)
	}}, nil
}

// fbRuns runs the model's graph on factory (nil: Gorgonia's machine) over
// runs minibatches and returns each run's loss and gradients.
func fbRuns(t *testing.T, name string, dt tensor.Dtype, o losses.SparseOptions, factory graph.ExecutorFactory, runs int) ([]snapshot, *graph.Machine) {
	t.Helper()
	m, err := buildFbLM(name, dt, o)
	if err != nil {
		t.Fatal(err)
	}
	mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: factory})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mach.Close() })
	tm := &testModel{s: m.s, loss: m.loss}
	var out []snapshot
	for r := range runs {
		if err := m.feed(uint64(40 + r)); err != nil {
			t.Fatal(err)
		}
		if err := mach.Run(); err != nil {
			t.Fatalf("run %d: %v", r, err)
		}
		out = append(out, takeSnapshot(t, tm, mach))
	}
	return out, mach
}

// TestExecutorHostXentOverwrite: the language models' loss, the sparse
// cross-entropy made by losses.SparseSoftmaxCrossEntropyWith with
// Overwrite (its forward op writes the softmax over the logits' host
// buffer, which its backward op then reads as the softmax) and with the
// Float32 option, and the plain loss, run through the CPU fallback
// (HostOnly, and HostOps naming the cross-entropy with the rest on the
// device) over changing minibatches: loss and every gradient equal
// Gorgonia's machine's, bit for bit where every op runs on the host.
func TestExecutorHostXentOverwrite(t *testing.T) {
	be, device := execBackend(t)
	type variant struct {
		name string
		o    losses.SparseOptions
		dt   tensor.Dtype
	}
	var vs []variant
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, o := range []losses.SparseOptions{{}, {Overwrite: true}, {Float32: true}, {Overwrite: true, Float32: true}} {
			if o.Float32 && dt != tensor.Float32 {
				continue
			}
			vs = append(vs, variant{fmt.Sprintf("%v/overwrite=%v/float32=%v", dt, o.Overwrite, o.Float32), o, dt})
		}
	}
	type mode struct {
		name string
		opts ExecOptions
		tol  float64 // 0: bit for bit
	}
	quiet := func(string, ...any) {}
	modes := []mode{{"hostonly", ExecOptions{HostOnly: true, Logf: quiet}, 0}}
	if device {
		modes = append(modes,
			mode{"hostops-xent", ExecOptions{HostOps: []string{"ops.SparseCrossEntropyOp"}, Logf: quiet}, -1},
			mode{"hostops-xentgrad", ExecOptions{HostOps: []string{"ops.SparseCrossEntropyOp SparseXentGrad"}, Logf: quiet}, -1})
	}
	const runs = 3
	for _, model := range []string{"gdlm", "gpt"} {
		for _, v := range vs {
			want, _ := fbRuns(t, model, v.dt, v.o, nil, runs)
			for _, md := range modes {
				t.Run(model+"/"+v.name+"/"+md.name, func(t *testing.T) {
					if md.name == "hostops-xentgrad" && v.o.Float32 {
						t.Skip("the Float32 option has no device forward")
					}
					tol := md.tol
					if tol < 0 {
						tol = 1e-12
						if v.dt == tensor.Float32 {
							tol = 1e-6
						}
					}
					got, mach := fbRuns(t, model, v.dt, v.o, NewExecutorWith(be, md.opts), runs)
					fb := strings.Join(mach.Executor().(*Exec).FallbackOps(), "; ")
					if !strings.Contains(fb, "SparseXentGrad") {
						t.Fatalf("the cross-entropy's gradient does not run on the host: %q", fb)
					}
					for r := range want {
						if tol == 0 {
							if got[r].loss != want[r].loss {
								t.Errorf("run %d: loss %v, Gorgonia's machine %v", r, got[r].loss, want[r].loss)
							}
							for name, w := range want[r].grads {
								if d := relDiff(got[r].grads[name], w); d != 0 || len(got[r].grads[name]) != len(w) {
									t.Errorf("run %d: gradient of %q differs by %.3g (relative)", r, name, d)
								}
							}
							continue
						}
						worst := compareSnapshots(t, got[r], want[r], tol)
						if r == 0 {
							t.Logf("largest relative difference %.3g", worst)
						}
					}
				})
			}
		}
	}
}

// modelRuns runs test model name on factory (nil: Gorgonia's machine) with
// options opts over runs minibatches (the first buildModel's, then fed
// anew) and returns each run's loss and gradients, and the executor.
func modelRuns(t *testing.T, name string, dt tensor.Dtype, factory graph.ExecutorFactory, runs int) ([]snapshot, *Exec) {
	t.Helper()
	m, err := buildModel(name, dt, 5)
	if err != nil {
		t.Fatal(err)
	}
	m.outputs = nil // loss and gradients only
	mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: factory})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mach.Close() })
	var out []snapshot
	for r := range runs {
		if r > 0 {
			if err := m.feed(uint64(70 + r)); err != nil {
				t.Fatal(err)
			}
		}
		if err := mach.Run(); err != nil {
			t.Fatalf("run %d: %v", r, err)
		}
		out = append(out, takeSnapshot(t, m, mach))
	}
	x, _ := mach.Executor().(*Exec)
	return out, x
}

// TestExecutorHostOpEachRun moves each op of every test model in turn onto
// the CPU fallback (ExecOptions.HostOps naming it alone; HostOnly on a
// backend without kernels), its forward or gradient partner staying on
// the device, and runs the model over changing minibatches: loss and
// gradients must follow Gorgonia's machine's from run to run. The fused
// ops' gradient ops cache what they compute by the identity of their
// argument buffers (ops.KernelGradOp, ops.HeadGradOp, ...), trusting the
// forward op, which runs before them on Gorgonia's machine, to invalidate
// the cache; with the forward op on the device, a host copy reused from
// run to run would return the first run's gradients.
func TestExecutorHostOpEachRun(t *testing.T) {
	be, device := execBackend(t)
	const runs = 3
	quiet := func(string, ...any) {}
	for _, name := range append(modelNames[:len(modelNames):len(modelNames)], "gd-single-softmax", "gd-single-rbf") {
		want, _ := modelRuns(t, name, tensor.Float64, nil, runs)
		if !device {
			t.Run(name+"/hostonly", func(t *testing.T) {
				got, _ := modelRuns(t, name, tensor.Float64, NewExecutorWith(be, ExecOptions{HostOnly: true, Logf: quiet}), runs)
				for r := range want {
					compareSnapshots(t, got[r], want[r], 0) // the same ops, the same bits
				}
			})
			continue
		}
		_, x := modelRuns(t, name, tensor.Float64, NewExecutorWith(be, ExecOptions{Logf: quiet}), 1)
		for _, p := range x.Placements() {
			if !p.Device {
				continue
			}
			t.Run(name+"/"+p.Op, func(t *testing.T) {
				got, x := modelRuns(t, name, tensor.Float64, NewExecutorWith(be, ExecOptions{HostOps: []string{p.Op}, Logf: quiet}), runs)
				if len(x.FallbackOps()) == 0 {
					t.Fatalf("HostOps %q moved no op to the host", p.Op)
				}
				for r := range want {
					compareSnapshots(t, got[r], want[r], 1e-10)
				}
			})
		}
	}
}
