package train

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
)

// fakeExec runs a machine's program with a TapeMachine on the same graph,
// as an executor would.
type fakeExec struct {
	p    *graph.Program
	vm   G.VM
	runs int
}

func (f *fakeExec) Run() error {
	f.runs++
	if f.runs > 1 {
		f.vm.Reset()
		// The tape machine accumulates into the dual values: an executor
		// leaves this run's gradients only.
		for _, p := range f.p.Params {
			if gv, err := p.Grad(); err == nil {
				switch v := gv.(type) {
				case tensor.Tensor:
					v.Zero()
				case *G.F64:
					*v = 0
				case *G.F32:
					*v = 0
				}
			}
		}
	}
	return f.vm.RunAll()
}

func (f *fakeExec) Close() error { return f.vm.Close() }

// hostUpdater is a DeviceUpdater whose "device" is the host: it runs the
// program with a TapeMachine and applies AdamUpdate with its own moments, as
// a device executor would, so the Trainer's protocol is tested without one.
// With resident, it keeps its own copy of the parameters (the "device"
// values): updates change only that copy, every Run computes with it, and
// the parameters' host values stay stale until SyncParams, as graph/cuda's
// ExecOptions.ResidentParams does.
type hostUpdater struct {
	fakeExec
	mom, vel [][]float64
	updates  []graph.AdamUpdate
	resident bool
	dev      [][]float64 // resident parameter values
	syncs    int
	syncErr  error // returned by SyncParams when set
}

func newHostUpdater(p *graph.Program, resident bool) (*hostUpdater, error) {
	h := &hostUpdater{fakeExec: fakeExec{p: p, vm: G.NewTapeMachine(p.Graph, G.BindDualValues(p.Params...))}, resident: resident}
	for _, q := range p.Params {
		h.mom = append(h.mom, make([]float64, q.Shape().TotalSize()))
		h.vel = append(h.vel, make([]float64, q.Shape().TotalSize()))
		if resident {
			v, err := graph.Values(q)
			if err != nil {
				return nil, err
			}
			h.dev = append(h.dev, v)
		}
	}
	return h, nil
}

func (h *hostUpdater) UpdatesOnDevice() bool { return true }

// Run computes with the device values when resident, leaving the host
// values as they were.
func (h *hostUpdater) Run() error {
	if !h.resident {
		return h.fakeExec.Run()
	}
	stale := make([][]float64, len(h.p.Params))
	for i, q := range h.p.Params {
		var err error
		if stale[i], err = graph.Values(q); err != nil {
			return err
		}
		if err := graph.SetValue(q, h.dev[i]); err != nil {
			return err
		}
	}
	err := h.fakeExec.Run()
	for i, q := range h.p.Params {
		if serr := graph.SetValue(q, stale[i]); err == nil {
			err = serr
		}
	}
	return err
}

func (h *hostUpdater) AdamUpdate(u graph.AdamUpdate) error {
	h.updates = append(h.updates, u)
	for i, p := range h.p.Params {
		gv, err := p.Grad()
		if err != nil {
			return err
		}
		g := make([]float64, p.Shape().TotalSize())
		if err := readInto(g, gv); err != nil {
			return err
		}
		for j := range g {
			g[j] *= u.GradScale
		}
		hy := adamHyper{lr: u.LR, beta1: u.Beta1, beta2: u.Beta2, eps: u.Eps, bc1: u.BC1, bc2: u.BC2, wd: u.WeightDecay[i], decoupled: u.Decoupled}
		if h.resident {
			adamUpdate(h.dev[i], g, h.mom[i], h.vel[i], hy)
			continue
		}
		f32, f64, err := valueView(p.Value())
		if err != nil {
			return err
		}
		if f64 != nil {
			adamUpdate(f64, g, h.mom[i], h.vel[i], hy)
		} else {
			adamUpdate(f32, g, h.mom[i], h.vel[i], hy)
		}
	}
	return nil
}

func (h *hostUpdater) SyncParams() error {
	h.syncs++
	if h.syncErr != nil {
		return h.syncErr
	}
	if !h.resident {
		return nil
	}
	for i, q := range h.p.Params {
		if err := graph.SetValue(q, h.dev[i]); err != nil {
			return err
		}
	}
	return nil
}

func (h *hostUpdater) GradStats() ([]graph.GradStat, bool, error) { return nil, false, nil }

// NonFiniteParams checks the resident copies (graph.ParamChecker); without
// them the host values are current (ok false).
func (h *hostUpdater) NonFiniteParams() ([]int, bool, error) {
	if !h.resident {
		return nil, false, nil
	}
	counts := make([]int, len(h.dev))
	for i, d := range h.dev {
		for _, x := range d {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				counts[i]++
			}
		}
	}
	return counts, true, nil
}

func (h *hostUpdater) Moments(i int, m, v []float64) error {
	copy(m, h.mom[i])
	copy(v, h.vel[i])
	return nil
}

func (h *hostUpdater) SetMoments(i int, m, v []float64) error {
	copy(h.mom[i], m)
	copy(h.vel[i], v)
	return nil
}

// mustState is tr.State() for tests.
func mustState(tr *Trainer) State { return must(tr.State()) }

