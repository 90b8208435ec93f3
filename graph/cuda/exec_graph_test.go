package cuda

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
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
