package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/examples/internal/synthetic"
	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// manifestCommand returns the command of the (first) container of the
// Kubernetes manifest at path, and the Job's completions (0 if none).
func manifestCommand(t *testing.T, path string) ([]string, int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*command: (\[.*\])\s*$`).FindSubmatch(raw)
	if m == nil {
		t.Fatalf("%s: no command: [...] line", path)
	}
	var cmd []string
	if err := json.Unmarshal(m[1], &cmd); err != nil { // a YAML flow sequence of quoted strings is JSON
		t.Fatalf("%s: command %s: %v", path, m[1], err)
	}
	completions := 0
	if c := regexp.MustCompile(`(?m)^\s*completions: (\d+)`).FindSubmatch(raw); c != nil {
		fmt.Sscan(string(c[1]), &completions)
	}
	return cmd, completions
}

// TestKubernetesIndexedJob runs the worker of deploy/kubernetes's Indexed
// Job as its pods would: the manifest's command, with $JOB_COMPLETION_INDEX
// set to 0..n-1 (and one index twice, a retried pod), the results folder a
// temporary one standing for the shared volume and the sizes shrunk so that
// it takes seconds; then the merge Job's command. The merged figure must
// equal a single-process run's. (It checks the commands, not Kubernetes:
// no cluster runs here.)
func TestKubernetesIndexedJob(t *testing.T) {
	manifest := filepath.Join("..", "..", "deploy", "kubernetes", "synthetic-fig2.yaml")
	raw, _ := os.ReadFile(manifest)
	if !bytes.Contains(raw, []byte("completionMode: Indexed")) {
		t.Errorf("%s is not an Indexed Job", manifest)
	}
	worker, completions := manifestCommand(t, manifest)
	merge, _ := manifestCommand(t, filepath.Join("..", "..", "deploy", "kubernetes", "synthetic-fig2-merge.yaml"))
	if worker[0] != "synthetic" || merge[0] != "synthetic" || !strings.Contains(strings.Join(worker, " "), "-index env") {
		t.Fatalf("worker %q, merge %q: want synthetic ... -index env and synthetic ... -merge", worker, merge)
	}
	// completions is the full plan's run count.
	st, err := synthetic.ResolveSweep(synthetic.Options{Sweep: "fig2", Set: map[string]bool{"sweep": true}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if completions != len(p.Runs) {
		t.Errorf("completions: %d, the plan has %d runs", completions, len(p.Runs))
	}

	bin := clitest.Build(t, ".")
	vol := t.TempDir()
	shrink := []string{"-Ls", "16,24", "-epochs", "1", "-M", "8", "-batch", "8", "-seeds", "2"} // 16 runs
	args := func(cmd []string) []string {
		var out []string
		for _, a := range cmd[1:] {
			out = append(out, strings.Replace(a, "/results", vol, 1))
		}
		return append(out, shrink...)
	}
	pod := func(index int, cmd []string) string {
		c := exec.Command(bin, args(cmd)...)
		c.Dir = t.TempDir()
		c.Env = append(os.Environ(), fmt.Sprintf("JOB_COMPLETION_INDEX=%d", index))
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("pod %d: %v\n%s", index, err, out)
		}
		return string(out)
	}
	for k := 0; k < 16; k++ {
		pod(k, worker)
	}
	if out := pod(3, worker); !strings.Contains(out, "this worker runs 0 of them") {
		t.Errorf("a retried pod 3 ran again:\n%s", out)
	}
	files, _ := filepath.Glob(filepath.Join(vol, "synthetic", "runs", "*"))
	if len(files) != 16 {
		t.Errorf("%d files on the volume, want 16 results", len(files))
	}
	if out := pod(0, merge); !strings.Contains(out, "16 done, 0 missing") {
		t.Errorf("merge:\n%s", out)
	}
	// The same plan in one process.
	ref := t.TempDir()
	c := exec.Command(bin, append([]string{"-sweep", "fig2", "-results", ref, "-quiet"}, shrink...)...)
	c.Dir = t.TempDir()
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("single process: %v\n%s", err, out)
	}
	a, _ := os.ReadFile(filepath.Join(vol, "synthetic", "fig2.csv"))
	b, _ := os.ReadFile(filepath.Join(ref, "fig2.csv"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("fig2.csv of the Indexed Job:\n%s\nof one process:\n%s", a, b)
	}
}

// TestDuplicateWorkers runs the same run in two worker processes at once
// (a duplicated array task, a retried pod whose first attempt still runs):
// both succeed and leave one result, identical to a single process's.
func TestDuplicateWorkers(t *testing.T) {
	bin := clitest.Build(t, ".")
	dir, ref := t.TempDir(), t.TempDir()
	args := []string{"-sweep", "fig2", "-Ls", "16", "-epochs", "1", "-M", "8", "-batch", "8", "-seeds", "1", "-quiet", "-index", "3"}
	outs := make([][]byte, 2)
	errs := make([]error, 2)
	done := make(chan int)
	for w := 0; w < 2; w++ {
		go func(w int) {
			c := exec.Command(bin, append(args, "-results", dir)...)
			c.Dir = t.TempDir()
			outs[w], errs[w] = c.CombinedOutput()
			done <- w
		}(w)
	}
	<-done
	<-done
	for w := range errs {
		if errs[w] != nil {
			t.Fatalf("worker %d: %v\n%s", w, errs[w], outs[w])
		}
	}
	c := exec.Command(bin, append(args, "-results", ref)...)
	c.Dir = t.TempDir()
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("single worker: %v\n%s", err, out)
	}
	files, _ := os.ReadDir(filepath.Join(dir, "runs"))
	refFiles, _ := filepath.Glob(filepath.Join(ref, "runs", "*.json"))
	if len(files) != 1 || len(refFiles) != 1 || files[0].Name() != filepath.Base(refFiles[0]) {
		t.Fatalf("runs/ holds %v, want one result (%v)", files, refFiles)
	}
	output := func(path string) string {
		raw, _ := os.ReadFile(path)
		var r struct {
			Output json.RawMessage `json:"output"`
		}
		json.Unmarshal(raw, &r)
		return string(r.Output)
	}
	if a, b := output(filepath.Join(dir, "runs", files[0].Name())), output(refFiles[0]); a == "" || a != b {
		t.Errorf("duplicated run's output %s, single worker's %s", a, b)
	}
}
