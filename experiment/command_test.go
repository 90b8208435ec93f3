package experiment

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWritePlan: WritePlan prints the plan as Plan.WriteText and
// Plan.WriteJSON do, with the store's results marked done.
func TestWritePlan(t *testing.T) {
	p := testPlan(t)
	s, _ := OpenStore(t.TempDir())
	if err := Execute(p, s, []int{1}, func(i int, r Run) (any, error) { return output(r) }, nil); err != nil {
		t.Fatal(err)
	}
	done := func(k string) bool { return k == p.Runs[1].Key }
	for _, asJSON := range []bool{false, true} {
		var got, want bytes.Buffer
		if err := WritePlan(&got, p, s, asJSON); err != nil {
			t.Fatal(err)
		}
		write := p.WriteText
		if asJSON {
			write = p.WriteJSON
		}
		if err := write(&want, done); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("WritePlan(json=%v):\n%s\nwant\n%s", asJSON, got.String(), want.String())
		}
	}
	if err := WritePlan(&bytes.Buffer{}, p, nil, false); err == nil {
		t.Error("WritePlan with a nil store: no error")
	}
}

// TestSubmit: Submit submits the runs without a result, with its scripts
// in the store's slurm folder. WorkerCommand refuses a program in go
// test's temporary go-build folder, so the test reruns itself from a copy
// of the test binary.
func TestSubmit(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("GDATTN_SUBMIT_CHILD") == "" {
		b, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		cp := filepath.Join(t.TempDir(), "experiment.test")
		if err := os.WriteFile(cp, b, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(cp, "-test.run", "^TestSubmit$", "-test.v")
		cmd.Env = append(os.Environ(), "GDATTN_SUBMIT_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestSubmit") {
			t.Fatalf("TestSubmit from a copy of the test binary: %v\n%s", err, out)
		}
		return
	}
	dir := t.TempDir()
	sbatchLog := filepath.Join(dir, "sbatch.log")
	fake := filepath.Join(dir, "sbatch")
	script := "#!/bin/sh\necho \"$@\" >> " + sbatchLog + "\nn=$(wc -l < " + sbatchLog + ")\necho \"$((100 + n))\"\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p := testPlan(t)
	s, _ := OpenStore(filepath.Join(dir, "res"))
	if err := Execute(p, s, []int{0}, func(i int, r Run) (any, error) { return output(r) }, nil); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("results", "", "")
	if err := fs.Parse([]string{"-results", "res"}); err != nil {
		t.Fatal(err)
	}
	sub, err := Submit(&bytes.Buffer{}, p, s, fs, SlurmOptions{Parallel: 1, CPUs: 1, MemMB: 500, TimeFactor: 2, Sbatch: fake})
	if err != nil {
		t.Fatal(err)
	}
	if sub.ArrayJob != "101" || sub.MergeJob != "102" {
		t.Errorf("submission %+v", sub)
	}
	if !strings.HasPrefix(sub.Script, filepath.Join(dir, "res", "slurm")+string(filepath.Separator)) {
		t.Errorf("array script %s is not in the store's slurm folder", sub.Script)
	}
	calls, _ := os.ReadFile(sbatchLog)
	if want := "--array=1-7%1 "; !strings.Contains(string(calls), want) {
		t.Errorf("sbatch calls %q lack %q", calls, want)
	}
	if _, err := Submit(&bytes.Buffer{}, p, nil, fs, SlurmOptions{Sbatch: fake}); err == nil {
		t.Error("Submit with a nil store: no error")
	}
}
