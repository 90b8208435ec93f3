package cuda

import (
	"path/filepath"
	"testing"

	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/train"
)

// TestExecutorTrainerSaveResident: with ExecOptions.ResidentParams the host
// values are stale after device updates, yet train.Trainer.Save (which syncs
// first) writes the trained parameters and moments, the same as a trainer
// whose executor copies the parameters back after every update.
func TestExecutorTrainerSaveResident(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("no device kernels: the trainer updates on the host")
	}
	cfg := train.Config{Optimizer: "adamw", LR: 0.05, WeightDecay: 0.1}
	const steps = 3
	quiet := func(string, ...any) {}
	_, wp, ws := trainSteps(t, "tf-cross", tensor.Float64, NewExecutorWith(be, ExecOptions{Logf: quiet}), cfg, steps, true)

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
	for i := 0; i < steps; i++ {
		if _, err := tr.Step(); err != nil {
			t.Fatal(err)
		}
	}
	stale := 0
	for _, p := range mach.Params() {
		v, _ := graph.Values(p)
		if relDiff(v, initial[p.Name()]) == 0 {
			stale++
		}
	}
	if stale != len(mach.Params()) {
		t.Fatalf("%d of %d host values stale before the save: the test needs resident parameters", stale, len(mach.Params()))
	}
	dir := filepath.Join(t.TempDir(), "ckpt")
	if err := tr.Save(dir, map[string]string{"model": "tf-cross"}, nil); err != nil {
		t.Fatal(err)
	}
	c, err := checkpoint.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range wp {
		if d := relDiff(c.Params[name].Float64s(), want); d > 1e-12 {
			t.Errorf("saved %q differs by %.3g from the trained value", name, d)
		}
		if d := relDiff(c.Optim.M[name], ws.M[name]); d > 1e-12 {
			t.Errorf("saved first moment of %q differs by %.3g", name, d)
		}
	}
	if c.Optim.Step != steps {
		t.Errorf("saved step %d, want %d", c.Optim.Step, steps)
	}
}
