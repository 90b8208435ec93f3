package synthetic

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/examples/internal/sweep"
	"github.com/gdattn/gdattn/experiment"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/train"
)

// tinyOptions is a sweep of every figure at toy sizes: fig2 and fig4 at
// L = 16, 24, fig3 with K = 1, 2 at L = 16; one epoch, two seeds, 8 test
// contexts. That is 16 + 4 + 8 = 28 runs.
func tinyOptions(dir string) Options {
	o := Options{Sweep: "all", Ls: "16,24", Epochs: 1, Seeds: 2, M: 8, Batch: 8, Blocks: "1,2", L: 16,
		Results: dir, Quiet: true}
	o.Set = map[string]bool{}
	for _, f := range []string{"sweep", "Ls", "epochs", "seeds", "M", "batch", "blocks", "L", "results", "quiet"} {
		o.Set[f] = true
	}
	return o
}

const tinyRuns = 28

func sweepOnce(t *testing.T, o Options) string {
	t.Helper()
	st, err := ResolveSweep(o)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	st.logOut = &log
	if err := RunSweep(st, nil); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	return log.String()
}

// runFiles lists the result files in dir/runs.
func runFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "runs", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSweepResume runs a tiny sweep, reruns it (nothing to do), then
// simulates an interruption (results lost, a temporary file left) and checks
// that the rerun trains exactly the missing runs, reproducibly.
func TestSweepResume(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions(dir)
	log := sweepOnce(t, o)
	if !strings.Contains(log, "28 runs, 0 already") || !strings.Contains(log, "estimated time") {
		t.Errorf("first sweep log:\n%s", log)
	}
	files := runFiles(t, dir)
	if len(files) != tinyRuns {
		t.Fatalf("%d result files, want %d", len(files), tinyRuns)
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
	if ff.Runs != 16 || ff.Done != 16 || len(ff.Points) != 8 || ff.Points[0].Seeds != 2 || ff.Partial != "" {
		t.Errorf("fig2.json: %d/%d runs, %d points (first over %d seeds), partial %q; want 16/16, 8, 2, none", ff.Done, ff.Runs, len(ff.Points), ff.Points[0].Seeds, ff.Partial)
	}
	raw, _ = os.ReadFile(filepath.Join(dir, "fig3.json"))
	if err := json.Unmarshal(raw, &ff); err != nil {
		t.Fatal(err)
	}
	if len(ff.Points) != 2 || ff.Points[0].X != 1 || ff.X != "epoch" {
		t.Errorf("fig3.json: %d points, first at x=%v, x %q; want one epoch per K", len(ff.Points), ff.Points[0].X, ff.X)
	}
	csv2, _ := os.ReadFile(filepath.Join(dir, "fig2.csv"))

	// A rerun finds everything done.
	log = sweepOnce(t, o)
	if !strings.Contains(log, "28 already") || len(runFiles(t, dir)) != tinyRuns {
		t.Errorf("rerun trained again:\n%s", log)
	}

	// Interrupted: 18 results lost, a temporary file of a killed writer left.
	orig, _ := os.ReadFile(files[10])
	for _, f := range files[10:] {
		os.Remove(f)
	}
	os.WriteFile(filepath.Join(dir, "runs", ".tmp-x.json-1"), []byte(`{"key":`), 0o644)
	log = sweepOnce(t, o)
	if !strings.Contains(log, "10 already") || len(runFiles(t, dir)) != tinyRuns {
		t.Errorf("resumed sweep log:\n%s", log)
	}
	// The runs are deterministic: the rerun of the 11th matches the original,
	// and so do the tables.
	again, _ := os.ReadFile(files[10])
	var a, b experiment.Result
	json.Unmarshal(orig, &a)
	json.Unmarshal(again, &b)
	if a.Key == "" || string(a.Output) != string(b.Output) {
		t.Errorf("rerun of %s: %s, original %s", a.Key, b.Output, a.Output)
	}
	if csv, _ := os.ReadFile(filepath.Join(dir, "fig2.csv")); string(csv) != string(csv2) {
		t.Errorf("fig2.csv after the resumed sweep:\n%s\nfirst:\n%s", csv, csv2)
	}
}

// TestSweepJournal: the results of an older journal (runs.jsonl) count as
// done and make the same figures.
func TestSweepJournal(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions(dir)
	o.Sweep = "fig4"
	sweepOnce(t, o)
	csv, _ := os.ReadFile(filepath.Join(dir, "fig4.csv"))
	// The same runs as journal lines (the older format), and no run files.
	var journal []byte
	for _, f := range runFiles(t, dir) {
		raw, _ := os.ReadFile(f)
		var r experiment.Result
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		var out runOutput
		json.Unmarshal(r.Output, &out)
		line, _ := json.Marshal(sweep.Record{Config: r.Config, Final: out.Final, Curve: out.Curve, TrainSeconds: r.Seconds, Finished: r.Finished})
		journal = append(append(journal, line...), '\n')
		os.Remove(f)
	}
	os.WriteFile(filepath.Join(dir, "runs.jsonl"), journal, 0o644)
	o.Exp.Merge = true
	log := sweepOnce(t, o)
	if !strings.Contains(log, "8 done, 0 missing") || len(runFiles(t, dir)) != 0 {
		t.Errorf("merge of the journal:\n%s", log)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "fig4.csv")); string(again) != string(csv) {
		t.Errorf("fig4.csv from the journal:\n%s\nfrom the run files:\n%s", again, csv)
	}
}

