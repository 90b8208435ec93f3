package theorem2

import (
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testLayout is the attention-parameter layout of a single-head TF on the
// quadrant tokens (d = 2, d' = 5, D = DK = DV = 12).
func testLayout() *layout {
	l := &layout{}
	l.add("log_gamma", 1, 1)
	for _, n := range []string{"wq", "wk", "wv", "wo"} {
		l.add(n, 12, 12)
	}
	return l
}

// TestCategoriesPartition checks that the categories form an orthonormal
// basis of the attention parameters, that the first three span the kernel
// of the symmetry projection and the last two its range.
func TestCategoriesPartition(t *testing.T) {
	l := testLayout()
	cats := categories(l, 2, 5, true)
	var all []direction
	for _, c := range cats {
		all = append(all, c.dirs...)
	}
	if len(all) != l.total {
		t.Fatalf("%d directions for %d parameters", len(all), l.total)
	}
	dense := func(d direction) []float64 {
		v := make([]float64, l.total)
		for i, j := range d.idx {
			v[j] += d.coef[i]
		}
		return v
	}
	vs := make([][]float64, len(all))
	for i, d := range all {
		vs[i] = dense(d)
	}
	for i := range vs {
		for j := i; j < len(vs); j++ {
			dot := 0.0
			for k := range vs[i] {
				dot += vs[i][k] * vs[j][k]
			}
			want := 0.0
			if i == j {
				want = 1
			}
			if math.Abs(dot-want) > 1e-12 {
				t.Fatalf("<%s, %s> = %v, want %v", all[i].label, all[j].label, dot, want)
			}
		}
	}
	for ci, c := range cats {
		for _, d := range c.dirs {
			v := dense(d)
			p := symmetric(l, 2, v)
			for k := range v {
				want := v[k] // the symmetric categories are fixed
				if ci < 3 {
					want = 0 // the forbidden ones are annihilated
				}
				if math.Abs(p[k]-want) > 1e-12 {
					t.Fatalf("category %q, direction %s: symmetric() changes coordinate %d to %v, want %v", c.Name, d.label, k, p[k], want)
				}
			}
		}
	}
}

// act applies the symmetry U (2×2 orthogonal) to flat attention
// parameters: x rows of W_Q, W_K, W_V are multiplied by Uᵀ on the left and
// x columns of W_Q, W_K, P by U on the right.
func act(l *layout, u [4]float64, g []float64) []float64 {
	out := append([]float64(nil), g...)
	for k, name := range l.names {
		R, Cc, off := l.rows[k], l.cols[k], l.off[k]
		at := func(v []float64, r, c int) float64 { return v[off+r*Cc+c] }
		if name == "wq" || name == "wk" || name == "wv" {
			tmp := append([]float64(nil), out...)
			for c := 0; c < Cc; c++ {
				for r := 0; r < 2; r++ { // (Uᵀ A)[r, c] = Σ_s U[s, r] A[s, c]
					out[off+r*Cc+c] = u[0*2+r]*at(tmp, 0, c) + u[1*2+r]*at(tmp, 1, c)
				}
			}
		}
		if name == "wq" || name == "wk" || name == "wo" {
			tmp := append([]float64(nil), out...)
			for r := 0; r < R; r++ {
				for c := 0; c < 2; c++ { // (A U)[r, c] = Σ_s A[r, s] U[s, c]
					out[off+r*Cc+c] = at(tmp, r, 0)*u[0*2+c] + at(tmp, r, 1)*u[1*2+c]
				}
			}
		}
	}
	return out
}

// TestSymmetricIsGroupAverage checks symmetric() against the average of
// the action over the 8 symmetries of the square and over the 16 of the
// regular octagon (both give the O(2) Haar average for these actions).
func TestSymmetricIsGroupAverage(t *testing.T) {
	l := testLayout()
	rng := rand.New(rand.NewPCG(1, 1))
	g := make([]float64, l.total)
	for i := range g {
		g[i] = rng.NormFloat64()
	}
	want := symmetric(l, 2, g)
	for _, m := range []int{4, 8} {
		avg := make([]float64, l.total)
		for k := 0; k < m; k++ {
			s, c := math.Sincos(2 * math.Pi * float64(k) / float64(m))
			for _, u := range [][4]float64{{c, -s, s, c}, {c, s, s, -c}} { // rotation, reflection
				for i, v := range act(l, u, g) {
					avg[i] += v / float64(2*m)
				}
			}
		}
		for i := range avg {
			if math.Abs(avg[i]-want[i]) > 1e-12 {
				t.Fatalf("dihedral group of order %d: average differs from symmetric() at %d: %v vs %v", 2*m, i, avg[i], want[i])
			}
		}
	}
}

// TestStats checks the Monte Carlo statistics on synthetic gradients: a
// zero-mean sample passes Hotelling's test, a shifted one fails it, and
// directions that are zero in every sample are counted as structural.
func TestStats(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	const n, p = 400, 5
	cat := category{Name: "test"}
	for i := 0; i < p+2; i++ {
		cat.dirs = append(cat.dirs, direction{label: string(rune('a' + i)), idx: []int{i}, coef: []float64{1}})
	}
	sample := func(shift float64) [][]float64 {
		gs := make([][]float64, n)
		for k := range gs {
			gs[k] = make([]float64, p+2) // the last two stay 0: structural
			for i := 0; i < p; i++ {
				gs[k][i] = rng.NormFloat64() + shift
			}
			gs[k][1] = gs[k][0] // a collinear pair: the covariance has rank p−1
		}
		return gs
	}
	null := stats(cat, sample(0), true)
	if null.Structural != 2 || null.Active != p || null.Rank != p-1 {
		t.Errorf("structural %d, active %d, rank %d; want 2, %d, %d", null.Structural, null.Active, null.Rank, p, p-1)
	}
	if null.P < 1e-3 {
		t.Errorf("zero-mean sample: p-value %v, want a large one", null.P)
	}
	// Noise floor: sqrt(tr Cov / n) with trace ≈ p.
	if want := math.Sqrt(float64(p) / n); math.Abs(null.Noise-want) > 0.2*want {
		t.Errorf("noise %v, want about %v", null.Noise, want)
	}
	shifted := stats(cat, sample(0.3), true)
	if shifted.P > 1e-6 || shifted.Debiased < 0.3 {
		t.Errorf("shifted sample: p-value %v, debiased norm %v; want a tiny p-value and a norm near %v", shifted.P, shifted.Debiased, 0.3*math.Sqrt(p+1))
	}
}

// TestTheoremMachinery runs the whole check at a small size: after the
// scalar fit, the symmetry-forbidden gradient at the GD construction must
// be consistent with zero, while the same test detects it in the
// anisotropic control and at a perturbed point; structural zeros and the
// gauge relations among the GD scalars hold exactly.
func TestTheoremMachinery(t *testing.T) {
	const N, batch, nb = 8, 50, 120
	run := func(task string) (*problem, *gradModel, []category, pointStats) {
		t.Helper()
		p, err := newProblem(task, N, 0.3, 1)
		if err != nil {
			t.Fatal(err)
		}
		fit, err := fitScalars(p, "softmax", N, 60, batch, 2, 40, 10, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if task == TaskRotated && math.Abs(fit.GradAfter[0]) > math.Abs(fit.GradBefore[0])+fit.SE[0] {
			t.Errorf("Newton did not reduce the gradient: before %v, after %v", fit.GradBefore, fit.GradAfter)
		}
		gm, err := newGradModel("softmax", 2, 5, 20, N, batch, fit.Alpha, fit.Gamma, p.task.We)
		if err != nil {
			t.Fatal(err)
		}
		cats := categories(&gm.lay, 2, 5, true)
		att, _, loss, err := gm.sampleGrads(p, nb, rand.New(rand.NewPCG(3, 3)))
		if err != nil {
			t.Fatal(err)
		}
		return p, gm, cats, newPoint(cats, att, 0, -1, nb*batch, loss, true)
	}
	p, gm, cats, gd := run(TaskRotated)
	defer gm.close()
	// Structural zeros: W_Q reads only the query's x (its label and f are
	// 0) against the keys' x; W_K also sees the keys' labels; W_V's x rows
	// feed only the 5 label value features P reads; P's x columns see no
	// gradient (R reads f only).
	wantZero := map[string][2]int{ // dims, structural
		"B traceless": {6, 0}, "x-mixing W_Q, W_K": {80, 70}, "x blocks W_V, P": {48, 38}, "GD scalars": {5, 0},
	}
	for _, c := range gd.Cats {
		if w, ok := wantZero[c.Name]; ok && (c.Dims != w[0] || c.Structural != w[1]) {
			t.Errorf("%s: %d directions, %d structural; want %d, %d", c.Name, c.Dims, c.Structural, w[0], w[1])
		}
		if c.Name == "outside Assumptions 1-2" && c.Rank != 24 {
			t.Errorf("outside: rank %d, want 24 (the traceless part of T, seen through W_V and P)", c.Rank)
		}
	}
	for _, c := range gd.Cats[:3] {
		if c.P < 1e-3 {
			t.Errorf("GD point, %s: p-value %v for a zero mean gradient; want consistent with 0", c.Name, c.P)
		}
	}
	// Gauge relations of the softmax kernel: scaling W_Q, W_K or g moves
	// the kernel the same way (∂/∂log g = √d·(wq x-trace) = √d·(wk
	// x-trace)), and scaling W_V or P moves the value the same way
	// ((α/N)·(wv label-trace) = wo label→f trace).
	sc := gd.Cats[3].Components
	if len(sc) != 5 {
		t.Fatalf("GD scalars: %d components, want 5", len(sc))
	}
	alphaN := gm.theta0[indexOf(gm.lay.names, "wv")][2*12+2]
	checks := []struct {
		name string
		a, b float64
	}{
		{"log g vs √2·wq trace", sc[0].Mean, math.Sqrt2 * sc[1].Mean},
		{"wq vs wk trace", sc[1].Mean, sc[2].Mean},
		{"(α/N)·wv vs wo trace", alphaN * sc[3].Mean, sc[4].Mean},
	}
	for _, c := range checks {
		if math.Abs(c.a-c.b) > 1e-9*(math.Abs(c.a)+1e-12) {
			t.Errorf("%s: %v vs %v", c.name, c.a, c.b)
		}
	}
	// A perturbed point: the symmetry-forbidden gradient shows up.
	if err := gm.set(gm.perturbation(0.5, rand.New(rand.NewPCG(4, 4)))); err != nil {
		t.Fatal(err)
	}
	att, _, loss, err := gm.sampleGrads(p, nb, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	pert := newPoint(cats, att, 0.5, 0, nb*batch, loss, true)
	if symP(pert) > 1e-4 {
		t.Errorf("perturbed point: smallest p-value %v, want < 1e-4", symP(pert))
	}
	// The anisotropic control: the diagonal traceless direction of the x×x
	// blocks is no longer forbidden and must be detected.
	_, gmA, _, ctl := run(TaskAnisotropic)
	defer gmA.close()
	if ctl.Cats[0].P > 1e-4 {
		t.Errorf("anisotropic control, B traceless: p-value %v, want < 1e-4", ctl.Cats[0].P)
	}
	t.Logf("p-values at GD: %.3g %.3g %.3g; perturbed: %.3g; control: %.3g", gd.Cats[0].P, gd.Cats[1].P, gd.Cats[2].P, symP(pert), ctl.Cats[0].P)
}

func TestRunQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the check")
	}
	o := Options{Kernels: "linear", Task: TaskUniform, Scales: "0.1,0.3", Aniso: 0.5, N: 6, Batch: 20, NB: 20, PertNB: 10, Dirs: 1,
		AdamSteps: 20, NewtonIters: 1, NewtonBatches: 10, HessBatches: 5, Seed: 1, DataSeed: 1, Out: t.TempDir(), Quiet: true}
	res, err := run(o, "test", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Kernels) != 1 || len(res.Kernels[0].Perturbed) != 2 || res.Figure == "" {
		t.Errorf("results: %+v", res)
	}
	// The linear kernel has no parameter g: four GD scalars.
	if got := res.Kernels[0].GD.Cats[3].Dims; got != 4 {
		t.Errorf("linear kernel: %d GD scalars, want 4", got)
	}
	for _, bad := range []Options{{Kernels: "nope"}, {Kernels: "rbf", Scales: "x"}, {Kernels: "rbf", Task: "cube"}} {
		bad.N, bad.Batch, bad.NB, bad.PertNB, bad.AdamSteps, bad.NewtonBatches = 4, 4, 4, 4, 1, 4
		if bad.Task == "" {
			bad.Task = TaskRotated
		}
		if _, err := run(bad, "test", io.Discard); err == nil || !strings.Contains(err.Error(), "-") {
			t.Errorf("options %+v: error %v, want one naming a flag", bad, err)
		}
	}
}

// TestShardsAndMerge: the kernels of a tiny check run as two shards, then
// -merge (refused while a shard is missing), give the results and print
// the tables of one process, but the timings.
func TestShardsAndMerge(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the check")
	}
	o := Options{Kernels: "linear,softmax", Task: TaskUniform, Scales: "0.1", Aniso: 0.5, N: 6, Batch: 20, NB: 20, PertNB: 10, Dirs: 1,
		AdamSteps: 20, NewtonIters: 1, NewtonBatches: 10, HessBatches: 5, Seed: 1, DataSeed: 1, Out: t.TempDir(), Quiet: true}
	var oneOut strings.Builder
	one, err := run(o, "test", &oneOut)
	if err != nil {
		t.Fatal(err)
	}
	o.Out = t.TempDir()
	o.Exp.Shard = "1/2"
	if _, err := run(o, "test", io.Discard); err != nil {
		t.Fatal(err)
	}
	o.Exp.Shard, o.Exp.Merge = "", true
	if _, err := run(o, "test", io.Discard); err == nil || !strings.Contains(err.Error(), "indices 0") {
		t.Errorf("-merge with run 0 missing: %v", err)
	}
	o.Exp.Merge, o.Exp.Index = false, "0"
	if _, err := run(o, "test", io.Discard); err != nil {
		t.Fatal(err)
	}
	o.Exp.Index, o.Exp.Merge = "", true
	var mergedOut strings.Builder
	merged, err := run(o, "test", &mergedOut)
	if err != nil {
		t.Fatal(err)
	}
	strip := func(res *results) string {
		var out []string
		for _, kr := range res.Kernels {
			c := *kr
			c.Seconds, c.Fit.Seconds = 0, 0
			b, _ := json.Marshal(c)
			out = append(out, string(b))
		}
		return strings.Join(out, "\n")
	}
	if a, b := strip(one), strip(merged); a == "" || a != b {
		t.Errorf("merged kernels:\n%s\none process:\n%s", b, a)
	}
	// The tables, without the timings, the merge's status line and the
	// path written.
	tables := func(out string) string {
		var keep []string
		for _, l := range strings.Split(out, "\n") {
			if !strings.HasPrefix(l, "plan ") && !strings.HasPrefix(l, "wrote ") && !strings.HasSuffix(l, " s)") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if a, b := tables(oneOut.String()), tables(mergedOut.String()); !strings.Contains(a, "== softmax") || a != b {
		t.Errorf("merged tables:\n%s\none process:\n%s", b, a)
	}
}

// TestMergeRefusesCorruptResult: -merge over a run file whose result lacks
// what the tables need (here the GD point's categories) returns an error
// naming the file instead of indexing past them.
func TestMergeRefusesCorruptResult(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the check")
	}
	o := Options{Kernels: "linear", Task: TaskUniform, Scales: "0.1", Aniso: 0.5, N: 6, Batch: 20, NB: 20, PertNB: 10, Dirs: 1,
		AdamSteps: 20, NewtonIters: 1, NewtonBatches: 10, HessBatches: 5, Seed: 1, DataSeed: 1, Out: t.TempDir(), Quiet: true}
	if err := Run(o, "test", io.Discard); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(o.Out, "runs", "*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("run files %v (%v), want one", files, err)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	gd := rec["output"].(map[string]any)["gd"].(map[string]any)
	gd["categories"] = gd["categories"].([]any)[:2]
	if raw, err = json.Marshal(rec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[0], raw, 0o644); err != nil {
		t.Fatal(err)
	}
	o.Exp.Merge = true
	if err := Run(o, "test", io.Discard); err == nil || !strings.Contains(err.Error(), filepath.Base(files[0])) || !strings.Contains(err.Error(), "categories") {
		t.Errorf("-merge over a corrupt result: %v, want an error naming the file and its categories", err)
	}
}