// TestTrainerDeviceUpdater: a Trainer on a machine whose executor is a
// DeviceUpdater hands it the update (with the clipping factor, the bias
// corrections and per-parameter decay) and its moments, and trains exactly
// as the host update does; HostOptimizer opts out.
func TestTrainerDeviceUpdater(t *testing.T) {
	cfg := Config{Optimizer: "adamw", LR: 0.1, WeightDecay: 0.3, ClipNorm: 0.5,
		Decay: func(name string, _ tensor.Shape) bool { return name == "w" }}
	train := func(device bool, hostOpt bool) (*Trainer, *linModel, *hostUpdater) {
		m := newLinModel(t, graph.Float64)
		var hu *hostUpdater
		opts := graph.MachineOptions{}
		if device {
			opts.Executor = func(p *graph.Program) (graph.Executor, error) {
				var err error
				hu, err = newHostUpdater(p, false)
				return hu, err
			}
		}
		mach := must(graph.NewMachine(m.s, m.loss, opts))
		t.Cleanup(func() { mach.Close() })
		c := cfg
		c.HostOptimizer = hostOpt
		tr := must(NewTrainer(mach, c))
		if err := graph.SetValue(m.x, []float64{1, 2, 3, 4, 5, 6}); err != nil {
			t.Fatal(err)
		}
		if err := graph.SetValue(m.y, []float64{0, 1, 1, 0}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if _, err := tr.Step(); err != nil {
				t.Fatal(err)
			}
		}
		return tr, m, hu
	}
	host, hm, _ := train(false, false)
	dev, dm, hu := train(true, false)
	if !dev.OnDevice() || host.OnDevice() {
		t.Fatalf("OnDevice: device trainer %v, host trainer %v", dev.OnDevice(), host.OnDevice())
	}
	if len(hu.updates) != 3 {
		t.Fatalf("%d device updates, want 3", len(hu.updates))
	}
	u := hu.updates[2]
	if u.BC1 != 1-math.Pow(0.9, 3) || u.BC2 != 1-math.Pow(0.999, 3) || !u.Decoupled || u.LR != 0.1 {
		t.Errorf("third update %+v", u)
	}
	// Parameters: a then w (Scope order); only w decays.
	names := []string{hu.p.Params[0].Name(), hu.p.Params[1].Name()}
	for i, n := range names {
		want := 0.0
		if n == "w" {
			want = 0.3
		}
		if u.WeightDecay[i] != want {
			t.Errorf("weight decay of %q: %v, want %v", n, u.WeightDecay[i], want)
		}
	}
	if !(hu.updates[0].GradScale < 1) {
		t.Errorf("first update GradScale %v: the gradients (norm > 0.5) should be clipped", hu.updates[0].GradScale)
	}
	for _, pair := range [][2]*G.Node{{hm.w, dm.w}, {hm.a, dm.a}} {
		if diff := cmp.Diff(must(graph.Values(pair[0])), must(graph.Values(pair[1])), approx(1e-14)); diff != "" {
			t.Errorf("%s after 3 steps (-host +device):\n%s", pair[0].Name(), diff)
		}
	}
	if diff := cmp.Diff(mustState(host), mustState(dev), approx(1e-14)); diff != "" {
		t.Errorf("state (-host +device):\n%s", diff)
	}
	// SetState reaches the device moments.
	st := mustState(dev)
	for k := range st.M {
		for j := range st.M[k] {
			st.M[k][j] = 7
		}
	}
	if err := dev.SetState(st); err != nil {
		t.Fatal(err)
	}
	if hu.mom[0][0] != 7 {
		t.Errorf("device moment after SetState: %v, want 7", hu.mom[0][0])
	}
	opt, _, _ := train(true, true)
	if opt.OnDevice() {
		t.Error("HostOptimizer trainer updates on the device")
	}
}

// guardTrainer returns a trainer of the linear model on a hostUpdater
// (parameters resident on its "device" or not) that made one update, and
// the learning rate its schedule reads.
func guardTrainer(t *testing.T, resident bool) (*Trainer, *linModel, *float64) {
	m := newLinModel(t, graph.Float64)
	mach := must(graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: func(p *graph.Program) (graph.Executor, error) {
		return newHostUpdater(p, resident)
	}}))
	t.Cleanup(func() { mach.Close() })
	lr := 0.01
	tr := must(NewTrainer(mach, Config{Schedule: func(int) float64 { return lr }}))
	must(0, graph.SetValue(m.x, []float64{1, 2, 3, 4, 5, 6}))
	must(0, graph.SetValue(m.y, []float64{0, 1, 1, 0}))
	must(tr.Step())
	return tr, m, &lr
}

// checkGuard makes an update that writes non-finite values and checks that
// the error names step 2 and that the next step repeats it.
func checkGuard(t *testing.T, tr *Trainer, lr *float64) {
	t.Helper()
	*lr = 1e308
	_, err := tr.Step()
	if err == nil || !strings.Contains(err.Error(), "step 2") || !strings.Contains(err.Error(), "non-finite") {
		t.Fatalf("got %v, want an error naming step 2 and non-finite values", err)
	}
	if _, err2 := tr.Step(); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("the next step: got %v, want the same error", err2)
	}
}

// TestDeviceUpdateGuardResident: with the parameters kept on the device,
// the non-finite values the update wrote there (not in the stale host
// values) are found and reported, and the trainer refuses to go on.
func TestDeviceUpdateGuardResident(t *testing.T) {
	tr, _, lr := guardTrainer(t, true)
	checkGuard(t, tr, lr)
}

// TestDeviceUpdateGuard: a device update that writes non-finite values into
// a parameter is reported naming the step and the parameter, and the
// trainer refuses to go on (the device moments cannot be rolled back) until
// a state is restored.
func TestDeviceUpdateGuard(t *testing.T) {
	tr, m, lr := guardTrainer(t, false)
	good := mustState(tr)
	checkGuard(t, tr, lr)
	*lr = 0.01
	if err := tr.SetState(good); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*G.Node{m.w, m.a} {
		if err := graph.SetValue(p, []float64{0.5, 0.5, 0.5, 0.5, 0.5, 0.5}[:p.Shape().TotalSize()]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tr.Step(); err != nil {
		t.Errorf("after restoring a state: %v", err)
	}
}