// TestSweepShards runs a sweep as two shards in turn on one results
// directory, then one run again with -index: together they do every run
// once, and -merge refuses the figures until they are all done.
func TestSweepShards(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions(dir)
	o.Sweep = "fig4"
	o.Exp.Shard = "0/2"
	log := sweepOnce(t, o)
	if n := len(runFiles(t, dir)); n != 4 || !strings.Contains(log, "this worker runs 4") {
		t.Errorf("shard 0/2: %d runs, want 4 of 8; log:\n%s", n, log)
	}
	if _, err := os.Stat(filepath.Join(dir, "fig4.json")); !os.IsNotExist(err) {
		t.Errorf("a worker wrote the figures: %v", err)
	}
	o.Exp.Shard = ""
	o.Exp.Merge = true
	st, _ := ResolveSweep(o)
	var buf bytes.Buffer
	st.logOut = &buf
	if err := RunSweep(st, nil); err == nil || !strings.Contains(err.Error(), "4 of 8 runs") || !strings.Contains(err.Error(), "indices 1,3,5,7") {
		t.Errorf("merge with runs missing: %v", err)
	}
	o.Exp.Partial = true
	log = sweepOnce(t, o)
	var ff figureFile
	raw, _ := os.ReadFile(filepath.Join(dir, "fig4.json"))
	json.Unmarshal(raw, &ff)
	if ff.Done != 4 || !strings.HasPrefix(ff.Partial, "PARTIAL: 4 of 8") || !strings.Contains(log, "PARTIAL") {
		t.Errorf("partial merge: %d done, partial %q; log:\n%s", ff.Done, ff.Partial, log)
	}
	o.Exp.Merge, o.Exp.Partial = false, false
	o.Exp.Shard = "1/2"
	sweepOnce(t, o)
	o.Exp.Shard, o.Exp.Index = "", "3" // done already: skipped
	if log := sweepOnce(t, o); !strings.Contains(log, "this worker runs 0") {
		t.Errorf("-index 3 after the shards:\n%s", log)
	}
	if n := len(runFiles(t, dir)); n != 8 {
		t.Errorf("both shards: %d run files, want 8", n)
	}
	o.Exp.Index, o.Exp.Merge = "", true
	sweepOnce(t, o)
	raw, _ = os.ReadFile(filepath.Join(dir, "fig4.json"))
	ff = figureFile{}
	json.Unmarshal(raw, &ff)
	if ff.Done != 8 || ff.Partial != "" {
		t.Errorf("fig4.json after the merge: %d runs finished, partial %q; want 8, none", ff.Done, ff.Partial)
	}
}

func TestSweepPlan(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions(dir)
	o.Exp.Plan = true
	log := sweepOnce(t, o)
	if len(runFiles(t, dir)) != 0 || !strings.Contains(log, "plan synthetic-fig2-fig3-fig4: 28 runs, estimated") || !strings.Contains(log, "steps/s") ||
		!strings.Contains(log, `  27  ~`) {
		t.Errorf("-plan trained or printed no estimate:\n%s", log)
	}
	o.Exp.Plan, o.Exp.PlanJSON = false, true
	log = sweepOnce(t, o)
	var pj experiment.PlanJSON
	if err := json.Unmarshal([]byte(log), &pj); err != nil || pj.Count != tinyRuns || !(pj.Runs[0].Estimate > 0) || !(pj.EstimateSeconds > 0) {
		t.Errorf("-plan-json: %v\n%s", err, log)
	}
}

