package cuda

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/gdattn/gdattn/bench"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/train"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// trainDevice trains model name for steps updates with cfg on an executor
// with opts and returns the losses, the parameters, the trainer's state and
// the executor (its machine closed at the end of the test).
func trainDevice(t *testing.T, be Backend, name string, dt tensor.Dtype, opts ExecOptions, cfg train.Config, steps int) ([]float64, map[string][]float64, train.State, *Exec) {
	t.Helper()
	m, err := buildModel(name, dt, 9)
	if err != nil {
		t.Fatal(err)
	}
	opts.Logf = func(string, ...any) {}
	mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: NewExecutorWith(be, opts)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mach.Close() })
	tr, err := train.NewTrainer(mach, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	for range steps {
		l, err := tr.Step()
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, l)
	}
	st, err := tr.State()
	if err != nil {
		t.Fatal(err)
	}
	params := map[string][]float64{}
	for _, p := range mach.Params() {
		v, err := graph.Values(p)
		if err != nil {
			t.Fatal(err)
		}
		params[p.Name()] = v
	}
	return losses, params, st, mach.Executor().(*Exec)
}

// TestExecutorParamDtypeMoments: with Config.ParamDtypeMoments the device
// keeps float32 moments for float32 parameters (half the moments' device
// bytes) and its update is the host optimiser's: on the serial emulator
// bit for bit (the same gradients in every run), through RunStep
// (DeviceGrads) within 1e-6 with clipping (the device sums the norm in
// another order); float64 parameters keep float64 moments.
func TestExecutorParamDtypeMoments(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels: the trainer updates on the host")
	}
	for _, name := range []string{"gdlm", "gpt"} {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			for _, clip := range []float64{0, 0.05} {
				t.Run(fmt.Sprintf("%s/%v/clip%v", name, dt, clip), func(t *testing.T) {
					const steps = 3
					cfg := train.Config{Optimizer: "adamw", LR: 0.01, WeightDecay: 0.1, ClipNorm: clip, ParamDtypeMoments: true,
						Decay: func(_ string, s tensor.Shape) bool { return s.Dims() >= 2 }}
					if dt == tensor.Float32 && !strings.HasPrefix(be.Name(), "emulator") {
						cfg.Eps = 1e-3 // see TestExecutorTrainerMatchesHost
					}
					hcfg := cfg
					hcfg.HostOptimizer = true
					wl, wp, ws, _ := trainDevice(t, be, name, dt, ExecOptions{}, hcfg, steps)
					for _, opts := range []ExecOptions{{DeviceGrads: true, ResidentParams: true}, {}} {
						gl, gp, gs, x := trainDevice(t, be, name, dt, opts, cfg, steps)
						var params int64
						for _, w := range wp {
							params += int64(len(w))
						}
						want := params * 16
						if dt == tensor.Float32 {
							want = params * 8
						}
						if got := x.MomentBytes(); got != want {
							t.Errorf("moments hold %d device bytes, want %d", got, want)
						}
						c64 := cfg
						c64.ParamDtypeMoments = false
						_, _, _, x64 := trainDevice(t, be, name, dt, opts, c64, 1)
						if got := x64.MomentBytes(); got != params*16 {
							t.Errorf("without ParamDtypeMoments the moments hold %d device bytes, want %d", got, params*16)
						}
						if got := x.DeviceBytes(); dt == tensor.Float32 && got != x64.DeviceBytes()-params*8 {
							t.Errorf("device bytes %d with float32 moments, %d with float64 ones: want %d fewer", got, x64.DeviceBytes(), params*8)
						}
						// The serial emulator's gradients are the same in
						// every run; a GPU's (and the threaded fake driver's)
						// may differ by rounding between two runs.
						tol := 0.0
						if clip > 0 && opts.DeviceGrads {
							tol = 1e-6
						}
						if !strings.HasPrefix(be.Name(), "emulator") {
							tol = max(tol, execTol(dt))
						}
						if d := relDiff(gl, wl); d > tol {
							t.Errorf("losses %v, host update %v", gl, wl)
						}
						for n, w := range wp {
							if d := relDiff(gp[n], w); d > tol {
								t.Errorf("parameter %q differs by %.3g after %d steps", n, d, steps)
							}
							if d := relDiff(gs.M[n], ws.M[n]); d > tol {
								t.Errorf("first moment of %q differs by %.3g", n, d)
							}
							if d := relDiff(gs.V[n], ws.V[n]); d > tol {
								t.Errorf("second moment of %q differs by %.3g", n, d)
							}
							if dt == tensor.Float32 {
								for j, m := range gs.M[n] {
									if float64(float32(m)) != m || float64(float32(gs.V[n][j])) != gs.V[n][j] {
										t.Fatalf("moments of %q are not float32 values", n)
									}
								}
							}
						}
					}
				})
			}
		}
	}
}

