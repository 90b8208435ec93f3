package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/examples/internal/sweep"
	"github.com/gdattn/gdattn/train"
)

// tinyOptions is a sweep of every figure at toy sizes: fig2 and fig4 at
// L = 16, 24, fig3 with K = 1, 2 at L = 16; one epoch, two seeds, 8 test
// contexts. That is 16 + 4 + 8 = 28 runs.
func tinyOptions(dir string) options {
	o := options{sweep: "all", ls: "16,24", epochs: 1, seeds: 2, M: 8, batch: 8, blocks: "1,2", L: 16,
		results: dir, quiet: true}
	o.set = map[string]bool{}
	for _, f := range []string{"sweep", "Ls", "epochs", "seeds", "M", "batch", "blocks", "L", "results", "quiet"} {
		o.set[f] = true
	}
	return o
}

const tinyRuns = 28

func sweepOnce(t *testing.T, o options) string {
	t.Helper()
	st, err := resolveSweep(o)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	st.logOut = &log
	if err := runSweep(st); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	return log.String()
}

func journalLines(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "runs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// TestSweepResume runs a tiny sweep, reruns it (nothing to do), then
// simulates an interruption (the journal cut in the middle of a line) and
// checks that the rerun trains exactly the missing runs, reproducibly.
func TestSweepResume(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions(dir)
	log := sweepOnce(t, o)
	if !strings.Contains(log, "28 runs, 0 already") || !strings.Contains(log, "estimated time") {
		t.Errorf("first sweep log:\n%s", log)
	}
	lines := journalLines(t, dir)
	if len(lines) != tinyRuns {
		t.Fatalf("journal has %d lines, want %d", len(lines), tinyRuns)
	}
	for _, name := range []string{"fig2.json", "fig2.csv", "synthetic-fig2.png", "fig3.json", "fig3.csv", "synthetic-fig3.png", "fig4.json", "fig4.csv", "synthetic-fig4.png"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	var ff figureFile
	raw, _ := os.ReadFile(filepath.Join(dir, "fig2.json"))
	if err := json.Unmarshal(raw, &ff); err != nil {
		t.Fatal(err)
	}
	// 2 kernels x 2 models x 2 Ls, each over 2 seeds.
	if ff.Runs != 16 || ff.Done != 16 || len(ff.Points) != 8 || ff.Points[0].Seeds != 2 {
		t.Errorf("fig2.json: %d/%d runs, %d points (first over %d seeds); want 16/16, 8, 2", ff.Done, ff.Runs, len(ff.Points), ff.Points[0].Seeds)
	}
	raw, _ = os.ReadFile(filepath.Join(dir, "fig3.json"))
	if err := json.Unmarshal(raw, &ff); err != nil {
		t.Fatal(err)
	}
	if len(ff.Points) != 2 || ff.Points[0].X != 1 || ff.X != "epoch" {
		t.Errorf("fig3.json: %d points, first at x=%v, x %q; want one epoch per K", len(ff.Points), ff.Points[0].X, ff.X)
	}

	// A rerun finds everything done.
	log = sweepOnce(t, o)
	if !strings.Contains(log, "28 already") || len(journalLines(t, dir)) != tinyRuns {
		t.Errorf("rerun trained again:\n%s", log)
	}

	// Interrupted: keep 10 runs and half of the 11th line.
	cut := strings.Join(lines[:10], "\n") + "\n" + lines[10][:len(lines[10])/2]
	if err := os.WriteFile(filepath.Join(dir, "runs.jsonl"), []byte(cut), 0o644); err != nil {
		t.Fatal(err)
	}
	log = sweepOnce(t, o)
	if !strings.Contains(log, "10 already") || !strings.Contains(log, "skipped 1 unreadable line") {
		t.Errorf("resumed sweep log:\n%s", log)
	}
	j, err := sweep.OpenJournal(filepath.Join(dir, "runs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if j.Len() != tinyRuns || len(journalLines(t, dir)) != tinyRuns+1 {
		t.Fatalf("after resuming: %d runs in %d lines, want %d runs (plus the broken line)", j.Len(), len(journalLines(t, dir)), tinyRuns)
	}
	// The runs are deterministic: the rerun of the 11th matches the original.
	var orig sweep.Record
	full := lines[10]
	if err := json.Unmarshal([]byte(full), &orig); err != nil {
		t.Fatal(err)
	}
	var c bytes.Buffer
	json.Compact(&c, orig.Config)
	again, ok := j.Get(c.String())
	if !ok || again.Final.Top1 != orig.Final.Top1 || again.Final.NLL != orig.Final.NLL {
		t.Errorf("rerun of %s: %v, original %v", c.String(), again.Final, orig.Final)
	}
}

// TestSweepShards runs a sweep as two shards in turn on one results
// directory: together they do every run once.
func TestSweepShards(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions(dir)
	o.sweep = "fig4"
	o.set["shard"] = true
	o.shard = "0/2"
	log := sweepOnce(t, o)
	if n := len(journalLines(t, dir)); n != 4 || !strings.Contains(log, "not in") {
		t.Errorf("shard 0/2: %d runs, want 4 of 8; log:\n%s", n, log)
	}
	o.shard = "1/2"
	sweepOnce(t, o)
	j, _ := sweep.OpenJournal(filepath.Join(dir, "runs.jsonl"))
	if j.Len() != 8 || len(journalLines(t, dir)) != 8 {
		t.Errorf("both shards: %d runs in %d lines, want 8 in 8", j.Len(), len(journalLines(t, dir)))
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "fig4.json"))
	var ff figureFile
	json.Unmarshal(raw, &ff)
	if ff.Done != 8 {
		t.Errorf("fig4.json after the last shard: %d runs finished, want 8", ff.Done)
	}
}

func TestSweepPlanAndPlotOnly(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions(dir)
	o.plan = true
	log := sweepOnce(t, o)
	if len(journalLines(t, dir)) != 0 || !strings.Contains(log, "estimated time") || !strings.Contains(log, "steps/s") {
		t.Errorf("-plan trained or printed no estimate:\n%s", log)
	}
	o.plan, o.plotOnly = false, true
	sweepOnce(t, o)
	if len(journalLines(t, dir)) != 0 {
		t.Error("-plot-only trained")
	}
	if _, err := os.Stat(filepath.Join(dir, "fig2.csv")); err != nil {
		t.Errorf("-plot-only with no runs: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "synthetic-fig2.png")); !os.IsNotExist(err) {
		t.Errorf("-plot-only with no runs drew a PNG: %v", err)
	}
}

// TestPoints checks the aggregation over seeds on hand-made records.
func TestPoints(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions(dir)
	o.sweep = "fig2,fig3"
	st, err := resolveSweep(o)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := sweep.OpenJournal(filepath.Join(dir, "runs.jsonl"))
	fig2, fig3 := st.figs[0], st.figs[1]
	s := fig2.Series[0] // GD, RBF
	for i, seed := range st.seeds {
		r := fig2.runs(s, seed)[1] // L = 24
		j.Append(r, sweep.Record{Final: train.Metrics{Top1: 0.4 + 0.2*float64(i), NLL: 2, Oracle: 0.8}})
	}
	r := fig3.runs(fig3.Series[1], st.seeds[0])[0] // K = 2, seed 1 only
	j.Append(r, sweep.Record{Curve: []train.EpochMetrics{{Epoch: 1, Metrics: train.Metrics{Top1: 0.3, NLL: 3}}}})

	pts, runs, done, err := fig2.points(j, st.seeds)
	if err != nil {
		t.Fatal(err)
	}
	if runs != 16 || done != 2 || len(pts) != 1 {
		t.Fatalf("fig2: %d/%d runs, %d points; want 2/16 and 1", done, runs, len(pts))
	}
	p := pts[0]
	if p.Series != s.Label || p.Panel != "RBF kernel" || p.X != 24 || p.Seeds != 2 ||
		!near(p.Top1.Mean, 0.5) || !near(p.Top1.Std, 0.141421356) || p.NLL.Std != 0 || p.Oracle != 0.8 {
		t.Errorf("fig2 point %+v", p)
	}
	pts, _, done, _ = fig3.points(j, st.seeds)
	if done != 1 || len(pts) != 1 || pts[0].Series != "K=2 blocks" || pts[0].X != 1 || pts[0].Seeds != 1 || pts[0].Top1.Mean != 0.3 {
		t.Errorf("fig3: %d done, points %+v", done, pts)
	}
}

func near(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

func TestPlan(t *testing.T) {
	figs, err := figures([]string{"fig2", "fig3", "fig4"}, fullPreset)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := plan(figs, []uint64{1, 2, 3, 4, 5})
	if err != nil {
		t.Fatal(err)
	}
	// fig2: 2 kernels x 2 models x 5 L; fig3: 6 K; fig4: 2 models x 5 L; per seed.
	if want := 5 * (20 + 6 + 10); len(runs) != want {
		t.Errorf("%d runs, want %d", len(runs), want)
	}
	// Seed by seed: the first 36 runs are seed 1 and cover every figure.
	for i, r := range runs[:36] {
		if r.spec.Seed != 1 {
			t.Fatalf("run %d has seed %d, want the first seed's runs first", i, r.spec.Seed)
		}
	}
	// A figure listed twice adds no runs; the run lists both figures... once.
	again, _ := plan(append(figs, figs[0]), []uint64{1})
	if len(again) != 36 || len(again[0].figs) != 1 {
		t.Errorf("duplicate figure: %d runs, first used by %v", len(again), again[0].figs)
	}
}

func TestSweepFlags(t *testing.T) {
	tests := []struct {
		name string
		edit func(*options)
		want string
	}{
		{"kernel", func(o *options) { o.set["kernel"] = true }, "-kernel does not apply"},
		{"out", func(o *options) { o.set["out"] = true }, "-out does not apply"},
		{"figure", func(o *options) { o.sweep = "fig9" }, `unknown figure "fig9"`},
		{"shard", func(o *options) { o.set["shard"], o.shard = true, "2/2" }, "-shard"},
		{"shard syntax", func(o *options) { o.set["shard"], o.shard = true, "1" }, "-shard"},
		{"Ls", func(o *options) { o.ls = "16,x" }, "-Ls"},
		{"blocks", func(o *options) { o.blocks = "0" }, "-blocks"},
		{"seeds", func(o *options) { o.seeds = 0 }, "-seeds"},
		{"lr", func(o *options) { o.set["lr"], o.lr = true, -1 }, "-lr"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := tinyOptions(t.TempDir())
			tc.edit(&o)
			if _, err := resolveSweep(o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Sweep-only flags need -sweep.
	o := options{set: map[string]bool{"quick": true}}
	if err := run(o); err == nil || !strings.Contains(err.Error(), "-quick needs -sweep") {
		t.Errorf("-quick alone: %v", err)
	}
	// Flags override the preset; the rest comes from it.
	o = tinyOptions(t.TempDir())
	o.quick = true
	st, err := resolveSweep(o)
	if err != nil {
		t.Fatal(err)
	}
	p := st.preset
	if len(p.Ls) != 2 || p.Epochs != 1 || p.CurveEpochs != 1 || p.CurveL != 16 || p.Seeds != 2 || p.LR != quickPreset.LR || p.N != 10 || st.figDir != o.results {
		t.Errorf("resolved preset %+v", p)
	}
	o.set["results"] = false
	st, _ = resolveSweep(o)
	if st.resultsDir != quickPreset.ResultsDir || !strings.HasSuffix(st.preset.FigureSuffix, "quick") {
		t.Errorf("quick preset: results in %q, suffix %q", st.resultsDir, st.preset.FigureSuffix)
	}
}

// TestLinearFigureKeys: the linear figure's GD runs use the journal's name
// for the one-step form, as fig2's do, so that their keys stay stable.
func TestLinearFigureKeys(t *testing.T) {
	figs, err := figures([]string{"fig2", "linear"}, fullPreset)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range figs {
		for _, s := range f.Series {
			if s.Run.Model == "gd" && s.Run.Form != "onestep" {
				t.Errorf("%s %q: form %q, want \"onestep\"", f.Name, s.Label, s.Run.Form)
			}
		}
	}
}