// TestPoints checks the aggregation over seeds on hand-made records.
func TestPoints(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions(dir)
	o.Sweep = "fig2,fig3"
	st, err := ResolveSweep(o)
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string]runOutput{}
	add := func(r runSpec, out runOutput) {
		k, _ := experiment.Key(r)
		recs[k] = out
	}
	j := func(key string) (runOutput, bool, error) { r, ok := recs[key]; return r, ok, nil }
	fig2, fig3 := st.figs[0], st.figs[1]
	s := fig2.Series[0] // GD, RBF
	for i, seed := range st.seeds {
		r := fig2.runs(s, seed)[1] // L = 24
		add(r, runOutput{Final: train.Metrics{Top1: 0.4 + 0.2*float64(i), NLL: 2, Oracle: 0.8}})
	}
	r := fig3.runs(fig3.Series[1], st.seeds[0])[0] // K = 2, seed 1 only
	add(r, runOutput{Curve: []train.EpochMetrics{{Epoch: 1, Metrics: train.Metrics{Top1: 0.3, NLL: 3}}}})

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
	figs, err := figures([]string{"fig2", "fig3", "fig4"}, FullPreset)
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
		edit func(*Options)
		want string
	}{
		{"kernel", func(o *Options) { o.Set["kernel"] = true }, "-kernel does not apply"},
		{"out", func(o *Options) { o.Set["out"] = true }, "-out does not apply"},
		{"figure", func(o *Options) { o.Sweep = "fig9" }, `unknown figure "fig9"`},
		{"Ls", func(o *Options) { o.Ls = "16,x" }, "-Ls"},
		{"blocks", func(o *Options) { o.Blocks = "0" }, "-blocks"},
		{"seeds", func(o *Options) { o.Seeds = 0 }, "-seeds"},
		{"lr", func(o *Options) { o.Set["lr"], o.LR = true, -1 }, "-lr"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := tinyOptions(t.TempDir())
			tc.edit(&o)
			if _, err := ResolveSweep(o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Flags override the preset; the rest comes from it.
	o := tinyOptions(t.TempDir())
	o.Quick = true
	st, err := ResolveSweep(o)
	if err != nil {
		t.Fatal(err)
	}
	p := st.preset
	if len(p.Ls) != 2 || p.Epochs != 1 || p.CurveEpochs != 1 || p.CurveL != 16 || p.Seeds != 2 || p.LR != QuickPreset.LR || p.N != 10 || st.figDir != o.Results {
		t.Errorf("resolved preset %+v", p)
	}
	o.Set["results"] = false
	st, _ = ResolveSweep(o)
	if st.resultsDir != QuickPreset.ResultsDir || !strings.HasSuffix(st.preset.FigureSuffix, "quick") {
		t.Errorf("quick preset: results in %q, suffix %q", st.resultsDir, st.preset.FigureSuffix)
	}
}

// TestLinearFigureKeys: the linear figure's GD runs use the journal's name
// for the one-step form, as fig2's do, so that their keys stay stable.
func TestLinearFigureKeys(t *testing.T) {
	figs, err := figures([]string{"fig2", "linear"}, FullPreset)
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

func TestParseIntList(t *testing.T) {
	for _, s := range []string{"", "0", "1,x", "-1"} {
		if _, err := ParseIntList("-blocks", s); err == nil {
			t.Errorf("ParseIntList(%q): no error", s)
		}
	}
	got, err := ParseIntList("-blocks", "1, 2,3")
	if err != nil || len(got) != 3 || got[2] != 3 {
		t.Errorf("ParseIntList = %v, %v", got, err)
	}
}

// TestDepthFigureKeys: the depth sweep's runs are the default mode's
// (TrainBlocks) runs, key for key, so either reproduces the other.
func TestDepthFigureKeys(t *testing.T) {
	p := FullPreset
	p.N, p.Epochs = 125, 30
	figs, err := figures([]string{"depth"}, p)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := plan(figs, []uint64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 12 {
		t.Fatalf("%d runs, want 6 K x 2 seeds", len(runs))
	}
	// As TrainBlocks builds them for -blocks 2 -N 125 -epochs 30 (the other flags' defaults).
	want, _ := experiment.Key(runSpec{Model: "gd", Form: gd.Interleaved.String(), Depth: 2, Kernel: "softmax", N: 125,
		L: 2048, M: 2048, Epochs: 30, Batch: 64, LR: 1e-2, Dtype: "float64", Seed: 1, DataSeed: 1})
	if runs[1].key != want {
		t.Errorf("depth K=2 seed 1: key %s, want %s", runs[1].key, want)
	}
}