// optimiserLaunches is the number of launches of one RunStep besides the
// program's: the statistics' parts and join, step_finish and the update
// groups.
func optimiserLaunches(x *Exec) int64 {
	sp := x.upd.stat
	n := int64(len(sp.parts) + 1 + len(x.upd.groups))
	if sp.join {
		n++
	}
	return n
}

// TestExecutorRunStepCounts: a trainer step on an executor with
// DeviceGrads and ResidentParams waits for the device once (one Sync, one
// copy back: the step block) and launches, besides the program's kernels,
// a fixed handful (statistics parts and join, step_finish, one update), not one
// or more per parameter; without resident parameters the parameters are
// copied back after the same single wait.
func TestExecutorRunStepCounts(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels: the trainer updates on the host")
	}
	for _, name := range []string{"gdlm", "gpt"} {
		for _, resident := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/resident=%v", name, resident), func(t *testing.T) {
				m, err := buildModel(name, tensor.Float32, 9)
				if err != nil {
					t.Fatal(err)
				}
				mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: NewExecutorWith(be, ExecOptions{Logf: func(string, ...any) {}, DeviceGrads: true, ResidentParams: resident})})
				if err != nil {
					t.Fatal(err)
				}
				defer mach.Close()
				x := mach.Executor().(*Exec)
				c0 := x.Counters()
				if err := mach.Run(); err != nil {
					t.Fatal(err)
				}
				run := x.Counters().Sub(c0)
				tr, err := train.NewTrainer(mach, train.Config{Optimizer: "adamw", LR: 0.01, WeightDecay: 0.1, ClipNorm: 1, ParamDtypeMoments: true})
				if err != nil {
					t.Fatal(err)
				}
				for range 2 { // the first step builds the tables
					if _, err := tr.Step(); err != nil {
						t.Fatal(err)
					}
				}
				c1 := x.Counters()
				if _, err := tr.Step(); err != nil {
					t.Fatal(err)
				}
				step := x.Counters().Sub(c1)
				np := len(mach.Params())
				t.Logf("%d parameters; Run: %+v; step: %+v", np, run, step)
				wantDtoH := int64(1)
				if !resident {
					wantDtoH += int64(np)
				}
				if step.Syncs != 1 || step.CopiesDtoH != wantDtoH {
					t.Errorf("step: %d syncs and %d copies back, want 1 and %d", step.Syncs, step.CopiesDtoH, wantDtoH)
				}
				opt := optimiserLaunches(x)
				if step.Launches != run.Launches+opt || step.Gemms != run.Gemms {
					t.Errorf("step: %d launches, %d gemms; Run %d, %d; want %d more launches", step.Launches, step.Gemms, run.Launches, run.Gemms, opt)
				}
				if opt > 4 || opt >= int64(np) {
					t.Errorf("%d optimiser launches for %d parameters", opt, np)
				}
				if resident && step.CopiesHtoD >= run.CopiesHtoD {
					t.Errorf("step uploads %d times, Run %d: parameters uploaded again", step.CopiesHtoD, run.CopiesHtoD)
				}
			})
		}
	}
}

// dryBackend is a Backend that runs nothing: allocations are addresses
// without memory, launches are checked against the kernel table and
// dropped, copies back read zeros. Executors on it queue exactly the work
// they would queue on a device, so the tests count a step's launches and
// waits, and its memory, on graphs too large to run on the emulator.
type dryBackend struct {
	next Ptr
	warp int64 // warp kernels launched
}

