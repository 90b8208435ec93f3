package cuda

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// attentionModel is one attention head on parameter tokens z (so dz is
// computed too) with the loss Σ out²/2; with query, the head at the last
// position only (layers.Attention.ForwardQuery), regrouped with regroup
// (layers.AttentionConfig.RegroupQuery).
func attentionModel(dt tensor.Dtype, kern string, keys layers.KeyMode, learn, tie, query, regroup bool) (*testModel, error) {
	s, err := graph.NewScope(dt, 21)
	if err != nil {
		return nil, err
	}
	const B, T, DIn = 2, 5, 4
	z, err := s.Param("z", tensor.Shape{B, T, DIn}, graph.Normal(0.7))
	if err != nil {
		return nil, err
	}
	bk, err := layers.NewBuiltinKernel(s.Sub("kernel"), kern, layers.KernelConfig{Gamma: 0.8, Learnable: learn})
	if err != nil {
		return nil, err
	}
	att, err := layers.NewAttention(s.Sub("head"), layers.AttentionConfig{DIn: DIn, DK: 3, DV: 2, DOut: 6, Builtin: bk, Keys: keys, TieQK: tie, WInit: graph.Normal(0.5), RegroupQuery: regroup})
	if err != nil {
		return nil, err
	}
	fwd := att.Forward
	if query {
		fwd = att.ForwardQuery
	}
	out, err := fwd(z)
	if err != nil {
		return nil, err
	}
	var half any = 0.5
	if dt == tensor.Float32 {
		half = float32(0.5)
	}
	loss, err := G.Mul(G.Must(G.Sum(G.Must(G.Square(out)))), G.NewConstant(half))
	if err != nil {
		return nil, err
	}
	return &testModel{name: "attention", s: s, loss: loss, outputs: G.Nodes{out}}, nil
}

// TestExecutorAttentionHeads compares every form of layers.Attention with
// a built-in kernel (the fused head for linear/exp/softmax with context or
// all keys, and its query head; the kernel op otherwise) against the TapeMachine: forward,
// dz and every parameter gradient, float64 and float32.
func TestExecutorAttentionHeads(t *testing.T) {
	be, device := execBackend(t)
	for _, kern := range []string{"linear", "exp", "softmax", "rbf"} {
		for _, keys := range []layers.KeyMode{layers.ContextKeys, layers.AllKeys, layers.CausalKeys} {
			for _, learn := range []bool{false, true} {
				for _, tie := range []bool{false, true} {
					for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
						for _, query := range []bool{false, true} {
							if query && keys != layers.ContextKeys {
								continue
							}
							name := fmt.Sprintf("%s/%v/learn=%v/tie=%v/query=%v/%v", kern, keys, learn, tie, query, dt)
							t.Run(name, func(t *testing.T) {
								if kern == "linear" && learn {
									t.Skip("the linear kernel has no g")
								}
								run := func(factory graph.ExecutorFactory) (snapshot, *graph.Machine) {
									m, err := attentionModel(dt, kern, keys, learn, tie, query, false)
									if err != nil {
										t.Fatal(err)
									}
									mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: factory, Outputs: m.outputs})
									if err != nil {
										t.Fatal(err)
									}
									t.Cleanup(func() { mach.Close() })
									if err := mach.Run(); err != nil {
										t.Fatal(err)
									}
									return takeSnapshot(t, m, mach), mach
								}
								want, _ := run(nil)
								got, mach := run(NewExecutorWith(be, ExecOptions{HostOnly: !device, Logf: func(string, ...any) {}}))
								compareSnapshots(t, got, want, execTol(dt))
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
		}
	}
}

// TestExecutorRegroupedQueryHead checks that the regrouped query head
// (layers.AttentionConfig.RegroupQuery), which has no device kernels, runs
// on the host under the executor with the TapeMachine's results: forward,
// dz and every parameter gradient, float64 and float32.
func TestExecutorRegroupedQueryHead(t *testing.T) {
	be, device := execBackend(t)
	for _, kern := range []string{"exp", "softmax"} {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", kern, dt), func(t *testing.T) {
				run := func(factory graph.ExecutorFactory) (snapshot, *graph.Machine) {
					m, err := attentionModel(dt, kern, layers.ContextKeys, true, false, true, true)
					if err != nil {
						t.Fatal(err)
					}
					mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: factory, Outputs: m.outputs})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { mach.Close() })
					if err := mach.Run(); err != nil {
						t.Fatal(err)
					}
					return takeSnapshot(t, m, mach), mach
				}
				want, _ := run(nil)
				got, mach := run(NewExecutorWith(be, ExecOptions{HostOnly: !device, Logf: func(string, ...any) {}}))
				compareSnapshots(t, got, want, execTol(dt))
				if device {
					onHost := false
					for _, op := range mach.Executor().(*Exec).FallbackOps() {
						onHost = onHost || strings.Contains(op, "AttentionHeadQueryRegrouped")
					}
					if !onHost {
						t.Errorf("the regrouped head is not among the host ops %v", mach.Executor().(*Exec).FallbackOps())
					}
				}
			})
		}
	}
}
