package main

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
)

// TestRun runs the example's code path on a tiny config (64 training and
// 40 test contexts, 2 epochs): it prints the two models' metrics, writes
// checkpoints that Load rebuilds with the user kernel and its trained
// parameters, and a second run with the same seed prints the same numbers.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two models")
	}
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(&out, dir, 3, 64, 40, 2); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "GD, 2 blocks, κ = rbf + β·linear:") || !strings.HasPrefix(lines[1], "Trained TF, 1 layer:") {
		t.Fatalf("output %q, want a GD line and a Trained TF line", out.String())
	}
	for _, l := range lines {
		for _, w := range []string{"top-1 0.", "NLL ", "oracle 0.", "(40 contexts)"} {
			if !strings.Contains(l, w) {
				t.Errorf("line %q does not contain %q", l, w)
			}
		}
	}

	g, err := gd.Load(filepath.Join(dir, "gd"), 8)
	if err != nil {
		t.Fatal(err)
	}
	if g.Cfg.Blocks != 2 || g.Cfg.Kernel.Name() != "sum" {
		t.Errorf("reloaded GD model: %d blocks, kernel %q; want 2 and sum", g.Cfg.Blocks, g.Cfg.Kernel.Name())
	}
	want := []string{"we", "log_alpha", "kernel/term0/log_gamma", "kernel/term1/beta"}
	if diff := cmp.Diff(want, g.Scope().ParamNames()); diff != "" {
		t.Errorf("reloaded GD parameters (-want +got):\n%s", diff)
	}
	beta, ok := g.Scope().Lookup("kernel/term1/beta")
	if !ok {
		t.Fatal("no kernel/term1/beta")
	}
	if b, _ := graph.Values(beta); len(b) != 1 || b[0] == 0.1 {
		t.Errorf("saved β = %v: training should have moved it from 0.1", b)
	}
	m, err := tf.Load(filepath.Join(dir, "tf"), 8)
	if err != nil {
		t.Fatal(err)
	}
	if m.Cfg.Layers != 1 {
		t.Errorf("reloaded Trained TF: %d layers, want 1", m.Cfg.Layers)
	}

	var again bytes.Buffer
	if err := run(&again, filepath.Join(dir, "again"), 3, 64, 40, 2); err != nil {
		t.Fatal(err)
	}
	if again.String() != out.String() {
		t.Errorf("same seed, different output:\n%s\n%s", out.String(), again.String())
	}
}

// TestFitSaveLoadChecksPredictions: a reloaded model that predicts anything
// else than the trained one (here W_e moved by 1e-6 after loading) is an
// error, and so are a failed load and a failed save.
func TestFitSaveLoadChecksPredictions(t *testing.T) {
	task, err := data.NewSynthetic(data.DefaultSyntheticConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	set, err := task.Sample(8, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	newModel := func() *gd.Model {
		s, err := graph.NewScope(graph.Float64, 1)
		if err != nil {
			t.Fatal(err)
		}
		m, err := gd.NewModel(s, gd.Config{D: 10, DPrime: 5, C: 25, N: 10}, 4)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	nudged := func(dir string, batch int) (*gd.Model, error) {
		m, err := gd.Load(dir, batch)
		if err != nil {
			return nil, err
		}
		we, err := graph.Values(m.We)
		if err != nil {
			return nil, err
		}
		we[0] += 1e-6
		return m, graph.SetValue(m.We, we)
	}
	dir := t.TempDir()
	fit := train.FitConfig{Epochs: 1, Seed: 1}
	if _, err := fitSaveLoad(newModel(), gd.Load, set, set, fit, filepath.Join(dir, "ok")); err != nil {
		t.Errorf("faithful reload: %v", err)
	}
	_, err = fitSaveLoad(newModel(), nudged, set, set, fit, filepath.Join(dir, "nudged"))
	if err == nil || !strings.Contains(err.Error(), "predictions differ") {
		t.Errorf("nudged reload: error %v, want one saying the predictions differ", err)
	}
	failing := func(string, int) (*gd.Model, error) { return nil, errors.New("no such checkpoint") }
	_, err = fitSaveLoad(newModel(), failing, set, set, fit, filepath.Join(dir, "failing"))
	if err == nil || !strings.Contains(err.Error(), "no such checkpoint") {
		t.Errorf("failed load: error %v, want the load's", err)
	}
	_, err = fitSaveLoad(newModel(), gd.Load, set, set, fit, filepath.Join(dir, "ok", "config.json", "x"))
	if err == nil {
		t.Error("saving under a file: no error")
	}
}
