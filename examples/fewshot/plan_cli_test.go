package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestPlanFull: -plan prints the plan of the paper's experiment (the
// default flags) without reading the drawings: 2 feature maps × (linear
// probing + 3 GD models and the Trained TF × 5 seeds) = 42 runs.
func TestPlanFull(t *testing.T) {
	bin := fewshotBin(t)
	out := filepath.Join(t.TempDir(), "results")
	code, stdout, stderr := clitest.Exec(t, bin, "-plan", "-out", out, "-quickdraw", filepath.Join(t.TempDir(), "none"))
	if code != 0 || stderr != "" {
		t.Fatalf("-plan: exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if !strings.HasPrefix(lines[0], "plan fewshot: 42 runs, estimated ") || len(lines) != 43 {
		t.Fatalf("-plan printed %d lines, first %q; want the header and 42 runs", len(lines), lines[0])
	}
	for i, want := range map[int]string{0: "cnn d=32 lp [cnn]", 1: "cnn d=32 gd1 seed 1 [cnn]", 20: "cnn d=32 tf seed 5 [cnn]", 21: "pca d=32 lp [pca]", 41: "pca d=32 tf seed 5 [pca]"} {
		if !strings.Contains(lines[i+1], want) {
			t.Errorf("run %d: %q, want %q", i, lines[i+1], want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("-plan created %s", out)
	}
	code, stdout, _ = clitest.Exec(t, bin, "-plan-json", "-quick", "-out", out)
	var p struct {
		Count int `json:"count"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &p) != nil || p.Count != 14 {
		t.Errorf("-plan-json -quick: exit %d, count %d, want 14 runs (2 × (lp + 3 models × 2 seeds))", code, p.Count)
	}
}

// fakeQuickDraw writes a folder of <category>.ndjson.gz files: classes
// categories of n random 28×28 drawings (a bright square whose place
// depends on the category).
func fakeQuickDraw(t *testing.T, classes, n int) string {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	for c := 0; c < classes; c++ {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		for i := 0; i < n; i++ {
			img := make([]float64, 28*28)
			x0, y0 := 2*c%20, (5*c)%20
			for y := y0; y < y0+8; y++ {
				for x := x0; x < x0+8; x++ {
					img[y*28+x] = 0.5 + 0.5*rng.Float64()
				}
			}
			raw, _ := json.Marshal(img)
			zw.Write(append(raw, '\n'))
		}
		zw.Close()
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("cat%02d.ndjson.gz", c)), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestPlanWorkers runs a tiny plan (linear probing and GD with one block,
// two seeds, on the pixel features: 3 runs) as workers: -index 1 runs one
// run; -merge then refuses, naming the missing runs, and -merge -partial
// writes a table that says it is partial; two -shard workers finish the
// plan (with a Kubernetes-style -index env); -merge then prints the same
// table as a single process.
func TestPlanWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	bin := fewshotBin(t)
	qd, cache, out := fakeQuickDraw(t, 12, 12), t.TempDir(), filepath.Join(t.TempDir(), "out")
	tiny := []string{"-quickdraw", qd, "-cache", cache, "-features", "pca", "-models", "lp,gd1", "-test-classes", "5",
		"-cnn-dim", "8", "-d", "4", "-L", "16", "-M", "16", "-epochs", "1", "-batch", "8", "-seeds", "2",
		"-eval-points", "1", "-probe-steps", "5", "-quiet"}
	with := func(dir string, more ...string) []string {
		return append(append(append([]string(nil), tiny...), "-out", dir), more...)
	}
	exec := func(want int, args ...string) (string, string) {
		t.Helper()
		code, stdout, stderr := clitest.Exec(t, bin, args...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\nstdout %s\nstderr %s", args, code, want, stdout, stderr)
		}
		return stdout, stderr
	}
	stdout, _ := exec(0, with(out, "-plan")...)
	if !strings.HasPrefix(stdout, "plan fewshot: 3 runs") {
		t.Fatalf("-plan: %q", stdout)
	}
	exec(0, with(out, "-index", "1")...)
	runs, _ := filepath.Glob(filepath.Join(out, "runs", "*.json"))
	if len(runs) != 1 {
		t.Fatalf("-index 1 left %d run files, want 1", len(runs))
	}
	if stdout, _ := exec(0, with(out, "-plan")...); !strings.Contains(stdout, "1 done") || !strings.Contains(stdout, "gd1 seed 1 [pca] done") {
		t.Errorf("-plan after -index 1 does not mark run 1 done:\n%s", stdout)
	}
	_, stderr := exec(1, with(out, "-merge")...)
	if !strings.Contains(stderr, "2 of 3 runs") || !strings.Contains(stderr, "indices 0,2") || !strings.Contains(stderr, "-partial") {
		t.Errorf("-merge with runs missing: %q, want the missing runs 0,2 named and -partial suggested", stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "results.json")); err == nil {
		t.Error("-merge refused but wrote results.json")
	}
	stdout, _ = exec(0, with(out, "-merge", "-partial")...)
	if !strings.Contains(stdout, "PARTIAL: 1 of 3 runs") || !strings.Contains(stdout, "gd1  top-1") || strings.Contains(stdout, "lp   top-1") {
		t.Errorf("-merge -partial:\n%s", stdout)
	}
	// A Kubernetes Indexed Job's pod: the index from $JOB_COMPLETION_INDEX.
	t.Setenv("JOB_COMPLETION_INDEX", "2")
	exec(0, with(out, "-index", "env")...)
	if stdout, _ := exec(0, with(out, "-plan")...); !strings.Contains(stdout, "2 done") || !strings.Contains(stdout, "gd1 seed 2 [pca] done") {
		t.Errorf("-plan after -index env (JOB_COMPLETION_INDEX=2) does not mark run 2 done:\n%s", stdout)
	}
	exec(0, with(out, "-shard", "0/2")...)
	exec(0, with(out, "-shard", "1/2")...) // run 1 is done: skipped
	if runs, _ := filepath.Glob(filepath.Join(out, "runs", "*.json")); len(runs) != 3 {
		t.Errorf("after both shards: %d run files, want 3", len(runs))
	}
	merged, _ := exec(0, with(out, "-merge")...)
	single, _ := exec(0, with(filepath.Join(t.TempDir(), "single"))...)
	table := func(s string) string {
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "pca features") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if table(merged) == "" || table(merged) != table(single) {
		t.Errorf("the workers' merged table differs from a single process's:\n%s\n---\n%s", merged, single)
	}
}

// TestSubmitSlurm submits the quick plan to a fake sbatch (on $PATH): a
// job array of its 14 runs, each task running this binary with the given
// flags and -index of its task, and a merge job after it; the drawings are
// not read.
func TestSubmitSlurm(t *testing.T) {
	bin := fewshotBin(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "sbatch.log")
	fake := "#!/bin/sh\necho \"$@\" >> " + log + "\nn=$(wc -l < " + log + ")\necho \"$((100 + n))\"\n"
	if err := os.WriteFile(filepath.Join(dir, "sbatch"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, cache := filepath.Join(dir, "out"), filepath.Join(dir, "cache")
	code, stdout, stderr := clitest.Exec(t, bin, "-quick", "-out", out, "-cache", cache, "-quickdraw", filepath.Join(dir, "none"),
		"-submit", "slurm", "-parallel", "4", "-mem", "3072")
	if code != 0 {
		t.Fatalf("-submit slurm: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	calls, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "--parsable --array=0-13%4 ") || !strings.HasPrefix(lines[1], "--parsable --dependency=afterany:101 ") {
		t.Fatalf("sbatch calls:\n%s", calls)
	}
	script, err := os.ReadFile(strings.Fields(lines[0])[2])
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"#SBATCH --mem=3072\n", "-quick=true", "-cache=" + cache, "-out=" + out, `-index "$SLURM_ARRAY_TASK_ID"`} {
		if !strings.Contains(string(script), w) {
			t.Errorf("the array script lacks %q:\n%s", w, script)
		}
	}
	if strings.Contains(string(script), "-submit") || strings.Contains(string(script), "-parallel") {
		t.Errorf("the array script passes the submission's flags on to its tasks:\n%s", script)
	}
}
