package cuda

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/losses"
	"github.com/gdattn/gdattn/train"
	"gorgonia.org/tensor"
)

// TestGraphCaptureExact trains the synthetic GD model, the Trained-TF
// model and the small GD LM for a few RunSteps with ExecOptions.GraphCapture
// and without: the same losses, parameters and optimiser state (bit for bit
// on the emulator, whose kernels run serially), and every step after the
// first replays the captured graph (counters).
func TestGraphCaptureExact(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels")
	}
	serial := strings.HasPrefix(be.Name(), "emulator")
	cfg := train.Config{Optimizer: "adamw", LR: 0.01, WeightDecay: 0.1, ClipNorm: 0.5, ParamDtypeMoments: true}
	const steps = 4
	for _, name := range []string{"gd-structured-softmax", "tf", "gdlm"} {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			t.Run(fmt.Sprintf("%s/%v", name, dt), func(t *testing.T) {
				opts := ExecOptions{DeviceGrads: true, ResidentParams: true}
				wantL, wantP, wantS, _ := trainDevice(t, be, name, dt, opts, cfg, steps)
				opts.GraphCapture = true
				gotL, gotP, gotS, x := trainDevice(t, be, name, dt, opts, cfg, steps)
				same := func(a, b []float64) bool {
					if serial {
						return equalBits(a, b)
					}
					return relDiff(a, b) <= execTol(dt)
				}
				if !same(gotL, wantL) {
					t.Errorf("losses %v with capture, %v without", gotL, wantL)
				}
				for p, w := range wantP {
					if !same(gotP[p], w) {
						t.Errorf("parameter %s differs with capture", p)
					}
				}
				if serial && !reflect.DeepEqual(gotS, wantS) {
					t.Errorf("optimiser state differs with capture")
				}
				if ok, why := x.GraphStatus(); !ok {
					t.Fatalf("not replaying a graph: %s", why)
				}
				if c := x.Counters(); c.GraphLaunches != steps-graphWarmup {
					t.Errorf("%d graph launches in %d steps, want %d", c.GraphLaunches, steps, steps-graphWarmup)
				}
			})
		}
	}
}

// TestGraphCaptureCounts: a replayed step is one graph launch (the update
// included), one wait and one copy back; a new clip norm captures again.
func TestGraphCaptureCounts(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels")
	}
	m, err := buildModel("gdlm", tensor.Float32, 9)
	if err != nil {
		t.Fatal(err)
	}
	opts := ExecOptions{Logf: func(string, ...any) {}, DeviceGrads: true, ResidentParams: true, GraphCapture: true}
	mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: NewExecutorWith(be, opts)})
	if err != nil {
		t.Fatal(err)
	}
	defer mach.Close()
	x := mach.Executor().(*Exec)
	if ok, why := x.GraphStatus(); ok || !strings.Contains(why, "capturing after") {
		t.Errorf("before the first step: GraphStatus %v, %q", ok, why)
	}
	tr, err := train.NewTrainer(mach, train.Config{Optimizer: "adamw", LR: 0.01, ClipNorm: 1})
	if err != nil {
		t.Fatal(err)
	}
	step := func() ExecCounters {
		c0 := x.Counters()
		if _, err := tr.Step(); err != nil {
			t.Fatal(err)
		}
		return x.Counters().Sub(c0)
	}
	first := step()
	if first.GraphLaunches != 0 {
		t.Errorf("first step: %d graph launches, want 0 (it runs before the capture)", first.GraphLaunches)
	}
	step() // captures and replays
	c := step()
	t.Logf("ordinary step %+v; replayed step %+v", first, c)
	if c.GraphLaunches != 1 || c.Launches != 0 || c.Gemms != 0 || c.Syncs != 1 || c.CopiesDtoH != 1 {
		t.Errorf("replayed step: %+v; want 1 graph launch and nothing else launched, 1 sync, 1 copy back", c)
	}
	if first.Launches+first.Gemms <= c.Launches+c.GraphLaunches {
		t.Errorf("capture saves no launches: %+v ordinary, %+v replayed", first, c)
	}
	// A second trainer on the machine, with another clip norm.
	if tr, err = train.NewTrainer(mach, train.Config{Optimizer: "adamw", LR: 0.01, ClipNorm: 2}); err != nil {
		t.Fatal(err)
	}
	re := step()
	if re.GraphLaunches != 1 || re.Launches != first.Launches || re.Gemms != first.Gemms {
		t.Errorf("new clip norm: %+v; want a capture (the ordinary step's %d launches and %d Gemms recorded) and 1 graph launch", re, first.Launches, first.Gemms)
	}
	if ok, why := x.GraphStatus(); !ok || !strings.Contains(why, "clip norm 2") {
		t.Errorf("after a new clip norm: GraphStatus %v, %q", ok, why)
	}
}

