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
