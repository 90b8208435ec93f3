package theorem2

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunWritesValidResults checks that a results file Run writes passes
// the -replot checks and redraws.
func TestRunWritesValidResults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the check")
	}
	o := Options{Kernels: "linear", Task: TaskUniform, Scales: "0.1,0.3", Aniso: 0.5, N: 6, Batch: 20, NB: 20, PertNB: 10, Dirs: 1,
		AdamSteps: 20, NewtonIters: 1, NewtonBatches: 10, HessBatches: 5, Seed: 1, DataSeed: 1, Out: t.TempDir(), Quiet: true}
	if err := Run(o, "test", io.Discard); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(o.Out, "results_"+TaskUniform+".json")
	if err := CheckReplot(path); err != nil {
		t.Fatal(err)
	}
	if err := Redraw(path, ""); err != nil {
		t.Fatal(err)
	}
}

// TestRedrawRefusesBadFiles: Redraw, called without CheckReplot, returns an
// error naming the file for a results file whose numbers it cannot use,
// instead of indexing past them.
func TestRedrawRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"null.json":  `{"task": "uniform", "batch": 1, "kernels": [null]}`,
		"cats.json":  `{"task": "uniform", "batch": 1, "kernels": [{"kernel": "rbf", "gd": {"categories": [{}, {}]}}]}`,
		"batch.json": `{"task": "uniform", "batch": 0, "kernels": []}`,
		"task.json":  `{"task": "../x", "batch": 1, "kernels": []}`,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Redraw(path, ""); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %v, want one naming the file", name, err)
		}
	}
}