func (d *dryBackend) Name() string { return "dry (test)" }
func (d *dryBackend) Alloc(b int64) (Ptr, error) {
	d.next += Ptr(b+255) &^ 255
	return d.next, nil
}
func (d *dryBackend) Free(Ptr) error                            { return nil }
func (d *dryBackend) CopyHtoD(Ptr, unsafe.Pointer, int64) error { return nil }
func (d *dryBackend) CopyDtoH(dst unsafe.Pointer, _ Ptr, n int64) error {
	clear(unsafe.Slice((*byte)(dst), n))
	return nil
}
func (d *dryBackend) CopyDtoD(Ptr, Ptr, int64) error { return nil }
func (d *dryBackend) Zero(Ptr, int64) error          { return nil }
func (d *dryBackend) Launch(name string, n int64, args ...any) error {
	idx, err := lookupKernel(name)
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("negative work-item count %d", n)
	}
	k := &kernelTable[idx]
	if len(args) != len(k.params) {
		return fmt.Errorf("kernel %s takes %d arguments, got %d", name, len(k.params), len(args))
	}
	if k.warp && n > 0 {
		d.warp++
	}
	return nil
}
func (d *dryBackend) Gemm(tensor.Dtype, bool, bool, int, int, int, float64, Ptr, int, int64, Ptr, int, int64, float64, Ptr, int, int64, int) error {
	return nil
}
func (d *dryBackend) Sync() error  { return nil }
func (d *dryBackend) Close() error { return nil }

// TestExecutorPaperStepCounts: on the paper-sized GD LM and GPT (float32,
// the benchmark's AdamW with clipping and float32 moments), a training
// step waits once and copies back once, its optimiser part (statistics,
// guard, update) is a handful of launches for all the parameters, and the
// moments hold 8 bytes per parameter.
//
//	go test ./graph/cuda -run TestExecutorPaperStepCounts -v
func TestExecutorPaperStepCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the paper-sized language models")
	}
	if os.Getenv("GDATTN_FAKE_CUDA") != "" { // a child of the fake driver's tests
		t.Skip("runs no kernels: nothing for the fake driver to check")
	}
	for _, w := range []bench.Workload{bench.LM(bench.ModelGDLM, bench.LMPaper), bench.LM(bench.ModelGPT, bench.LMPaper)} {
		t.Run(w.Name, func(t *testing.T) {
			r, err := bench.NewRunner(w, tensor.Float32, bench.Train, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			kc := countLaunches(&dryBackend{})
			m, err := graph.NewMachine(r.Scope, r.Loss, graph.MachineOptions{Executor: NewExecutorWith(kc, ExecOptions{Logf: func(string, ...any) {}, DeviceGrads: true, ResidentParams: true})})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			x := m.Executor().(*Exec)
			if fb := x.FallbackOps(); len(fb) > 0 {
				t.Fatalf("ops on the host: %v", fb)
			}
			c0 := x.Counters()
			if err := m.Run(); err != nil {
				t.Fatal(err)
			}
			run := x.Counters().Sub(c0)
			// The token embedding's gradient: one scatter_rows launch, in
			// the ids' sorted order (no atomics).
			if kc.n["scatter_rows"] != 1 || kc.n["scatter_cols"] != 0 {
				t.Errorf("Run: %d scatter_rows and %d scatter_cols launches, want 1 and 0", kc.n["scatter_rows"], kc.n["scatter_cols"])
			}
			before := x.DeviceBytes()
			tr, err := train.NewTrainer(m, bench.LMTrainConfig())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Step(); err != nil {
				t.Fatal(err)
			}
			c1 := x.Counters()
			if _, err := tr.Step(); err != nil {
				t.Fatal(err)
			}
			step := x.Counters().Sub(c1)
			params := 0
			for _, p := range m.Params() {
				params += p.Shape().TotalSize()
			}
			opt := optimiserLaunches(x)
			t.Logf("%d parameters (%d elements); Run: %+v; step: %+v; optimiser launches %d; moments %.1f MiB, step state %.1f MiB",
				len(m.Params()), params, run, step, opt, float64(x.MomentBytes())/(1<<20), float64(x.DeviceBytes()-before-x.MomentBytes())/(1<<20))
			if step.Syncs != 1 || step.CopiesDtoH != 1 {
				t.Errorf("step: %d syncs and %d copies back, want 1 and 1", step.Syncs, step.CopiesDtoH)
			}
			// The program's launches (TestFusedChainsPaper's fused counts),
			// then one grad_part_warp (float32 gradients), one
			// grad_join_warp, step_finish and one adam_multi.
			if want := map[string]int64{"language-paper/gdlm": 98, "language-paper/gpt": 63}[w.Name]; run.Launches != want {
				t.Errorf("Run: %d launches, want %d", run.Launches, want)
			}
			if step.Launches != run.Launches+opt || opt != 4 {
				t.Errorf("step: %d launches, Run %d, optimiser %d, want 4", step.Launches, run.Launches, opt)
			}
			// Uploads of a step: the inputs (ids, labels; the parameters
			// are resident), the order of each scatter's ids (one
			// scatter_rows: the token embedding's gradient), the
			// cross-entropy gradient's 1/(scored rows) and the update's
			// per-step numbers.
			inputs, orders, scales := 0, 0, 0
			for _, v := range x.vals {
				if v.kind == kindInput && !x.params[v] {
					inputs++
				}
				switch v.dev.(type) {
				case *scatterOrder:
					orders++
				case *xentScale:
					scales++
				}
			}
			if orders != 1 || scales != 1 || step.CopiesHtoD != int64(inputs+orders+scales+1) {
				t.Errorf("step: %d uploads for %d inputs, %d scatter orders and %d cross-entropy scales, want 1, 1 and %d uploads",
					step.CopiesHtoD, inputs, orders, scales, inputs+orders+scales+1)
			}
			if got := x.MomentBytes(); got != int64(params)*8 {
				t.Errorf("moments hold %d device bytes, want %d (float32)", got, params*8)
			}
		})
	}
}

