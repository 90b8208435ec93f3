package cuda

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/bench"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// chainList lists the fused chains of x, each as its nodes' ops, head
// first.
func chainList(x *Exec) []string {
	var out []string
	for _, v := range x.vals {
		if v.chainIns == nil {
			continue
		}
		var names []string
		for n := v; n != nil; {
			name := fmt.Sprintf("%s %v", strings.TrimPrefix(n.what, "gorgonia."), n.shape)
			var p *value
			for _, in := range n.ins {
				switch u := unalias(in); {
				case u.fused && u.rep != nil:
					name += " (repeat folded)"
				case u.fused && p == nil:
					p = u
				}
			}
			names = append([]string{name}, names...)
			n = p
		}
		out = append(out, strings.Join(names, " → "))
	}
	return out
}

// TestFusedChainsPaper lists the fused elementwise chains of the
// paper-sized GD LM and GPT training programs (float32, as `gpu time`
// builds them) and pins the launches of one Run (forward and backward, on
// a dry backend) with and without fusion: a change to the graphs, the
// lowering or the fusion shows here.
//
//	go test ./graph/cuda -run TestFusedChainsPaper -v
func TestFusedChainsPaper(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the paper-sized language models")
	}
	if os.Getenv("GDATTN_FAKE_CUDA") != "" { // a child of the fake driver's tests
		t.Skip("runs no kernels: nothing for the fake driver to check")
	}
	// Launches of one Run, unfused and fused, the fused chains, and the
	// warp kernels' launches (the long rows' reductions).
	want := map[string]struct{ unfused, fused, chains, warp int64 }{
		"language-paper/gdlm": {121, 98, 20, 33},
		"language-paper/gpt":  {89, 63, 16, 38},
	}
	for _, w := range []bench.Workload{bench.LM(bench.ModelGDLM, bench.LMPaper), bench.LM(bench.ModelGPT, bench.LMPaper)} {
		t.Run(w.Name, func(t *testing.T) {
			var got [2]ExecCounters
			var plans [2]MemoryPlan
			var warp [2]int64
			for i, noFusion := range []bool{true, false} {
				r, err := bench.NewRunner(w, tensor.Float32, bench.Train, 1)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				opts := ExecOptions{Logf: func(string, ...any) {}, DeviceGrads: true, ResidentParams: true, NoFusion: noFusion}
				be := &dryBackend{}
				m, err := graph.NewMachine(r.Scope, r.Loss, graph.MachineOptions{Executor: NewExecutorWith(be, opts)})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				x := m.Executor().(*Exec)
				c0, w0 := x.Counters(), be.warp
				if err := m.Run(); err != nil {
					t.Fatal(err)
				}
				got[i], plans[i], warp[i] = x.Counters().Sub(c0), x.MemoryPlan(), be.warp-w0
				chains, nodes := x.FusedChains()
				if noFusion {
					if chains != 0 || nodes != 0 {
						t.Errorf("NoFusion: %d chains of %d nodes", chains, nodes)
					}
					continue
				}
				t.Logf("%d chains of %d elementwise nodes:", chains, nodes)
				if wl := want[w.Name]; int64(chains) != wl.chains {
					t.Errorf("%d fused chains, want %d", chains, wl.chains)
				}
				for _, c := range chainList(x) {
					t.Logf("  %s", c)
				}
				if saved := got[0].Launches - got[1].Launches; saved != int64(nodes-chains) {
					t.Errorf("fusion saves %d launches, want one per fused node beyond each chain's last: %d", saved, nodes-chains)
				}
			}
			t.Logf("Run: unfused %d launches, fused %d (and %d Gemms), %d of them warp kernels; arena %d bytes fused, %d unfused",
				got[0].Launches, got[1].Launches, got[1].Gemms, warp[1], plans[1].ArenaBytes, plans[0].ArenaBytes)
			if wl := want[w.Name]; warp[0] != wl.warp || warp[1] != wl.warp {
				t.Errorf("Run: %d warp-kernel launches unfused, %d fused; want %d", warp[0], warp[1], wl.warp)
			}
			if wl := want[w.Name]; got[0].Launches != wl.unfused || got[1].Launches != wl.fused {
				t.Errorf("Run: %d launches unfused, %d fused; want %d and %d", got[0].Launches, got[1].Launches, wl.unfused, wl.fused)
			}
			if got[0].Gemms != got[1].Gemms || got[0].Syncs != got[1].Syncs {
				t.Errorf("fusion changed the Gemms or waits: %+v unfused, %+v fused", got[0], got[1])
			}
			if plans[1].ArenaBytes > plans[0].ArenaBytes {
				t.Errorf("fused arena %d bytes, unfused %d", plans[1].ArenaBytes, plans[0].ArenaBytes)
			}
		})
	}
}