// TestGraphCaptureFallback: a program with an op on the host, and a
// traced machine, never capture (ordinary launches, the same results);
// a backend without streams refuses the option.
func TestGraphCaptureFallback(t *testing.T) {
	m, err := buildModel("tf", tensor.Float64, 9)
	if err != nil {
		t.Fatal(err)
	}
	opts0 := ExecOptions{GraphCapture: true, Logf: func(string, ...any) {}}
	if mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: NewExecutorWith(&dryBackend{}, opts0)}); err == nil || !strings.Contains(err.Error(), "no streams") {
		if err == nil {
			mach.Close()
		}
		t.Errorf("GraphCapture on a backend without streams: %v", err)
	}
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels")
	}
	cfg := train.Config{Optimizer: "adam", LR: 0.01, ClipNorm: 1}
	opts := ExecOptions{DeviceGrads: true, HostOps: []string{"ops.MatMulOp", "ops.HeadOp"}}
	wantL, _, _, _ := trainDevice(t, be, "gd-structured-softmax", tensor.Float64, opts, cfg, 3)
	opts.GraphCapture = true
	gotL, _, _, x := trainDevice(t, be, "gd-structured-softmax", tensor.Float64, opts, cfg, 3)
	if x.count(false) == 0 {
		t.Fatal("HostOps moved no op to the host")
	}
	if ok, why := x.GraphStatus(); ok || !strings.Contains(why, "on the host") {
		t.Errorf("with a host op: GraphStatus %v, %q", ok, why)
	}
	if c := x.Counters(); c.GraphLaunches != 0 {
		t.Errorf("with a host op: %d graph launches", c.GraphLaunches)
	}
	if !equalBits(gotL, wantL) && relDiff(gotL, wantL) > execTol(tensor.Float64) {
		t.Errorf("with a host op: losses %v, without capture %v", gotL, wantL)
	}
}

// TestGraphCaptureNewBatches trains the small GD LM with a new minibatch
// every step (new ids, repeated and out of order, and a different number of
// unscored targets, −1, each step; none scored in one), with and without
// ExecOptions.GraphCapture: a replayed step takes what its own batch gives
// (the scatter's id order, the cross-entropy gradient's 1/(scored rows),
// uploaded before the replay), so the losses and parameters are the same,
// bit for bit on the emulator, and the losses and Adam's first moments are
// the CPU path's.
func TestGraphCaptureNewBatches(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels")
	}
	serial := strings.HasPrefix(be.Name(), "emulator")
	chk := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	const V, ctx, B, steps = 11, 5, 3, 5
	// No clipping: the first moments then show the gradients' scale.
	cfg := train.Config{Optimizer: "adamw", LR: 0.01, WeightDecay: 0.1}
	rng := rand.New(rand.NewPCG(41, 42))
	var ids, targets [steps][]int
	for k := range steps {
		ids[k], targets[k] = make([]int, B*ctx), make([]int, B*ctx)
		for i := range ids[k] {
			ids[k][i] = rng.IntN(V)
			targets[k][i] = rng.IntN(V)
			if i < 2*k || k == 3 {
				targets[k][i] = -1
			}
		}
	}
	run := func(factory graph.ExecutorFactory) ([]float64, []float64, []float64, *graph.Machine) {
		s, err := graph.NewScope(tensor.Float32, 9)
		chk(err)
		m, err := gd.NewLM(s, gd.LMConfig{Vocab: V, DPrime: 4, Context: ctx, Heads: 2, Steps: 2}, gd.LMOptions{Batch: B})
		chk(err)
		loss, err := losses.SparseSoftmaxCrossEntropy(m.Logits, m.Targets)
		chk(err)
		chk(m.Feed(ids[0], targets[0]))
		mach, err := graph.NewMachine(s, loss, graph.MachineOptions{Executor: factory})
		chk(err)
		t.Cleanup(func() { mach.Close() })
		tr, err := train.NewTrainer(mach, cfg)
		chk(err)
		var ls []float64
		for k := range steps {
			chk(m.Feed(ids[k], targets[k]))
			l, err := tr.Step()
			chk(err)
			ls = append(ls, l)
		}
		chk(tr.SyncParams())
		st, err := tr.State()
		chk(err)
		var ps, ms []float64
		for _, p := range mach.Params() {
			v, err := graph.Values(p)
			chk(err)
			ps = append(ps, v...)
			ms = append(ms, st.M[p.Name()]...)
		}
		return ls, ps, ms, mach
	}
	opts := ExecOptions{Logf: func(string, ...any) {}, DeviceGrads: true, ResidentParams: true}
	cpuL, _, cpuM, _ := run(nil)
	wantL, wantP, wantM, _ := run(NewExecutorWith(be, opts))
	opts.GraphCapture = true
	gotL, gotP, gotM, mach := run(NewExecutorWith(be, opts))
	x := mach.Executor().(*Exec)
	same := func(a, b []float64) bool {
		if serial {
			return equalBits(a, b)
		}
		return relDiff(a, b) <= execTol(tensor.Float32)
	}
	if !same(gotL, wantL) || !same(gotP, wantP) || !same(gotM, wantM) {
		t.Errorf("losses %v with capture, %v without (parameters the same: %v, moments: %v)", gotL, wantL, same(gotP, wantP), same(gotM, wantM))
	}
	if d, dm := relDiff(wantL, cpuL), relDiff(wantM, cpuM); d > 1e-5 || dm > 1e-4 {
		t.Errorf("losses %v on the device, %v on the CPU (relative difference %.3g, first moments %.3g)", wantL, cpuL, d, dm)
	}
	if wantL[3] != 0 {
		t.Errorf("loss %v on a batch with no scored target, want 0", wantL[3])
	}
	if c := x.Counters(); c.GraphLaunches != steps-graphWarmup {
		t.Errorf("%d graph launches in %d steps, want %d", c.GraphLaunches, steps, steps-graphWarmup)
	}
}
