package train

import (
	"math/rand/v2"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
)

// TestFitSyncsResidentParams: with an executor that keeps the parameters
// on its "device" (hostUpdater, resident), the host values stay stale during
// training; the package function Fit syncs them before it returns, so the
// model's parameters hold the trained values, ready to save.
func TestFitSyncsResidentParams(t *testing.T) {
	task := must(data.NewSynthetic(data.DefaultSyntheticConfig(), 1))
	set := must(task.Sample(8, rand.New(rand.NewPCG(1, 1))))
	s := must(graph.NewScope(graph.Float64, 1))
	m := must(gd.NewModel(s, gd.Config{D: 10, DPrime: 5, C: 25, N: 10}, 4))
	before := must(graph.Values(m.We))
	var hu *hostUpdater
	exec := func(p *graph.Program) (graph.Executor, error) {
		if p.Loss == nil { // the evaluation machine
			return &fakeExec{p: p, vm: G.NewTapeMachine(p.Graph)}, nil
		}
		var err error
		hu, err = newHostUpdater(p, true)
		return hu, err
	}
	if err := Fit(m, set, RunnerConfig{Optim: Config{LR: 1e-2}, Executor: exec}, FitConfig{Epochs: 1}); err != nil {
		t.Fatal(err)
	}
	if hu == nil || len(hu.updates) != 2 {
		t.Fatalf("device updater %v: want 2 device updates", hu)
	}
	if hu.syncs == 0 {
		t.Error("Fit returned without syncing the parameters from the device")
	}
	after := must(graph.Values(m.We))
	if slices.Equal(after, before) {
		t.Error("W_e on the host is the initial value after Fit")
	}
	for i, p := range hu.p.Params {
		if got := must(graph.Values(p)); !slices.Equal(got, hu.dev[i]) {
			t.Errorf("host value of %s differs from the device's after Fit", p.Name())
		}
	}
}