// fusedPair builds test model name twice and runs it with and without
// fusion on be, returning both snapshots and the fused executor.
func fusedPair(t *testing.T, be Backend, name string, dt tensor.Dtype) (fused, unfused snapshot, x *Exec) {
	t.Helper()
	for _, noFusion := range []bool{false, true} {
		m, err := buildModel(name, dt, 5)
		if err != nil {
			t.Fatal(err)
		}
		opts := ExecOptions{NoFusion: noFusion, Logf: func(string, ...any) {}}
		mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: NewExecutorWith(be, opts), Outputs: m.outputs})
		if err != nil {
			t.Fatal(err)
		}
		defer mach.Close()
		if err := mach.Run(); err != nil {
			t.Fatal(err)
		}
		if noFusion {
			unfused = takeSnapshot(t, m, mach)
		} else {
			fused, x = takeSnapshot(t, m, mach), mach.Executor().(*Exec)
		}
	}
	return fused, unfused, x
}

// equalBits reports whether a and b hold the same floats bit for bit (the
// float32 values widened exactly).
func equalBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// compareFused fails t where the fused run's snapshot differs from the
// unfused one: in any bit when serial, else by more than execTol.
func compareFused(t *testing.T, got, want snapshot, serial bool, dt tensor.Dtype) {
	t.Helper()
	same := func(a, b []float64) bool {
		if serial {
			return equalBits(a, b)
		}
		return relDiff(a, b) <= execTol(dt)
	}
	if !same([]float64{got.loss}, []float64{want.loss}) {
		t.Errorf("loss %v, unfused %v", got.loss, want.loss)
	}
	for i := range want.outputs {
		if !same(got.outputs[i], want.outputs[i]) {
			t.Errorf("output %d differs from the unfused run", i)
		}
	}
	for name, g := range want.grads {
		if !same(got.grads[name], g) {
			t.Errorf("gradient of %s differs from the unfused run", name)
		}
	}
}

// TestFusedChainsExact runs every test model with and without fusion on
// the device and requires the same loss, outputs and gradients: bit for bit
// on the emulator, whose kernels run serially; on a GPU and the fake
// driver within execTol (TestFusedChainKernel checks the fused kernel's bits
// on every device).
func TestFusedChainsExact(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels")
	}
	serial := strings.HasPrefix(be.Name(), "emulator")
	total := 0
	for _, name := range modelNames {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			fused, unfused, x := fusedPair(t, be, name, dt)
			compareFused(t, fused, unfused, serial, dt)
			chains, nodes := x.FusedChains()
			total += chains
			if dt == tensor.Float64 {
				t.Logf("%s: %d chains of %d nodes", name, chains, nodes)
			}
		}
	}
	if total == 0 {
		t.Error("no test model has a fused chain")
	}
}

