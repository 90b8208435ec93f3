package quadrant

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/numeric"
	"github.com/gdattn/gdattn/layers"
)

// TestGridProbsMatchesModel checks the one-pass grid evaluation (T = N + G
// tokens, keys cut at N) against each model's own forward pass on a batch
// of G ordinary sequences whose queries are the grid points, for GD and
// a randomly initialised TF, every kernel. They must agree to rounding.
func TestGridProbsMatchesModel(t *testing.T) {
	const N, side = 12, 4
	task, err := data.NewQuadrant(data.QuadrantConfig{N: N}, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := task.Sample(1, rand.New(rand.NewPCG(4, 4)))
	if err != nil {
		t.Fatal(err)
	}
	grid := squareGrid(side)
	G := side * side
	T := N + 1
	// The batch model sees context b with the query moved to each grid point.
	x := make([]float64, G*T*2)
	y := make([]int, G*T)
	for g := 0; g < G; g++ {
		copy(x[g*T*2:], b.X[:N*2])
		copy(x[(g*T+N)*2:], grid[2*g:2*g+2])
		copy(y[g*T:], b.Y[:N])
		y[g*T+N] = -1
	}
	for _, kern := range layers.KernelNames() {
		for _, name := range ModelNames {
			t.Run(kern+"/"+name, func(t *testing.T) {
				m, err := build(runKey{Kernel: kern, Model: name, Seed: 7, N: N}, G)
				if err != nil {
					t.Fatal(err)
				}
				if err := m.m.Feed(x, y); err != nil {
					t.Fatal(err)
				}
				vm, err := graph.NewMachine(m.s, nil, graph.MachineOptions{NoGrad: true})
				if err != nil {
					t.Fatal(err)
				}
				defer vm.Close()
				if err := vm.Run(); err != nil {
					t.Fatal(err)
				}
				logits, err := graph.Values(m.m.QueryLogits())
				if err != nil {
					t.Fatal(err)
				}
				l, err := m.layer()
				if err != nil {
					t.Fatal(err)
				}
				got, err := gridProbs(l, b.X[:N*2], b.Y[:N], grid)
				if err != nil {
					t.Fatal(err)
				}
				C := l.C
				worst := 0.0
				for g := 0; g < G; g++ {
					want := numeric.Softmax(logits[g*C : (g+1)*C])
					for c := range want {
						worst = math.Max(worst, math.Abs(got[g*C+c]-want[c]))
					}
				}
				if worst > 1e-12 {
					t.Errorf("max |p_grid − p_model| = %.3g, want <= 1e-12", worst)
				}
			})
		}
	}
}

func TestSquareGrid(t *testing.T) {
	got := squareGrid(3)
	want := []float64{-1, 1, 0, 1, 1, 1, -1, 0, 0, 0, 1, 0, -1, -1, 0, -1, 1, -1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("squareGrid(3) = %v, want %v", got, want)
	}
}

func TestGridProbsErrors(t *testing.T) {
	m, err := build(runKey{Kernel: "rbf", Model: "gd", Seed: 1, N: 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.layer()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		x    []float64
		y    []int
		grid []float64
	}{
		{"no context", nil, nil, []float64{0, 0}},
		{"x length", []float64{0, 0, 0}, []int{1, 2}, []float64{0, 0}},
		{"odd grid", []float64{0, 0}, []int{1}, []float64{0}},
		{"label range", []float64{0, 0}, []int{20}, []float64{0, 0}},
	}
	for _, tt := range tests {
		if _, err := gridProbs(l, tt.x, tt.y, tt.grid); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

// TestRunTiny runs the whole experiment at a tiny size, then again to check
// that it resumes from the journal without retraining.
func TestRunTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	dir := t.TempDir()
	o := Options{Kernels: "softmax,linear", Seeds: 2, Seed: 1, DataSeed: 2, L: 64, M: 48, EvalM: 16, N: 10,
		Epochs: 2, Every: 1, Batch: 16, LR: 1e-2, Grid: 9, Context: -1, Out: dir, Figdir: filepath.Join(dir, "figs"), Quiet: true}
	if err := Run(o, "test"); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res results
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Kernels) != 2 || res.Kernels[0].Kernel != "softmax" {
		t.Fatalf("results for %d kernels, want softmax and linear", len(res.Kernels))
	}
	for _, kr := range res.Kernels {
		for _, name := range ModelNames {
			mr := kr.Models[name]
			if mr == nil || len(mr.Top1.Values) != 2 || len(mr.Curve) != 2 || mr.Curve[1].Step != 8 {
				t.Fatalf("%s %s: %+v, want 2 seeds and 2 curve points (steps 4, 8)", kr.Kernel, name, mr)
			}
		}
		if kr.Analysis == nil || kr.Map == nil || len(kr.Map.Categories) == 0 {
			t.Errorf("%s: analysis %v, map %v", kr.Kernel, kr.Analysis, kr.Map)
		}
	}
	for _, f := range append(res.Figures, filepath.Join(dir, "figs", "quadrant_fig6_accuracy.png")) {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("figure %s: %v", f, err)
		}
	}
	// A second run finds every run done: no result file changes.
	files, _ := filepath.Glob(filepath.Join(dir, "runs", "*.json"))
	if len(files) != 8 {
		t.Fatalf("%d result files, want 8", len(files))
	}
	before := map[string]string{}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		before[f] = string(b)
	}
	if err := Run(o, "test"); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if b, _ := os.ReadFile(f); string(b) != before[f] {
			t.Errorf("the second run retrained %s", f)
		}
	}

	// Two shards, then -merge, on a fresh -out: the same results.json
	// numbers; -merge refuses while a shard is missing.
	o2 := o
	o2.Out, o2.Figdir = t.TempDir(), ""
	o2.Exp.Shard = "0/2"
	if err := Run(o2, "test"); err != nil {
		t.Fatal(err)
	}
	o2.Exp.Shard, o2.Exp.Merge = "", true
	if err := Run(o2, "test"); err == nil || !strings.Contains(err.Error(), "4 of 8 runs") {
		t.Errorf("-merge with a shard missing: %v", err)
	}
	o2.Exp.Merge, o2.Exp.Index = false, "3"
	if err := Run(o2, "test"); err != nil {
		t.Fatal(err)
	}
	o2.Exp.Index, o2.Exp.Shard = "", "1/2"
	if err := Run(o2, "test"); err != nil {
		t.Fatal(err)
	}
	o2.Exp.Shard, o2.Exp.Merge = "", true
	if err := Run(o2, "test"); err != nil {
		t.Fatal(err)
	}
	raw2, _ := os.ReadFile(filepath.Join(o2.Out, "results.json"))
	var res2 results
	json.Unmarshal(raw2, &res2)
	for k, kr := range res.Kernels {
		for _, name := range ModelNames {
			if a, b := kr.Models[name].Top1.Values, res2.Kernels[k].Models[name].Top1.Values; fmt.Sprint(a) != fmt.Sprint(b) {
				t.Errorf("%s %s top-1: sharded %v, one process %v", kr.Kernel, name, b, a)
			}
		}
		if a, b := fmt.Sprint(kr.Map.Categories), fmt.Sprint(res2.Kernels[k].Map.Categories); a != b {
			t.Errorf("%s map: sharded %s, one process %s", kr.Kernel, b, a)
		}
	}

}

// TestKeySizes: the task sizes enter the journal key only when they differ
// from the defaults (so older journals still match), and build uses them.
func TestKeySizes(t *testing.T) {
	def := keyOf(Options{C: 20, DPrime: 5, N: 4}, "rbf", "gd", 1)
	if def.C != 0 || def.DPrime != 0 {
		t.Fatalf("default sizes in the key: C=%d DPrime=%d, want both omitted", def.C, def.DPrime)
	}
	big := keyOf(Options{C: 100, DPrime: 25, N: 4}, "rbf", "gd", 1)
	if C, dp := big.sizes(); C != 100 || dp != 25 {
		t.Fatalf("sizes() = %d, %d, want 100, 25", C, dp)
	}
	m, err := build(big, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.gd.We.Shape(); got[0] != 25 || got[1] != 100 {
		t.Fatalf("W_e shape %v, want (25, 100)", got)
	}
}
