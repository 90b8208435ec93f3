package cuda

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/train"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// trainSteps builds model name, trains it for steps updates with cfg (on
// the executor when factory is non-nil) and returns the losses, the final
// parameters by name and the trainer's state.
func trainSteps(t *testing.T, name string, dt tensor.Dtype, factory graph.ExecutorFactory, cfg train.Config, steps int, wantDevice bool) ([]float64, map[string][]float64, train.State) {
	t.Helper()
	m, err := buildModel(name, dt, 9)
	if err != nil {
		t.Fatal(err)
	}
	mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: factory})
	if err != nil {
		t.Fatal(err)
	}
	defer mach.Close()
	tr, err := train.NewTrainer(mach, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tr.OnDevice() != wantDevice {
		t.Fatalf("trainer on device: %v, want %v", tr.OnDevice(), wantDevice)
	}
	var losses []float64
	for i := 0; i < steps; i++ {
		l, err := tr.Step()
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, l)
	}
	params := map[string][]float64{}
	for _, p := range mach.Params() {
		v, err := graph.Values(p)
		if err != nil {
			t.Fatal(err)
		}
		params[p.Name()] = v
	}
	st, err := tr.State()
	if err != nil {
		t.Fatal(err)
	}
	return losses, params, st
}

// TestExecutorTrainerMatchesHost trains models for a few Adam/AdamW steps
// (weight decay, clipping) three ways: the TapeMachine with host updates,
// the executor with host updates (Config.HostOptimizer) and the
// executor with device updates (host updates too without device kernels).
// In float64 all three agree within 1e-10 (losses, parameters, moments). In
// float32 the executor's gradients differ from the TapeMachine's by
// rounding, which Adam's normalisation amplifies where a gradient is near
// zero, so the device update is compared with the host update on the same
// executor (1e-4), and the TapeMachine's losses within 1e-3; float32 runs
// use Eps = 1e-3 so that the sign of a gradient component at the rounding
// level (some host ops sum in parallel, in no fixed order) cannot flip a
// whole learning-rate step.
func TestExecutorTrainerMatchesHost(t *testing.T) {
	be, device := execBackend(t)
	cfgs := map[string]train.Config{
		"adam-l2":    {Optimizer: "adam", LR: 0.05, WeightDecay: 0.1},
		"adamw-clip": {Optimizer: "adamw", LR: 0.05, WeightDecay: 0.1, ClipNorm: 0.05},
	}
	for _, name := range []string{"gd-structured-softmax", "tf-cross", "gpt"} {
		for cname, cfg := range cfgs {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				t.Run(fmt.Sprintf("%s/%s/%v", name, cname, dt), func(t *testing.T) {
					const steps = 4
					if dt == tensor.Float32 {
						cfg.Eps = 1e-3
					}
					f := NewExecutorWith(be, ExecOptions{HostOnly: !device, Logf: func(string, ...any) {}})
					tl, _, _ := trainSteps(t, name, dt, nil, cfg, steps, false)
					hcfg := cfg
					hcfg.HostOptimizer = true
					wl, wp, ws := trainSteps(t, name, dt, f, hcfg, steps, false)
					gl, gp, gs := trainSteps(t, name, dt, f, cfg, steps, device)
					tol := execTol(dt)
					if dt == tensor.Float32 {
						tol = 1e-4
					}
					if d := relDiff(gl, wl); d > tol {
						t.Errorf("losses %v, host update %v", gl, wl)
					}
					ttol := tol
					if dt == tensor.Float32 {
						ttol = 1e-3
					}
					if d := relDiff(gl, tl); d > ttol {
						t.Errorf("losses %v, TapeMachine %v", gl, tl)
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
					}
				})
			}
		}
	}
}