// TestFusedChainKernel runs one graph through every kind of chain step
// (unary ops, r op o, o op r, r op r, scalar broadcasts, folded repeats of
// a row and of a column, GELU and its gradient, reshapes between steps,
// more steps and inputs than one launch takes), forward only and with gradients, fused and unfused: the same bits
// on every device (the graph has no atomics and no Gemm, so a difference is
// the fused kernel rounding differently, e.g. a contracted multiply-add),
// and the TapeMachine's values within the executor tests' tolerance.
func TestFusedChainKernel(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels")
	}
	type built struct {
		s      *graph.Scope
		loss   *G.Node
		outs   G.Nodes
		params G.Nodes
	}
	build := func(dt tensor.Dtype, noGrad bool) (*built, error) {
		s, err := graph.NewScope(dt, 3)
		if err != nil {
			return nil, err
		}
		b := &built{s: s}
		sh := tensor.Shape{3, 5}
		var in [6]*G.Node
		for i := range in {
			if in[i], err = s.Param(fmt.Sprintf("x%d", i), sh, graph.Uniform(0.2, 1.5)); err != nil {
				return nil, err
			}
		}
		sc, err := s.Param("s", tensor.Shape{}, graph.Constant(1.25))
		if err != nil {
			return nil, err
		}
		row, err := s.Param("row", tensor.Shape{1, 5}, graph.Uniform(-1, 1))
		if err != nil {
			return nil, err
		}
		col, err := s.Param("col", tensor.Shape{3, 1}, graph.Uniform(0.5, 1))
		if err != nil {
			return nil, err
		}
		b.params = append(G.Nodes(in[:]), sc, row, col)
		two := G.NewConstant(2.0)
		if dt == tensor.Float32 {
			two = G.NewConstant(float32(2))
		}
		var r *G.Node
		steps := []func() (*G.Node, error){
			func() (*G.Node, error) { return G.BroadcastHadamardProd(col, in[0], []byte{1}, nil) }, // a repeat as x0
			func() (*G.Node, error) { return G.Add(r, in[1]) },
			func() (*G.Node, error) { return G.HadamardProd(r, in[2]) },
			func() (*G.Node, error) { return G.Sub(in[3], r) },
			func() (*G.Node, error) { return G.Div(r, sc) },
			func() (*G.Node, error) { return G.Sigmoid(r) },
			func() (*G.Node, error) { return G.HadamardProd(r, r) },
			func() (*G.Node, error) { return G.Reshape(r, tensor.Shape{5, 3}) },
			func() (*G.Node, error) { return G.Tanh(r) },
			func() (*G.Node, error) { return G.Reshape(r, sh) },
			func() (*G.Node, error) { return G.Add(r, in[4]) }, // a fifth input
			func() (*G.Node, error) { return G.Exp(r) },
			func() (*G.Node, error) { return G.Neg(r) },
			func() (*G.Node, error) { return G.Square(r) },
			func() (*G.Node, error) { return G.Sub(sc, r) }, // o op r, o a scalar
			func() (*G.Node, error) { return G.Pow(r, two) },
			func() (*G.Node, error) { return G.Sqrt(r) },
			func() (*G.Node, error) { return G.Log(r) },
			func() (*G.Node, error) { return G.Inverse(r) },
			func() (*G.Node, error) { return G.Cube(r) },
			func() (*G.Node, error) { return ops.GELU(r) },
			func() (*G.Node, error) { return G.HadamardProd(in[5], r) },
			func() (*G.Node, error) { return G.BroadcastAdd(r, row, nil, []byte{0}) }, // a repeat along rows
			func() (*G.Node, error) { return G.Abs(r) },
			func() (*G.Node, error) { return G.Softplus(r) },
			func() (*G.Node, error) { return G.Log1p(r) },
		}
		for _, f := range steps {
			if r, err = f(); err != nil {
				return nil, err
			}
		}
		if noGrad {
			// gelu_grad(x, dy) as a chain step (GELUGradOp has no
			// gradient: with gradients, GELU's backward has one).
			gg, err := G.ApplyOp(&ops.GELUGradOp{}, in[0], r)
			if err != nil {
				return nil, err
			}
			if r, err = G.Add(gg, in[1]); err != nil {
				return nil, err
			}
		}
		b.outs = G.Nodes{r}
		b.loss, err = G.Sum(r)
		return b, err
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, noGrad := range []bool{true, false} {
			t.Run(fmt.Sprintf("%v/nograd=%v", dt, noGrad), func(t *testing.T) {
				var res [3][]float64 // fused, unfused, TapeMachine
				var grads [3][][]float64
				for i := range res {
					b, err := build(dt, noGrad)
					if err != nil {
						t.Fatal(err)
					}
					mo := graph.MachineOptions{Outputs: b.outs, NoGrad: noGrad}
					loss := b.loss
					if noGrad {
						loss = nil
					}
					if i < 2 {
						mo.Executor = NewExecutorWith(be, ExecOptions{NoFusion: i == 1, Logf: t.Logf})
					}
					m, err := graph.NewMachine(b.s, loss, mo)
					if err != nil {
						t.Fatal(err)
					}
					defer m.Close()
					if err := m.Run(); err != nil {
						t.Fatal(err)
					}
					if res[i], err = graph.Values(b.outs[0]); err != nil {
						t.Fatal(err)
					}
					if !noGrad {
						for _, p := range b.params {
							g, err := graph.GradValues(p)
							if err != nil {
								t.Fatal(err)
							}
							grads[i] = append(grads[i], g)
						}
					}
					if i == 0 {
						x := m.Executor().(*Exec)
						chains, nodes := x.FusedChains()
						t.Logf("%d chains of %d nodes: %s", chains, nodes, strings.Join(chainList(x), "; "))
						if chains < 2 || noGrad && nodes < 20 {
							t.Errorf("%d chains of %d nodes: fusion missed the chain", chains, nodes)
						}
					}
				}
				if !equalBits(res[0], res[1]) {
					t.Errorf("fused output %v\nunfused %v", res[0], res[1])
				}
				if d := relDiff(res[0], res[2]); d > execTol(dt) || math.IsNaN(d) {
					t.Errorf("output differs from the TapeMachine's by %.3g: %v, TapeMachine %v", d, res[0], res[2])
				}
				for k := range grads[0] {
					if !equalBits(grads[0][k], grads[1][k]) {
						t.Errorf("gradient %d: fused %v, unfused %v", k, grads[0][k], grads[1][k])
					}
					if d := relDiff(grads[0][k], grads[2][k]); d > execTol(dt) || math.IsNaN(d) {
						t.Errorf("gradient %d differs from the TapeMachine's by %.3g", k, d)
					}
				}
			})
		}
	}
}
