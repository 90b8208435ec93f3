package fewshot

import (
	"strings"
	"testing"
)

// TestPlanKeys: a run's key holds the settings that change its result and
// no other: more seeds or another model list keep the keys of the runs
// they share (their results are reused), a Trained TF setting leaves the
// GD runs' keys alone, and a setting of the features or the episodes
// changes every key.
func TestPlanKeys(t *testing.T) {
	keys := func(edit func(o *Options)) map[string]string {
		t.Helper()
		o := Defaults()
		edit(&o)
		e, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, r := range e.Plan.Runs {
			m[r.Label] = r.Key
		}
		return m
	}
	base := keys(func(*Options) {})
	if len(base) != 42 {
		t.Fatalf("the full plan has %d runs, want 42", len(base))
	}
	same := func(what string, got map[string]string, labels ...string) {
		t.Helper()
		for _, l := range labels {
			if got[l] == "" || got[l] != base[l] {
				t.Errorf("%s: the key of %q changed (or the run is gone)", what, l)
			}
		}
	}
	differ := func(what string, got map[string]string, labels ...string) {
		t.Helper()
		for _, l := range labels {
			if got[l] == "" || got[l] == base[l] {
				t.Errorf("%s: the key of %q did not change (or the run is gone)", what, l)
			}
		}
	}
	more := keys(func(o *Options) { o.Seeds = 7 })
	if len(more) != 2+2*4*7 {
		t.Errorf("7 seeds: %d runs", len(more))
	}
	same("7 seeds", more, "cnn d=32 gd2 seed 5", "pca d=32 lp", "cnn d=32 tf seed 1")
	same("models gd2 only", keys(func(o *Options) { o.Models = "gd2" }), "cnn d=32 gd2 seed 1", "pca d=32 gd2 seed 5")
	tfOnly := keys(func(o *Options) { o.TFEpochs, o.TFLR, o.TFLayers = 40, 1e-4, 3 })
	same("TF settings", tfOnly, "cnn d=32 gd1 seed 1", "cnn d=32 lp")
	differ("TF settings", tfOnly, "cnn d=32 tf seed 1")
	gdOnly := keys(func(o *Options) { o.Epochs, o.LR = 9, 1e-2 })
	same("GD settings", gdOnly, "cnn d=32 tf seed 1", "pca d=32 lp")
	differ("GD settings", gdOnly, "cnn d=32 gd3 seed 2")
	same("probe settings", keys(func(o *Options) { o.ProbeSteps = 100 }), "cnn d=32 gd1 seed 1")
	differ("CNN width", keys(func(o *Options) { o.CNNDim = 256 }), "cnn d=32 lp", "cnn d=32 gd1 seed 1", "pca d=32 gd1 seed 1")
	differ("data seed", keys(func(o *Options) { o.DataSeed = 2 }), "cnn d=32 lp", "pca d=32 tf seed 3")
	differ("CNN epochs", keys(func(o *Options) { o.CNNEpochs = 1 }), "cnn d=32 gd2 seed 1")
	same("CNN epochs", keys(func(o *Options) { o.CNNEpochs = 1 }), "pca d=32 gd2 seed 1")
}

// TestPlanEstimates: every run has a positive estimate; the first run of
// each feature map carries the feature build (the CNN's training is the
// longest), so the Slurm time limit covers a task that builds it.
func TestPlanEstimates(t *testing.T) {
	e, err := New(Defaults())
	if err != nil {
		t.Fatal(err)
	}
	total, longest := e.Plan.Estimate()
	for i, r := range e.Plan.Runs {
		if !(r.Estimate > 0) {
			t.Errorf("run %d (%s): estimate %v", i, r.Label, r.Estimate)
		}
	}
	if e.Plan.Runs[0].Estimate != longest || !strings.HasSuffix(e.Plan.Runs[0].Label, " lp") {
		t.Errorf("run 0 (%s, %v s) is not the longest (%v s)", e.Plan.Runs[0].Label, e.Plan.Runs[0].Estimate, longest)
	}
	if r := e.Plan.Runs[21]; r.Label != "pca d=32 lp" || r.Estimate < 2*e.Plan.Runs[22].Estimate {
		t.Errorf("run 21 (%s, %v s) does not carry the PCA's build (run 22: %v s)", r.Label, r.Estimate, e.Plan.Runs[22].Estimate)
	}
	if total < longest || total > 100*3600 {
		t.Errorf("total estimate %v s, longest %v s", total, longest)
	}
}