// TestExecutorTrainerSetState: moments restored with SetState reach the
// device, so a trainer resumed from a state continues as the original.
func TestExecutorTrainerSetState(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels: the trainer updates on the host")
	}
	cfg := train.Config{Optimizer: "adamw", LR: 0.05, WeightDecay: 0.1}
	m, err := buildModel("tf", tensor.Float64, 9)
	if err != nil {
		t.Fatal(err)
	}
	mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: NewExecutorWith(be, ExecOptions{Logf: func(string, ...any) {}})})
	if err != nil {
		t.Fatal(err)
	}
	defer mach.Close()
	tr, err := train.NewTrainer(mach, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
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
	l3, err := tr.Step()
	if err != nil {
		t.Fatal(err)
	}
	// Rewind: parameters and state back to after step 2, step again.
	for _, p := range mach.Params() {
		if err := graph.SetValue(p, params[p.Name()]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.SetState(st); err != nil {
		t.Fatal(err)
	}
	again, err := tr.Step()
	if err != nil {
		t.Fatal(err)
	}
	if again != l3 {
		t.Errorf("loss after rewinding %v, first time %v", again, l3)
	}
	st2, err := tr.State()
	if err != nil {
		t.Fatal(err)
	}
	if st2.Step != 3 {
		t.Errorf("step %d after rewinding and stepping, want 3", st2.Step)
	}
}

// TestExecutorResidentParams: with ExecOptions.ResidentParams a device
// trainer leaves the parameters on the device (host values stale until
// SyncParams), trains exactly as with the host copies refreshed every step,
// and InvalidateParams makes a host write reach the device.
func TestExecutorResidentParams(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels: the trainer updates on the host")
	}
	cfg := train.Config{Optimizer: "adamw", LR: 0.05, WeightDecay: 0.1}
	const steps = 3
	quiet := func(string, ...any) {}
	wl, wp, _ := trainSteps(t, "tf-cross", tensor.Float64, NewExecutorWith(be, ExecOptions{Logf: quiet}), cfg, steps, true)

	m, err := buildModel("tf-cross", tensor.Float64, 9)
	if err != nil {
		t.Fatal(err)
	}
	mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: NewExecutorWith(be, ExecOptions{Logf: quiet, ResidentParams: true})})
	if err != nil {
		t.Fatal(err)
	}
	defer mach.Close()
	tr, err := train.NewTrainer(mach, cfg)
	if err != nil {
		t.Fatal(err)
	}
	initial := map[string][]float64{}
	for _, p := range mach.Params() {
		initial[p.Name()], _ = graph.Values(p)
	}
	var losses []float64
	for i := 0; i < steps; i++ {
		l, err := tr.Step()
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, l)
	}
	if d := relDiff(losses, wl); d > 1e-12 {
		t.Errorf("losses %v, with host copies %v", losses, wl)
	}
	for _, p := range mach.Params() {
		v, _ := graph.Values(p)
		if relDiff(v, initial[p.Name()]) != 0 {
			t.Errorf("host value of %q changed before SyncParams", p.Name())
		}
	}
	if err := tr.SyncParams(); err != nil {
		t.Fatal(err)
	}
	for _, p := range mach.Params() {
		v, _ := graph.Values(p)
		if d := relDiff(v, wp[p.Name()]); d > 1e-12 {
			t.Errorf("%q after SyncParams differs by %.3g", p.Name(), d)
		}
	}
	// A host write is seen only after InvalidateParams.
	x := mach.Executor().(*Exec)
	for _, p := range mach.Params() {
		if err := graph.SetValue(p, initial[p.Name()]); err != nil {
			t.Fatal(err)
		}
	}
	if err := mach.Run(); err != nil {
		t.Fatal(err)
	}
	stale, _ := graph.Scalar(m.loss)
	x.InvalidateParams()
	if err := mach.Run(); err != nil {
		t.Fatal(err)
	}
	fresh, _ := graph.Scalar(m.loss)
	if fresh != wl[0] || stale == fresh {
		t.Errorf("loss at the initial parameters %v (before InvalidateParams %v), want %v", fresh, stale, wl[0])
	}
}

// TestExecutorDeviceGrads: with ExecOptions.DeviceGrads (and
// ResidentParams) a device trainer never copies gradients or parameters to
// the host and trains exactly as with host copies (clipping included, from
// the device's gradient norms); SyncGrads makes the gradients readable.
func TestExecutorDeviceGrads(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels: the trainer updates on the host")
	}
	quiet := func(string, ...any) {}
	cfg := train.Config{Optimizer: "adamw", LR: 0.05, WeightDecay: 0.1, ClipNorm: 0.05}
	const steps = 3
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		wl, wp, ws := trainSteps(t, "gpt", dt, NewExecutorWith(be, ExecOptions{Logf: quiet}), cfg, steps, true)
		m, err := buildModel("gpt", dt, 9)
		if err != nil {
			t.Fatal(err)
		}
		mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Outputs: m.outputs, Executor: NewExecutorWith(be, ExecOptions{Logf: quiet, ResidentParams: true, DeviceGrads: true})})
		if err != nil {
			t.Fatal(err)
		}
		defer mach.Close()
		tr, err := train.NewTrainer(mach, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var losses []float64
		for i := 0; i < steps; i++ {
			l, err := tr.Step()
			if err != nil {
				t.Fatal(err)
			}
			losses = append(losses, l)
		}
		tol := execTol(dt)
		if dt == tensor.Float32 {
			tol = 1e-5 // the clipping norm is summed in another order
		}
		if d := relDiff(losses, wl); d > tol {
			t.Errorf("%v: losses %v, with host copies %v", dt, losses, wl)
		}
		if err := tr.SyncParams(); err != nil {
			t.Fatal(err)
		}
		st, err := tr.State()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range mach.Params() {
			v, _ := graph.Values(p)
			if d := relDiff(v, wp[p.Name()]); d > tol {
				t.Errorf("%v: %q differs by %.3g", dt, p.Name(), d)
			}
			if d := relDiff(st.M[p.Name()], ws.M[p.Name()]); d > tol {
				t.Errorf("%v: first moment of %q differs by %.3g", dt, p.Name(), d)
			}
		}
		// Gradients: readable after SyncGrads, equal to a plain run's.
		x := mach.Executor().(*Exec)
		x.InvalidateParams()
		if err := mach.Run(); err != nil {
			t.Fatal(err)
		}
		if err := x.SyncGrads(); err != nil {
			t.Fatal(err)
		}
		got := takeSnapshot(t, m, mach)
		plain, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Outputs: m.outputs, Executor: NewExecutorWith(be, ExecOptions{Logf: quiet})})
		if err != nil {
			t.Fatal(err)
		}
		defer plain.Close()
		if err := plain.Run(); err != nil {
			t.Fatal(err)
		}
		compareSnapshots(t, got, takeSnapshot(t, m, plain), execTol(dt))
	}
}