// statTree is the device's statistics of the gradient g (kernels/gradstats.cu)
// evaluated directly in its order: statWarps(len(g)) warps, warp w's lane l
// summing g_j² (each product rounded) and counting the non-finite g_j over
// j = 32b + l for the blocks b ≡ w (mod warps) in order, the lanes joined by
// the butterfly; with join, one more warp whose lane l sums the parts
// l, l+32, ... in order, joined by the butterfly.
func statTree(g []float64, join bool) (sumSq, bad float64) {
	butterfly := func(p *[32]float64) float64 {
		for o := 16; o > 0; o >>= 1 {
			q := *p
			for l := range p {
				p[l] = q[l] + q[l^o]
			}
		}
		return p[0]
	}
	warps := statWarps(len(g))
	var ps, pb []float64
	for w := range warps {
		var s, b [32]float64
		for l := range 32 {
			for j := 32*w + l; j < len(g); j += 32 * warps {
				if v := g[j]; math.IsInf(v, 0) || math.IsNaN(v) {
					b[l]++
				} else {
					s[l] += float64(v * v)
				}
			}
		}
		ps, pb = append(ps, butterfly(&s)), append(pb, butterfly(&b))
	}
	if !join {
		return ps[0], pb[0]
	}
	var s, b [32]float64
	for c := range ps {
		s[c%32] += ps[c]
		b[c%32] += pb[c]
	}
	return butterfly(&s), butterfly(&b)
}

