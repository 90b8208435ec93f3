package graph

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// hostUpdater is a DeviceUpdater whose "device" is the host: it runs the
// program with a TapeMachine and applies AdamUpdate with its own moments, as
// a device executor would, so the Trainer's protocol is tested without one.
type hostUpdater struct {
	fakeExec
	mom, vel [][]float64
	updates  []AdamUpdate
}

func (h *hostUpdater) UpdatesOnDevice() bool { return true }

func (h *hostUpdater) AdamUpdate(u AdamUpdate) error {
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
		f32, f64, err := valueView(p.Value())
		if err != nil {
			return err
		}
		hy := adamHyper{lr: u.LR, beta1: u.Beta1, beta2: u.Beta2, eps: u.Eps, bc1: u.BC1, bc2: u.BC2, wd: u.WeightDecay[i], decoupled: u.Decoupled}
		if f64 != nil {
			adamUpdate(f64, g, h.mom[i], h.vel[i], hy)
		} else {
			adamUpdate(f32, g, h.mom[i], h.vel[i], hy)
		}
	}
	return nil
}

func (h *hostUpdater) SyncParams() error { return nil }

func (h *hostUpdater) GradStats() ([]GradStat, bool, error) { return nil, false, nil }

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

// TestTrainerDeviceUpdater: a Trainer on a machine whose executor is a
// DeviceUpdater hands it the update (with the clipping factor, the bias
// corrections and per-parameter decay) and its moments, and trains exactly
// as the host update does; HostOptimizer opts out.
func TestTrainerDeviceUpdater(t *testing.T) {
	cfg := TrainConfig{Optimizer: "adamw", LR: 0.1, WeightDecay: 0.3, ClipNorm: 0.5,
		Decay: func(name string, _ tensor.Shape) bool { return name == "w" }}
	train := func(device bool, hostOpt bool) (*Trainer, *linModel, *hostUpdater) {
		m := newLinModel(t, Float64)
		var hu *hostUpdater
		opts := MachineOptions{}
		if device {
			opts.Executor = func(p *Program) (Executor, error) {
				hu = &hostUpdater{fakeExec: fakeExec{p: p, vm: G.NewTapeMachine(p.Graph, G.BindDualValues(p.Params...))}}
				for _, q := range p.Params {
					hu.mom = append(hu.mom, make([]float64, q.Shape().TotalSize()))
					hu.vel = append(hu.vel, make([]float64, q.Shape().TotalSize()))
				}
				return hu, nil
			}
		}
		mach := must(NewMachine(m.s, m.loss, opts))
		t.Cleanup(func() { mach.Close() })
		c := cfg
		c.HostOptimizer = hostOpt
		tr := must(NewTrainer(mach, c))
		if err := SetValue(m.x, []float64{1, 2, 3, 4, 5, 6}); err != nil {
			t.Fatal(err)
		}
		if err := SetValue(m.y, []float64{0, 1, 1, 0}); err != nil {
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
		if diff := cmp.Diff(must(Values(pair[0])), must(Values(pair[1])), approx(1e-14)); diff != "" {
			t.Errorf("%s after 3 steps (-host +device):\n%s", pair[0].Name(), diff)
		}
	}
	if diff := cmp.Diff(host.State(), dev.State(), approx(1e-14)); diff != "" {
		t.Errorf("state (-host +device):\n%s", diff)
	}
	// SetState reaches the device moments.
	st := dev.State()
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
