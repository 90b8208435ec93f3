package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/gdattn/gdattn/graph/cuda"
)

// runCmd runs a subcommand in-process and decodes its JSON lines.
func runCmd(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	var out, log bytes.Buffer
	if err := command(args, &out, &log); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, log.String())
	}
	var rows []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: line %q is not JSON: %v", args, l, err)
		}
		rows = append(rows, m)
	}
	return rows
}

// TestExactOnCPU runs the exactness stage without a device (the Go VM): every
// kernel, both constructions, K = 1..2, each within 1e-10 of the reference.
func TestExactOnCPU(t *testing.T) {
	rows := runCmd(t, "exact", "-device", "cpu", "-kmax", "2")
	if len(rows) != 2*5*2 {
		t.Fatalf("%d results, want 20", len(rows))
	}
	for _, r := range rows {
		if r["kind"] != "exact" || r["ok"] != true || !(num(r, "max_abs_err") <= 1e-10) {
			t.Errorf("result %v", r)
		}
	}
}

// TestParityOnCPU compares the CPU with itself: the same losses, so the stage's
// own plumbing (two runners from one seed, step by step) is what is tested.
func TestParityOnCPU(t *testing.T) {
	rows := runCmd(t, "parity", "-device", "cpu", "-steps", "2", "-workloads", "synthetic/gd-1", "-dtypes", "float64,float32")
	if len(rows) != 4 {
		t.Fatalf("%d results, want 4 (2 dtypes × 2 steps)", len(rows))
	}
	for _, r := range rows {
		if r["ok"] != true || num(r, "rel_diff") > 1e-12 || !(num(r, "cpu_loss") > 0) {
			t.Errorf("result %v", r)
		}
	}
	if num(rows[0], "cpu_loss") == num(rows[1], "cpu_loss") {
		t.Errorf("the loss did not change after a step: %v", rows[:2])
	}
}

// TestCurveOnCPU trains two steps of the small preset on a tiny corpus.
func TestCurveOnCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a language model with the full GPT-2 vocabulary")
	}
	corpus := filepath.Join(t.TempDir(), "stories.txt")
	var text strings.Builder
	for i := range 40 {
		fmt.Fprintf(&text, "Once upon a time there was a little cat number %d. It liked to play in the garden with a red ball, and every day it ran and jumped.\n\n", i)
	}
	if err := os.WriteFile(corpus, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := runCmd(t, "curve", "-device", "cpu", "-corpus", corpus, "-preset", "small", "-batch", "2", "-max-steps", "2")
	if len(rows) != 3 || rows[0]["kind"] != "curve_setup" || rows[1]["kind"] != "curve" || rows[2]["kind"] != "curve" {
		t.Fatalf("rows %v, want a setup line and 2 steps", rows)
	}
	if l := num(rows[1], "loss"); !(l > 9 && l < 12) { // about ln(50258) = 10.8 at the start
		t.Errorf("first loss %v, want about ln(50258) = 10.8", l)
	}
	if num(rows[2], "step") != 2 {
		t.Errorf("second row %v", rows[2])
	}
}

// countBackend is a Backend with only memory, for the meter.
type countBackend struct {
	cuda.Backend
	next cuda.Ptr
	live map[cuda.Ptr]bool
}

func (c *countBackend) Alloc(b int64) (cuda.Ptr, error) {
	c.next += cuda.Ptr(b + 256)
	c.live[c.next] = true
	return c.next, nil
}

func (c *countBackend) Free(p cuda.Ptr) error {
	if !c.live[p] {
		return fmt.Errorf("double free of %#x", p)
	}
	delete(c.live, p)
	return nil
}

func (c *countBackend) CopyHtoD(cuda.Ptr, unsafe.Pointer, int64) error { return nil }

