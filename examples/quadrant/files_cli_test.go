package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gdattn/gdattn/examples/internal/quadrant"
	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestOutputFiles: -out and -figdir are checked before any work starts.
func TestOutputFiles(t *testing.T) {
	bin := clitest.Build(t, ".")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := func(s ...string) []string { return s }
	// -out whose checkpoint of the run (rbf, gd, seed 1) at these settings
	// is a directory of something else: refused before any training.
	photos := filepath.Join(t.TempDir(), "out")
	o := quadrant.Options{Kernels: "rbf", Seeds: 1, Seed: 1, DataSeed: 1, L: 8, M: 8, EvalM: 8, N: 4, C: 20, DPrime: 5,
		Epochs: 1, Every: 1, Batch: 4, LR: 1e-2, Out: photos}
	planned := quadrant.PlannedCheckpoints(o)
	if len(planned) != 2 {
		t.Fatalf("planned checkpoints %v, want gd and tf", planned)
	}
	if err := os.MkdirAll(planned[0], 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(planned[0], "cat.jpg"), []byte("meow"), 0o644); err != nil {
		t.Fatal(err)
	}
	clitest.Run(t, bin, "quadrant", []clitest.Case{
		clitest.Usage("a checkpoint location is not a checkpoint", a("-kernels", "rbf", "-seeds", "1", "-L", "8", "-M", "8", "-eval-M", "8",
			"-N", "4", "-epochs", "1", "-every", "1", "-batch", "4", "-out", photos), "-out", planned[0], "not a checkpoint"),
		clitest.Usage("figdir is a file", a("-quick", "-figdir", file), "-figdir", file),
		clitest.Usage("out is a file", a("-quick", "-out", file), "-out", file),
	})
}
