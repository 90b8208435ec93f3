package train

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	G "gorgonia.org/gorgonia"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/graph"
)

// TestCheckpointResume trains, checkpoints parameters and optimiser state,
// and checks that a fresh model resumed from the checkpoint continues with
// exactly the same numbers as the original run.
func TestCheckpointResume(t *testing.T) {
	t.Run("float32", func(t *testing.T) { testCheckpointResume[float32](t, false) })
	t.Run("float64", func(t *testing.T) { testCheckpointResume[float64](t, false) })
	// Moments in the parameters' dtype: float32 moments, saved as float64
	// (exactly) and restored.
	t.Run("float32/ParamDtypeMoments", func(t *testing.T) { testCheckpointResume[float32](t, true) })
	t.Run("float64/ParamDtypeMoments", func(t *testing.T) { testCheckpointResume[float64](t, true) })
}

func testCheckpointResume[T float](t *testing.T, paramMoments bool) {
	dir := filepath.Join(t.TempDir(), "ckpt")
	cfg := Config{Optimizer: "adamw", Schedule: WarmupCosine(0.05, 2, 20, 0.005), WeightDecay: 0.1, ClipNorm: 1, ParamDtypeMoments: paramMoments}
	w0 := []float64{4, -3, 0.25, 10}
	a := newQuad(t, dtypeOf[T](), w0)
	ta := must(NewTrainer(a.mach, cfg))
	for i := 0; i < 4; i++ {
		must(ta.Step())
	}
	st := mustState(ta)
	if err := checkpoint.Save(dir, a.s, map[string]int{"steps": 4}, checkpoint.SaveOptions{Optim: &st}); err != nil {
		t.Fatal(err)
	}
	var lossA []float64
	for i := 0; i < 4; i++ {
		lossA = append(lossA, must(ta.Step()))
	}

	b := newQuad(t, dtypeOf[T](), []float64{0, 0, 0, 0})
	tb := must(NewTrainer(b.mach, cfg))
	c := must(checkpoint.Read(dir))
	if err := c.Apply(b.s, checkpoint.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := tb.SetState(*c.Optim); err != nil {
		t.Fatal(err)
	}
	var lossB []float64
	for i := 0; i < 4; i++ {
		lossB = append(lossB, must(tb.Step()))
	}
	if diff := cmp.Diff(lossA, lossB); diff != "" {
		t.Errorf("losses (-original +resumed):\n%s", diff)
	}
	for _, n := range [][2]*G.Node{{a.w, b.w}, {a.b, b.b}} {
		if diff := cmp.Diff(must(graph.Values(n[0])), must(graph.Values(n[1]))); diff != "" {
			t.Errorf("%s (-original +resumed):\n%s", n[0].Name(), diff)
		}
	}
	if tb.StepCount() != 8 {
		t.Errorf("resumed StepCount %d, want 8", tb.StepCount())
	}
}

// TestTrainerSaveSyncsDevice: with parameters resident on a device (host
// values stale between updates), Trainer.Save and State sync them first, so
// the checkpoint holds the trained values, identical to a host-updated run;
// a failing sync fails the save, which then writes nothing.
func TestTrainerSaveSyncsDevice(t *testing.T) {
	cfg := Config{Optimizer: "adamw", LR: 0.1, WeightDecay: 0.3, ClipNorm: 0.5}
	run := func(resident bool) (*Trainer, *linModel, *hostUpdater) {
		m := newLinModel(t, graph.Float64)
		var hu *hostUpdater
		opts := graph.MachineOptions{}
		if resident {
			opts.Executor = func(p *graph.Program) (graph.Executor, error) {
				var err error
				hu, err = newHostUpdater(p, true)
				return hu, err
			}
		}
		mach := must(graph.NewMachine(m.s, m.loss, opts))
		t.Cleanup(func() { mach.Close() })
		tr := must(NewTrainer(mach, cfg))
		must(0, graph.SetValue(m.x, []float64{1, 2, 3, 4, 5, 6}))
		must(0, graph.SetValue(m.y, []float64{0, 1, 1, 0}))
		for i := 0; i < 3; i++ {
			must(tr.Step())
		}
		return tr, m, hu
	}
	host, hm, _ := run(false)
	dev, dm, hu := run(true)
	initial := must(graph.Values(newLinModel(t, graph.Float64).w))
	if diff := cmp.Diff(initial, must(graph.Values(dm.w))); diff != "" {
		t.Fatalf("the fake device updated the host values before any sync:\n%s", diff)
	}

	hu.syncErr = errors.New("device lost")
	bad := filepath.Join(t.TempDir(), "bad")
	if err := dev.Save(bad, nil, nil); err == nil || !strings.Contains(err.Error(), "device lost") {
		t.Errorf("Save with a failing sync: got %v, want the sync error", err)
	}
	if _, err := os.Stat(bad); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed save left %s (%v)", bad, err)
	}
	if _, err := dev.State(); err == nil {
		t.Error("State with a failing sync: no error")
	}
	hu.syncErr = nil

	dir := filepath.Join(t.TempDir(), "ckpt")
	if err := dev.Save(dir, map[string]int{"d": 3}, nil); err != nil {
		t.Fatal(err)
	}
	c := must(checkpoint.Read(dir))
	for _, pair := range [][2]*G.Node{{hm.w, dm.w}, {hm.a, dm.a}} {
		saved := c.Params[pair[0].Name()].Float64s()
		if diff := cmp.Diff(must(graph.Values(pair[0])), saved, approx(1e-14)); diff != "" {
			t.Errorf("saved %s (-host run +device run):\n%s", pair[0].Name(), diff)
		}
		if diff := cmp.Diff(saved, must(graph.Values(pair[1]))); diff != "" {
			t.Errorf("host value of %s after Save differs from the saved one:\n%s", pair[1].Name(), diff)
		}
	}
	if diff := cmp.Diff(mustState(host), *c.Optim, approx(1e-14)); diff != "" {
		t.Errorf("saved optimiser state (-host run +device run):\n%s", diff)
	}
	if c.Optim.Step != 3 {
		t.Errorf("saved step %d, want 3", c.Optim.Step)
	}
}
