package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/bench"
	"github.com/gdattn/gdattn/graph/npy"
)

// small shrinks a synthetic workload to a batch of 3 contexts.
func small(name string, t *testing.T) bench.Workload {
	w, err := bench.FindWorkload(name)
	if err != nil {
		t.Fatal(err)
	}
	w.Batch = 3
	return w
}

func TestExport(t *testing.T) {
	w := small("synthetic/gd-1", t)
	dir := t.TempDir()
	if err := export(w, dir); err != nil {
		t.Fatal(err)
	}
	x, err := npy.ReadFile(filepath.Join(dir, "x.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{3, 11, 10}; len(x.Shape) != 3 || x.Shape[0] != want[0] || x.Shape[1] != want[1] || x.Shape[2] != want[2] {
		t.Errorf("x shape %v, want %v", x.Shape, want)
	}
	y, err := npy.ReadFile(filepath.Join(dir, "y.npy"))
	if err != nil || y.Dtype != npy.Int64 || len(y.I64) != 33 {
		t.Errorf("y: %v, %+v, want 33 int64 labels", err, y)
	}
	var meta struct {
		Params []string `json:"params"`
		Loss   float64  `json:"loss"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err == nil {
		err = json.Unmarshal(b, &meta)
	}
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"we", "log_alpha", "kernel/log_gamma"}; len(meta.Params) != 3 || meta.Params[0] != want[0] || meta.Params[1] != want[1] || meta.Params[2] != want[2] {
		t.Errorf("params %v, want %v", meta.Params, want)
	}
	if !(meta.Loss > 0) {
		t.Errorf("loss %v, want > 0", meta.Loss)
	}
	for _, f := range []string{"p_we.npy", "g_we.npy", "p_log_alpha.npy", "g_kernel__log_gamma.npy"} {
		a, err := npy.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "p_log_alpha.npy" && (len(a.Shape) != 0 || len(a.F64) != 1) {
			t.Errorf("%s: shape %v, want a 0-d scalar", f, a.Shape)
		}
	}
}

// tinyLM shrinks a language workload (the check's code paths do not depend
// on the sizes): vocabulary 97, context 8, d' = 16, 4 heads, 2 sequences.
func tinyLM(name string, t *testing.T) bench.Workload {
	w, err := findWorkload(name, false)
	if err != nil {
		t.Fatal(err)
	}
	w.Vocab, w.Context, w.DPrime, w.Heads, w.Batch = 97, 8, 16, 4, 2
	return w
}

func TestExportLanguage(t *testing.T) {
	w := tinyLM("language/gdff-small", t)
	dir := t.TempDir()
	if err := export(w, dir); err != nil {
		t.Fatal(err)
	}
	ids, err := npy.ReadFile(filepath.Join(dir, "ids.npy"))
	if err != nil || ids.Dtype != npy.Int64 || len(ids.Shape) != 2 || ids.Shape[0] != 2 || ids.Shape[1] != 8 {
		t.Errorf("ids: %v, %+v, want (2, 8) int64", err, ids)
	}
	tg, err := npy.ReadFile(filepath.Join(dir, "targets.npy"))
	if err != nil || tg.Dtype != npy.Int64 || len(tg.I64) != 16 {
		t.Errorf("targets: %v, %+v, want 16 int64", err, tg)
	}
	for _, f := range []string{"p_wte__w.npy", "g_wte__w.npy", "p_wpe.npy", "g_head3__p.npy", "g_ff__mlp__w1.npy", "g_ln_f__bias.npy"} {
		if _, err := npy.ReadFile(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestFindWorkload(t *testing.T) {
	for _, c := range []struct {
		name  string
		paper bool
		model bench.Model
		ff    bool
		ctx   int
	}{
		{"language/gd-small", false, bench.ModelGDLM, false, bench.LMSmall.Context},
		{"language/gdff-small", false, bench.ModelGDLM, true, bench.LMSmall.Context},
		{"language/gpt-small", false, bench.ModelGPT, false, bench.LMSmall.Context},
		{"language/gpt-paper", true, bench.ModelGPT, false, bench.LMPaper.Context},
	} {
		w, err := findWorkload(c.name, c.paper)
		if err != nil || w.Name != c.name || w.Model != c.model || w.FF != c.ff || w.Context != c.ctx {
			t.Errorf("%s: got %+v, %v", c.name, w, err)
		}
	}
	for _, name := range []string{"language/gd-paper", "language/rnn-small", "language/gd-huge", "language-small/gdlm", "nope"} {
		if _, err := findWorkload(name, false); err == nil {
			t.Errorf("%s: got nil error", name)
		}
	}
	ws := []bench.Workload{}
	for _, n := range []string{"language/gd-small", "language/gpt-paper"} {
		w, _ := findWorkload(n, true)
		ws = append(ws, w)
	}
	if got := autoCheck(ws); got != "language/gd-small" {
		t.Errorf("autoCheck: got %q", got)
	}
}

// TestPeerAgrees runs peer.py check on exported models, where Debian's
// python3-torch is installed (it is not needed otherwise).
func TestPeerAgrees(t *testing.T) {
	const python = "/usr/bin/python3"
	if testing.Short() {
		t.Skip("starts PyTorch")
	}
	if err := exec.Command(python, "-c", "import torch, numpy").Run(); err != nil {
		t.Skipf("no PyTorch at %s (apt-get install -y python3-torch): %v", python, err)
	}
	names := []string{"synthetic/gd-1", "synthetic/gd-2", "synthetic/tf-1", "synthetic/tf-2",
		"language/gd-small", "language/gdff-small", "language/gpt-small"}
	var dirs []string
	for _, name := range names {
		w := bench.Workload{}
		if strings.HasPrefix(name, "language/") {
			w = tinyLM(name, t)
		} else {
			w = small(name, t)
		}
		dir := t.TempDir()
		if err := export(w, dir); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	res, err := peerCheck(python, "peer.py", dirs) // one PyTorch start for all
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		t.Logf("%s, %s: loss %.12f vs %.12f, max |Δ grad| %.1e (max |grad| %.2g)", names[i/numImpls], r.Impl, r.LossGo, r.LossPy, r.GradDiff, r.GradMax)
		if !r.OK {
			t.Errorf("%s, %s: got %+v, want the same loss and gradients", names[i/numImpls], r.Impl, r)
		}
	}
}

func TestSweepWorkloads(t *testing.T) {
	ws, err := sweepWorkloads("synthetic/gd-1, language/gd-small,synthetic/tf-1/N=7", "10,125", false)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		n    int
	}{{"synthetic/gd-1/N=10", 10}, {"synthetic/gd-1/N=125", 125}, {"language/gd-small", 0}, {"synthetic/tf-1/N=7", 7}}
	if len(ws) != len(want) {
		t.Fatalf("got %d workloads, want %d", len(ws), len(want))
	}
	for i, w := range want {
		if ws[i].Name != w.name || ws[i].N != w.n {
			t.Errorf("workload %d: got %s N=%d, want %s N=%d", i, ws[i].Name, ws[i].N, w.name, w.n)
		}
		// a worker finds the swept workload by its name
		if w.n > 0 {
			got, err := findWorkload(w.name, false)
			if err != nil || got.N != w.n || got.Batch != ws[i].Batch {
				t.Errorf("findWorkload(%q): got %+v, %v", w.name, got, err)
			}
		}
	}
	for _, bad := range [][2]string{{"synthetic/gd-1", "0"}, {"synthetic/gd-1", "x"}, {"synthetic/gd-1/N=0", ""}, {"language/gd-small/N=10", ""}} {
		if _, err := sweepWorkloads(bad[0], bad[1], false); err == nil {
			t.Errorf("sweepWorkloads(%q, %q): got nil error", bad[0], bad[1])
		}
	}
}

func TestThreadEnv(t *testing.T) {
	env := threadEnv("3")
	last := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		last[k] = v
	}
	for _, v := range []string{"GOMAXPROCS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"} {
		if last[v] != "3" {
			t.Errorf("%s: got %q, want 3", v, last[v])
		}
	}
}

// TestPeerBLAS runs peer.py blas where Debian's python3-torch is
// installed: it must name a BLAS library and report positive rates, and
// the header line must carry them.
func TestPeerBLAS(t *testing.T) {
	const python = "/usr/bin/python3"
	if testing.Short() {
		t.Skip("starts PyTorch")
	}
	if err := exec.Command(python, "-c", "import torch, numpy").Run(); err != nil {
		t.Skipf("no PyTorch at %s (apt-get install -y python3-torch): %v", python, err)
	}
	b, err := peerBLAS(python, "peer.py", "1")
	if err != nil {
		t.Fatal(err)
	}
	if b.BLAS == "" || b.BLAS == "unknown" || len(b.Libraries) == 0 || !(b.GFLOPSCPU > 0) || !(b.GFLOPSWall > 0) || b.Threads != 1 || b.Size != 1024 {
		t.Errorf("peer.py blas: got %+v, want a named library and positive rates on 1 thread", b)
	}
	line := blasLine(b, b, 1)
	if !strings.Contains(line, b.BLAS) || !strings.Contains(line, "GFLOP/s") {
		t.Errorf("header line %q lacks the library or the rate", line)
	}
	t.Logf("%s", line)
}

func TestRatioRange(t *testing.T) {
	lo, hi := ratioRange([]float64{1, 4, 3}, []float64{2, 2, 3})
	if lo != 0.5 || hi != 2 {
		t.Errorf("got %v–%v, want 0.5–2", lo, hi)
	}
}