// TestExecutorStatsMulti: the statistics of several gradients of different
// sizes, computed in one launch per dtype and one join, are each the
// host's, and bit for bit the device's order evaluated directly (statTree).
func TestExecutorStatsMulti(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels: the statistics are the host's")
	}
	sizes := []int{1, 17, 70001, 64, 1000, 300007, 2}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			s, err := graph.NewScope(dt, 1)
			if err != nil {
				t.Fatal(err)
			}
			var loss *G.Node
			want := make([]float64, len(sizes))
			bad := make([]int, len(sizes))
			gs := make([][]float64, len(sizes))
			for k, n := range sizes {
				w, err := s.Param(fmt.Sprintf("w%d", k), tensor.Shape{n}, graph.Constant(0.5))
				if err != nil {
					t.Fatal(err)
				}
				x, err := s.Input(fmt.Sprintf("x%d", k), tensor.Shape{n})
				if err != nil {
					t.Fatal(err)
				}
				xs := make([]float64, n)
				gs[k] = xs
				for i := range xs {
					xs[i] = float64((i+k)%7) - 2.5 + float64(i%1013)/1013
					if dt == tensor.Float32 {
						xs[i] = float64(float32(xs[i]))
					}
					if k%2 == 1 && i == n/2 {
						xs[i] = math.Inf(1)
						bad[k]++
						continue
					}
					want[k] += xs[i] * xs[i]
				}
				if err := graph.SetValue(x, xs); err != nil {
					t.Fatal(err)
				}
				term := G.Must(G.Sum(G.Must(G.HadamardProd(w, x))))
				if loss == nil {
					loss = term
				} else {
					loss = G.Must(G.Add(loss, term))
				}
			}
			mach, err := graph.NewMachine(s, loss, graph.MachineOptions{Executor: NewExecutorWith(be, ExecOptions{Logf: func(string, ...any) {}, DeviceGrads: true})})
			if err != nil {
				t.Fatal(err)
			}
			defer mach.Close()
			if err := mach.Run(); err != nil {
				t.Fatal(err)
			}
			st, ok, err := mach.Executor().(*Exec).GradStats()
			if err != nil || !ok || len(st) != len(sizes) {
				t.Fatalf("GradStats: %v, %v, %v", st, ok, err)
			}
			join := mach.Executor().(*Exec).upd.stat.join
			if !join {
				t.Fatal("no gradient has several parts: the join is not tested")
			}
			for k := range sizes {
				if st[k].NonFinite != bad[k] || math.Abs(st[k].SumSq-want[k]) > 1e-10*want[k] {
					t.Errorf("gradient %d (size %d): sum of squares %v, %d non-finite; want %v, %d", k, sizes[k], st[k].SumSq, st[k].NonFinite, want[k], bad[k])
				}
				if s, b := statTree(gs[k], join); math.Float64bits(st[k].SumSq) != math.Float64bits(s) || float64(st[k].NonFinite) != b {
					t.Errorf("gradient %d (size %d): sum of squares %v, %d non-finite; in the device's order %v, %v", k, sizes[k], st[k].SumSq, st[k].NonFinite, s, b)
				}
			}
		})
	}
}

// TestExecutorRunStepSkips: when the loss is NaN the device skips the
// update (parameters and moments untouched) and the trainer reports the
// host path's error; the next valid step updates.
func TestExecutorRunStepSkips(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels: the trainer updates on the host")
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			s, err := graph.NewScope(dt, 1)
			if err != nil {
				t.Fatal(err)
			}
			w, err := s.Param("w", tensor.Shape{3}, graph.FromValues([]float64{1, 2, 4}))
			if err != nil {
				t.Fatal(err)
			}
			x, err := s.Input("x", tensor.Shape{3})
			if err != nil {
				t.Fatal(err)
			}
			loss := G.Must(G.Sum(G.Must(G.HadamardProd(G.Must(G.Square(w)), x))))
			mach, err := graph.NewMachine(s, loss, graph.MachineOptions{Executor: NewExecutorWith(be, ExecOptions{Logf: func(string, ...any) {}, DeviceGrads: true, ResidentParams: true})})
			if err != nil {
				t.Fatal(err)
			}
			defer mach.Close()
			tr, err := train.NewTrainer(mach, train.Config{LR: 0.1, ClipNorm: 1, ParamDtypeMoments: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := graph.SetValue(x, []float64{1, math.NaN(), 1}); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Step(); err == nil || !strings.Contains(err.Error(), "loss is NaN; parameters not updated") {
				t.Fatalf("step with a NaN loss: %v", err)
			}
			st, err := tr.State()
			if err != nil {
				t.Fatal(err)
			}
			if v, _ := graph.Values(w); v[0] != 1 || v[1] != 2 || v[2] != 4 || st.Step != 0 || st.M["w"][0] != 0 || st.V["w"][2] != 0 {
				t.Fatalf("after a skipped step: parameters %v, state %+v", v, st)
			}
			if err := graph.SetValue(x, []float64{1, 1, 1}); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Step(); err != nil {
				t.Fatal(err)
			}
			if err := tr.SyncParams(); err != nil {
				t.Fatal(err)
			}
			// Gradient 2w = (2, 4, 8), norm sqrt(84) > 1: clipped, so the
			// first Adam step moves each weight by the learning rate.
			v, _ := graph.Values(w)
			for i, w0 := range []float64{1, 2, 4} {
				if math.Abs(v[i]-(w0-0.1)) > 1e-5 {
					t.Errorf("w[%d] = %v after one step, want %v", i, v[i], w0-0.1)
				}
			}
		})
	}
}