// TestMeter checks the peak-memory count of the timing stage.
func TestMeter(t *testing.T) {
	m := &meter{Backend: &countBackend{live: map[cuda.Ptr]bool{}}, sizes: map[cuda.Ptr]int64{}}
	a, _ := m.Alloc(100)
	b, _ := m.Alloc(50)
	if err := m.Free(a); err != nil {
		t.Fatal(err)
	}
	c, _ := m.Alloc(30)
	if got := m.Peak(); got != 150 {
		t.Errorf("peak %d, want 150", got)
	}
	d, _ := m.Alloc(200)
	for _, p := range []cuda.Ptr{b, c, d} {
		if err := m.Free(p); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.Peak(); got != 280 {
		t.Errorf("peak %d, want 280 (50 + 30 + 200)", got)
	}
	if m.cur != 0 {
		t.Errorf("%d bytes still counted after freeing everything", m.cur)
	}
}

// TestReport renders testdata/out, a hand-made $OUT (not a measurement) with
// a failed test, a result out of tolerance, a PyTorch compile error, a
// gdattn workload error, JSON lines cut by a timeout, three rounds of gpu
// time, PyTorch's fused and compiled configurations (a first-round line
// superseded by the final one), a nofuse stage, a graph stage, and checks what the
// report says about each; then an empty directory, where every section says
// it did not run.
func TestReport(t *testing.T) {
	var b strings.Builder
	if err := writeReport(&b, "testdata/out", ""); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"# gdattn on a GPU: Fixture GPU (a test file, not a measurement)",
		"| driver | 999.1 |",
		"```\nbash scripts/gpu-device.sh\n```",
		"| parity | 100 | 100 | 124 (cut by its time limit) |",
		"Top-level tests: 2 passed, 1 failed, 1 skipped; the binary's last word: `FAIL`.",
		"Backend: Fixture GPU (sm_90, 1 SMs, 1 GiB), libcublas.so.13.",
		"Failed: TestExecutorWideRows.",
		"- TestGPUBackendOnFakeDriver: driver_fake_test.go:29: emu_kernels.c not here",
		"- 1: exec_layers_test.go:62: the linear kernel has no g",
		"| structured | softmax | 1e-16 | 3e-09 |",
		"| literal | softmax | 2e-16 | — |",
		"1 of 3 cases out of tolerance.",
		"| synthetic/gd-2 | gd K=2 B=512 | float64 | 2 | 2.5 | 2.5 | 1e-16 | 3e-16 | 1e-10 | yes |",
		"| language-small/gpt | gpt B=8 | float32 | 1 | 10.8 | 10.81 | 0.0009 | — | 0.0001 | **no** |",
		"PyTorch 2.11.0, float32 matmul precision \"highest\"",
		"| synthetic/gd-1 | 2.000 [1.800–2.400] | 5.000 / 4.000 | 3.500 [3.400–3.900] | 3.000 [2.900–3.300] (reduce-overhead) | 3.000 [2.900–3.300] (compile-reduce-overhead) | 0.67× | 10 | 20 | none |",
		"- synthetic/gd-1, PyTorch compile-max-autotune idiomatic: BackendCompilerFailed: no C compiler",
		"- language-paper/gdlm, gdattn: cuda: out of memory",
		"gpu 700 MiB, python3 900 MiB",
		"| language-paper/gpt | not reached | not reached / not reached | not reached | not reached | — | — | — | — | — |",
		"- compile language-paper/gdlm: not run",
		"27965952 parameters",
		"40 steps in 2.0 s (median step 50.0 ms); loss 10.9000 at step 1, 7.0000 at step 40.",
		"trained 3 steps of the same run; on those the losses differ by at most 0.0001 relative",
		"| 3 | 10.7000 | 10.7011 | 0.1 |",
		"| 40 | 7.0000 | — | 2.0 |",
		"| synthetic/gd-1 | 2.000 | 2.600 | 1.30× | — / 41 |",
		"- language-paper/gdlm, unfused: cuda: out of memory",
		"| synthetic/gd-1 | 2.000 | 1.600 | 1.25× | — / 1 + 1 graph | replaying the step captured with clip norm 0 |",
		"- language-paper/gpt, captured: cuda: capture failed: fixture",
		"no peak known for \"Fixture GPU (a test file, not a measurement)\"",
		"- language-small/gdlm, 10.1 GFLOP a step: gdattn 1.0 TFLOP/s; PyTorch best 0.8 TFLOP/s (eager)",
		"- language-paper/gdlm, 179.2 GFLOP a step: gdattn not measured; PyTorch best not measured",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s", got)
	}

	b.Reset()
	if err := writeReport(&b, t.TempDir(), "cmd"); err != nil {
		t.Fatal(err)
	}
	empty := b.String()
	if n := strings.Count(empty, "Not run, or it wrote nothing"); n != 6 {
		t.Errorf("empty directory: %d sections say they did not run, want 6:\n%s", n, empty)
	}
}

// TestFP32Peak: GPU names as nvidia-smi and the backend print them map to
// their model's float32 peak; others have none; peakShare's rate and share.
func TestFP32Peak(t *testing.T) {
	for _, c := range []struct {
		name, model string
		tflops      float64
	}{
		{"NVIDIA H100 80GB HBM3", "H100 SXM", 67},
		{"NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79 GiB)", "H100 SXM", 67},
		{"NVIDIA H100 PCIe", "H100 PCIe", 51},
		{"NVIDIA H100 NVL", "H100 NVL", 60},
		{"NVIDIA H200", "H200 SXM", 67},
		{"NVIDIA H200 NVL", "H200 NVL", 60},
		{"NVIDIA A100-SXM4-80GB", "A100", 19.5},
		{"NVIDIA A100 80GB PCIe", "A100", 19.5},
		{"Tesla V100-SXM2-16GB", "V100 SXM2", 15.7},
		{"Tesla V100-PCIE-32GB", "V100 PCIe", 14},
		{"Tesla V100S-PCIE-32GB", "V100S PCIe", 16.4},
		{"NVIDIA GeForce RTX 4090", "", 0},
		{"", "", 0},
	} {
		model, tflops, ok := fp32Peak(c.name)
		if model != c.model || tflops != c.tflops || ok != (c.model != "") {
			t.Errorf("fp32Peak(%q) = %q, %g, %v; want %q, %g", c.name, model, tflops, ok, c.model, c.tflops)
		}
	}
	if got, want := peakShare(6.7e12, 1000, "NVIDIA H100 80GB HBM3"), "6.7 TFLOP/s, 0.100 of the H100 SXM's float32 peak of 67"; got != want {
		t.Errorf("peakShare: %q, want %q", got, want)
	}
	if got, want := peakShare(2e12, 100, "Fixture GPU"), "20.0 TFLOP/s"; got != want {
		t.Errorf("peakShare, unknown GPU: %q, want %q", got, want)
	}
	if got := peakShare(0, 100, "NVIDIA H200"); got != "" {
		t.Errorf("peakShare without FLOPs: %q", got)
	}
	if f := stepFLOPs("language-paper/gdlm"); f <= 0 {
		t.Errorf("stepFLOPs(language-paper/gdlm) = %g", f)
	}
	if f := stepFLOPs("synthetic/gd-1"); f != 0 {
		t.Errorf("stepFLOPs(synthetic/gd-1) = %g, want 0 (not counted)", f)
	}
}