// TestExecutorDeviceGradsGuard: the NaN/Inf guard works on device
// statistics: d sqrt(w)/dw is +Inf at w = 0 while the loss is finite.
func TestExecutorDeviceGradsGuard(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels: the trainer updates on the host")
	}
	s, err := graph.NewScope(tensor.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Param("w", tensor.Shape{3}, graph.FromValues([]float64{1, 0, 4}))
	if err != nil {
		t.Fatal(err)
	}
	loss := G.Must(G.Sum(G.Must(G.Sqrt(w))))
	mach, err := graph.NewMachine(s, loss, graph.MachineOptions{Executor: NewExecutorWith(be, ExecOptions{Logf: func(string, ...any) {}, DeviceGrads: true})})
	if err != nil {
		t.Fatal(err)
	}
	defer mach.Close()
	tr, err := train.NewTrainer(mach, train.Config{LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := tr.Step()
	if err == nil || !strings.Contains(err.Error(), `gradient of "w" has 1 NaN/Inf elements`) {
		t.Fatalf("step: loss %v, error %v; want the NaN/Inf guard", l, err)
	}
	if v, _ := graph.Values(w); v[0] != 1 || v[1] != 0 || v[2] != 4 {
		t.Errorf("parameters changed to %v", v)
	}
}

// TestExecutorStats: the device's gradient statistics (sum of squares of
// the finite elements, count of the others) equal the host's for sizes
// of one part (no join) and of several (up to statMaxWarps, 64 parts per
// join lane), float64 and float32.
func TestExecutorStats(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels: the statistics are the host's")
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, n := range []int{1, 17, 1000, 70001, 5000003} {
			t.Run(fmt.Sprintf("%v/%d", dt, n), func(t *testing.T) {
				s, err := graph.NewScope(dt, 1)
				if err != nil {
					t.Fatal(err)
				}
				w, err := s.Param("w", tensor.Shape{n}, graph.Constant(0.5))
				if err != nil {
					t.Fatal(err)
				}
				x, err := s.Input("x", tensor.Shape{n})
				if err != nil {
					t.Fatal(err)
				}
				loss := G.Must(G.Sum(G.Must(G.HadamardProd(w, x))))
				xs := make([]float64, n)
				want, bad := 0.0, 0
				for i := range xs {
					xs[i] = float64(i%7) - 2.5 + float64(i%1013)/1013
					if dt == tensor.Float32 {
						xs[i] = float64(float32(xs[i]))
					}
					if n > 1 && (i == n/3 || i == n-1) {
						xs[i] = math.Inf(1 - 2*(i%2))
						if i == n-1 {
							xs[i] = math.NaN()
						}
						bad++
						continue
					}
					want += xs[i] * xs[i]
				}
				if err := graph.SetValue(x, xs); err != nil {
					t.Fatal(err)
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
				if err != nil || !ok || len(st) != 1 {
					t.Fatalf("GradStats: %v, %v, %v", st, ok, err)
				}
				if st[0].NonFinite != bad || math.Abs(st[0].SumSq-want) > 1e-10*want {
					t.Errorf("got sum of squares %v, %d non-finite; want %v, %d", st[0].SumSq, st[0].NonFinite, want, bad)
				}
			})
		}
	}
}

// TestExecutorResidentUpdateGuard: with resident parameters, an update
// that writes non-finite values on the device is found there (the update
// kernel counts them) and the trainer stops, naming the parameter.
func TestExecutorResidentUpdateGuard(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels: the trainer updates on the host")
	}
	s, err := graph.NewScope(tensor.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Param("w", tensor.Shape{3}, graph.FromValues([]float64{1, 2, 4}))
	if err != nil {
		t.Fatal(err)
	}
	loss := G.Must(G.Sum(G.Must(G.Square(w))))
	mach, err := graph.NewMachine(s, loss, graph.MachineOptions{Executor: NewExecutorWith(be, ExecOptions{Logf: func(string, ...any) {}, DeviceGrads: true, ResidentParams: true})})
	if err != nil {
		t.Fatal(err)
	}
	defer mach.Close()
	lr := 0.1
	tr, err := train.NewTrainer(mach, train.Config{Schedule: func(int) float64 { return lr }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Step(); err != nil {
		t.Fatal(err)
	}
	counts, ok, err := mach.Executor().(*Exec).NonFiniteParams()
	if err != nil || !ok || len(counts) != 1 || counts[0] != 0 {
		t.Fatalf("after a finite update: %v, %v, %v", counts, ok, err)
	}
	lr = 1e308
	if _, err := tr.Step(); err == nil || !strings.Contains(err.Error(), `made 3 elements of "w" non-finite`) {
		t.Fatalf("step 2: %v; want the update guard", err)
	}
}