// TestExecutorFloat32MomentsState: float32 device moments round-trip
// through the trainer's float64 state (rewinding to a saved state and
// stepping again gives the same step, bit for bit on the serial emulator),
// and switching the
// precision of existing moments converts them (rounded to float32, half
// the device bytes).
func TestExecutorFloat32MomentsState(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels: the trainer updates on the host")
	}
	cfg := train.Config{Optimizer: "adamw", LR: 0.05, WeightDecay: 0.1, ClipNorm: 0.5, ParamDtypeMoments: true}
	m, err := buildModel("gpt", tensor.Float32, 9)
	if err != nil {
		t.Fatal(err)
	}
	mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: NewExecutorWith(be, ExecOptions{Logf: func(string, ...any) {}, DeviceGrads: true, ResidentParams: true})})
	if err != nil {
		t.Fatal(err)
	}
	defer mach.Close()
	tr, err := train.NewTrainer(mach, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := tr.Step(); err != nil {
			t.Fatal(err)
		}
	}
	st, err := tr.State()
	if err != nil {
		t.Fatal(err)
	}
	params := map[string][]float64{}
	for _, p := range mach.Params() {
		params[p.Name()], _ = graph.Values(p)
	}
	step3 := func() (float64, train.State) {
		l, err := tr.Step()
		if err != nil {
			t.Fatal(err)
		}
		s, err := tr.State()
		if err != nil {
			t.Fatal(err)
		}
		return l, s
	}
	l3, st3 := step3()
	for _, p := range mach.Params() {
		if err := graph.SetValue(p, params[p.Name()]); err != nil {
			t.Fatal(err)
		}
	}
	mach.Executor().(*Exec).InvalidateParams()
	if err := tr.SetState(st); err != nil {
		t.Fatal(err)
	}
	again, st3b := step3()
	tol := 0.0 // the serial emulator's gradients are the same in every run
	if !strings.HasPrefix(be.Name(), "emulator") {
		tol = execTol(tensor.Float32)
	}
	if relDiff([]float64{again}, []float64{l3}) > tol {
		t.Errorf("loss after rewinding %v, first time %v", again, l3)
	}
	for n, m := range st3.M {
		if d := relDiff(st3b.M[n], m); d > tol {
			t.Errorf("first moment of %q differs by %.3g after rewinding", n, d)
		}
		if d := relDiff(st3b.V[n], st3.V[n]); d > tol {
			t.Errorf("second moment of %q differs by %.3g after rewinding", n, d)
		}
	}
	// Switch existing moments to float64 and back.
	x := mach.Executor().(*Exec)
	b32, m32 := x.DeviceBytes(), x.MomentBytes()
	if err := x.SetParamDtypeMoments(false); err != nil {
		t.Fatal(err)
	}
	if x.MomentBytes() != 2*m32 || x.DeviceBytes() != b32+m32 {
		t.Errorf("float64 moments: %d bytes (device %d), float32 ones %d (device %d)", x.MomentBytes(), x.DeviceBytes(), m32, b32)
	}
	if err := x.SetParamDtypeMoments(true); err != nil {
		t.Fatal(err)
	}
	if x.MomentBytes() != m32 || x.DeviceBytes() != b32 {
		t.Errorf("back to float32 moments: %d bytes (device %d), want %d (%d)", x.MomentBytes(), x.DeviceBytes(), m32, b32)
	}
	st4, err := tr.State()
	if err != nil {
		t.Fatal(err)
	}
	for n, m := range st3b.M {
		if d := relDiff(st4.M[n], m); d != 0 {
			t.Errorf("first moment of %q changed by %.3g through float64 and back", n, d)
		}
	}
}
