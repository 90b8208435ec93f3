package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gdattn/gdattn/examples/internal/sweep"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/train"
)

// A sweep reproduces the figures of Section 5.1: each figure is a set of
// series (a model), each trained for every swept value and every seed; the
// runs of all selected figures form one plan, run in order (seed by seed, so
// that an interrupted sweep already has every figure with fewer seeds) and
// recorded in a journal keyed by run configuration, so that a rerun resumes.

// preset holds the sizes of a sweep.
type preset struct {
	Ls           []int   `json:"Ls"`           // training contexts of fig2 and fig4
	Epochs       int     `json:"epochs"`       // epochs of fig2 and fig4
	CurveL       int     `json:"curve_L"`      // training contexts of fig3
	CurveEpochs  int     `json:"curve_epochs"` // epochs of fig3
	Blocks       []int   `json:"blocks"`       // GD blocks of fig3
	Seeds        int     `json:"seeds"`
	M            int     `json:"M"`
	N            int     `json:"N"`
	Batch        int     `json:"batch"`
	LR           float64 `json:"lr"`
	Seed         uint64  `json:"seed"`
	DataSeed     uint64  `json:"data_seed"`
	Dtype        string  `json:"dtype"`
	ResultsDir   string  `json:"-"`
	FigureSuffix string  `json:"-"`
}

var (
	fullPreset = preset{
		Ls: []int{2048, 4096, 8192, 16384, 32768}, Epochs: 60,
		CurveL: 2048, CurveEpochs: 100, Blocks: []int{1, 2, 3, 4, 5, 6},
		Seeds: 5, M: 2048, N: 10, Batch: 64, LR: 1e-2, Seed: 1, DataSeed: 1, Dtype: "float64",
		ResultsDir: filepath.Join("results", "synthetic"),
	}
	quickPreset = preset{
		Ls: []int{256, 1024, 4096}, Epochs: 10,
		CurveL: 1024, CurveEpochs: 20, Blocks: []int{1, 2, 3, 4, 5, 6},
		Seeds: 2, M: 512, N: 10, Batch: 64, LR: 1e-2, Seed: 1, DataSeed: 1, Dtype: "float64",
		ResultsDir: filepath.Join("results", "synthetic-quick"), FigureSuffix: "-quick",
	}
)

// series is one line of a figure: a model, trained at every swept value
// and every seed.
type series struct {
	Panel string  // the panel group, e.g. "RBF kernel"
	Label string  // the legend
	Run   runSpec // L and Seed are filled in per run
}

// figure is one of the paper's figures.
type figure struct {
	Name   string // fig2, fig3, fig4
	Title  string
	ByL    bool  // x is L (one run per L); otherwise x is the epoch (one run, curve)
	Ls     []int // with ByL
	Series []series
}

var figureNames = []string{"fig2", "fig3", "fig4"}

// extraFigureNames are figures outside "all": the linear-attention
// comparison that Section 5.1 says was examined but does not plot.
var extraFigureNames = []string{"linear"}

// figures returns the named figures with the sizes of p.
func figures(names []string, p preset) ([]figure, error) {
	base := runSpec{N: p.N, M: p.M, Epochs: p.Epochs, Batch: p.Batch, LR: p.LR, Dtype: p.Dtype, DataSeed: p.DataSeed}
	with := func(f func(*runSpec)) runSpec {
		r := base
		f(&r)
		return r
	}
	var out []figure
	for _, name := range names {
		switch name {
		case "fig2":
			fig := figure{Name: name, ByL: true, Ls: p.Ls,
				Title: "Figure 2: one self-attention layer, GD vs Trained TF"}
			for _, k := range []struct{ kernel, panel string }{{"rbf", "RBF kernel"}, {"softmax", "softmax kernel"}} {
				fig.Series = append(fig.Series,
					series{k.panel, "GD (one step)", with(func(r *runSpec) {
						r.Model, r.Form, r.Depth, r.Kernel = "gd", "onestep", 1, k.kernel
					})},
					series{k.panel, "Trained TF (1 layer)", with(func(r *runSpec) {
						r.Model, r.Depth, r.Heads, r.Kernel = "tf", 1, 1, k.kernel
					})})
			}
			out = append(out, fig)
		case "fig3":
			fig := figure{Name: name, Title: fmt.Sprintf("Figure 3: GD with K blocks, softmax kernel, L=%d", p.CurveL)}
			for _, K := range p.Blocks {
				label := fmt.Sprintf("K=%d blocks", K)
				if K == 1 {
					label = "K=1 block"
				}
				fig.Series = append(fig.Series, series{"softmax kernel", label, with(func(r *runSpec) {
					r.Model, r.Form, r.Depth, r.Kernel = "gd", gd.Interleaved.String(), K, "softmax"
					r.L, r.Epochs, r.Curve = p.CurveL, p.CurveEpochs, true
				})})
			}
			out = append(out, fig)
		case "fig4":
			out = append(out, figure{Name: name, ByL: true, Ls: p.Ls,
				Title: "Figure 4 (left): two blocks, GD vs Trained TF, softmax kernel",
				Series: []series{
					{"softmax kernel", "GD (2 blocks)", with(func(r *runSpec) {
						r.Model, r.Form, r.Depth, r.Kernel = "gd", gd.Interleaved.String(), 2, "softmax"
					})},
					{"softmax kernel", "Trained TF (2 layers, cross-attn)", with(func(r *runSpec) {
						r.Model, r.Depth, r.Heads, r.Cross, r.Kernel = "tf", 2, 2, true, "softmax"
					})},
				}})
		case "linear":
			out = append(out, figure{Name: name, ByL: true, Ls: p.Ls,
				Title: "Section 5.1: linear attention, one layer, GD vs Trained TF",
				Series: []series{
					{"linear kernel", "GD (one step)", with(func(r *runSpec) {
						r.Model, r.Form, r.Depth, r.Kernel = "gd", "onestep", 1, "linear"
					})},
					{"linear kernel", "Trained TF (1 layer)", with(func(r *runSpec) {
						r.Model, r.Depth, r.Heads, r.Kernel = "tf", 1, 1, "linear"
					})},
				}})
		default:
			return nil, fmt.Errorf("-sweep: unknown figure %q (want %s or all)", name, strings.Join(append(slices.Clone(figureNames), extraFigureNames...), ", "))
		}
	}
	return out, nil
}

// runs lists the runs of the figure's series s for seed.
func (f figure) runs(s series, seed uint64) []runSpec {
	r := s.Run
	r.Seed = seed
	if !f.ByL {
		return []runSpec{r}
	}
	var out []runSpec
	for _, L := range f.Ls {
		r.L = L
		out = append(out, r)
	}
	return out
}

// plannedRun is a run of the plan with the figures that use it.
type plannedRun struct {
	spec runSpec
	key  string
	figs []string
}

// plan lists the distinct runs of figs, seed by seed.
func plan(figs []figure, seeds []uint64) ([]plannedRun, error) {
	var out []plannedRun
	index := map[string]int{}
	for _, seed := range seeds {
		for _, f := range figs {
			for _, s := range f.Series {
				for _, r := range f.runs(s, seed) {
					key, err := sweep.Key(r)
					if err != nil {
						return nil, err
					}
					if i, ok := index[key]; ok {
						if !slices.Contains(out[i].figs, f.Name) {
							out[i].figs = append(out[i].figs, f.Name)
						}
						continue
					}
					index[key] = len(out)
					out = append(out, plannedRun{spec: r, key: key, figs: []string{f.Name}})
				}
			}
		}
	}
	return out, nil
}

// sweepSetup is a resolved -sweep command line.
type sweepSetup struct {
	preset             preset
	figs               []figure
	seeds              []uint64
	resultsDir, figDir string
	shardI, shardN     int
	progress, logOut   io.Writer
	plan, plotOnly     bool
	now                func() time.Time
}

// resolveSweep applies the preset and the flags given on the command line.
func resolveSweep(o options) (*sweepSetup, error) {
	for _, f := range []string{"kernel", "out", "eval", "x", "y", "probs"} {
		if o.set[f] {
			return nil, fmt.Errorf("-%s does not apply to -sweep (the figures fix their models; see -h)", f)
		}
	}
	p := fullPreset
	if o.quick {
		p = quickPreset
	}
	var err error
	if o.set["Ls"] {
		if p.Ls, err = parseIntList("-Ls", o.ls); err != nil {
			return nil, err
		}
	}
	if o.set["blocks"] {
		if p.Blocks, err = parseIntList("-blocks", o.blocks); err != nil {
			return nil, err
		}
	}
	if o.set["epochs"] {
		p.Epochs, p.CurveEpochs = o.epochs, o.epochs
	}
	if o.set["L"] {
		p.CurveL = o.L
	}
	for _, v := range []struct {
		flag string
		dst  *int
		val  int
	}{{"seeds", &p.Seeds, o.seeds}, {"M", &p.M, o.M}, {"N", &p.N, o.N}, {"batch", &p.Batch, o.batch}} {
		if o.set[v.flag] {
			if v.val <= 0 {
				return nil, fmt.Errorf("-%s = %d, want > 0", v.flag, v.val)
			}
			*v.dst = v.val
		}
	}
	if p.Epochs <= 0 || p.CurveEpochs <= 0 {
		return nil, fmt.Errorf("-epochs must be positive")
	}
	if o.set["lr"] {
		p.LR = o.lr
	}
	if !(p.LR > 0) {
		return nil, fmt.Errorf("-lr = %v, want > 0", p.LR)
	}
	if o.set["seed"] {
		p.Seed = o.seed
	}
	if o.set["data-seed"] {
		p.DataSeed = o.dataSeed
	}
	if o.set["dtype"] {
		p.Dtype = o.dtype
	}
	if o.set["results"] {
		p.ResultsDir = o.results
	}
	names := strings.Split(o.sweep, ",")
	if strings.TrimSpace(o.sweep) == "all" {
		names = slices.Clone(figureNames)
	}
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	st := &sweepSetup{preset: p, resultsDir: p.ResultsDir, figDir: p.ResultsDir, plan: o.plan, plotOnly: o.plotOnly,
		logOut: os.Stdout, progress: os.Stderr, now: time.Now, shardN: 1}
	if o.quiet {
		st.progress = nil
	}
	if o.set["figures"] {
		st.figDir = o.figures
	}
	if st.figs, err = figures(names, p); err != nil {
		return nil, err
	}
	for s := 0; s < p.Seeds; s++ {
		st.seeds = append(st.seeds, p.Seed+uint64(s))
	}
	if o.set["shard"] {
		i, n, ok := strings.Cut(o.shard, "/")
		st.shardI, err = strconv.Atoi(i)
		if err == nil {
			st.shardN, err = strconv.Atoi(n)
		}
		if !ok || err != nil || st.shardN < 1 || st.shardI < 0 || st.shardI >= st.shardN {
			return nil, fmt.Errorf("-shard %q: want i/n with 0 <= i < n", o.shard)
		}
	}
	return st, nil
}

// runSweep runs the pending runs of the plan, appending each to the journal,
// then writes every figure's JSON, CSV and PNG.
func runSweep(st *sweepSetup) error {
	journal, err := sweep.OpenJournal(filepath.Join(st.resultsDir, "runs.jsonl"))
	if err != nil {
		return err
	}
	if journal.Skipped > 0 {
		fmt.Fprintf(st.logOut, "warning: %s: skipped %d unreadable line(s) (an interrupted write?); those runs will rerun\n", journal.Path(), journal.Skipped)
	}
	runs, err := plan(st.figs, st.seeds)
	if err != nil {
		return err
	}
	var pending []plannedRun
	for i, r := range runs {
		if _, done := journal.Get(r.key); !done && i%st.shardN == st.shardI {
			pending = append(pending, r)
		}
	}
	done := len(runs) - countPending(runs, journal)
	fmt.Fprintf(st.logOut, "sweep %s: %d runs, %d already in %s", figNames(st.figs), len(runs), done, journal.Path())
	if st.shardN > 1 {
		fmt.Fprintf(st.logOut, "; shard %d/%d runs %d of the rest", st.shardI, st.shardN, len(pending))
	}
	fmt.Fprintln(st.logOut)
	if st.preset.FigureSuffix == quickPreset.FigureSuffix && hasTF(st.figs) {
		fmt.Fprintln(st.logOut, "note: the quick preset undertrains the Trained TF baselines (few epochs, small L): it checks the pipeline; the full preset (no -quick) gives the paper's comparison")
	}
	if st.plotOnly {
		return writeFigures(st, journal)
	}
	var cost map[string]stepCost
	if len(pending) > 0 {
		fmt.Fprintf(st.logOut, "measuring the speed of %d model kinds on this machine ...\n", countArchs(pending))
		if cost, err = calibrate(pending); err != nil {
			return err
		}
	}
	est := make([]float64, len(pending))
	total := 0.0
	for i, r := range pending {
		est[i] = cost[archKey(r.spec)].seconds(r.spec)
		total += est[i]
	}
	fmt.Fprintf(st.logOut, "estimated time: %s for %d runs, one after the other on one free core (CPU time measured just now; other jobs on the machine make it longer)\n",
		fmtDuration(total), len(pending))
	if st.plan {
		seen := map[string]bool{}
		fmt.Fprintf(st.logOut, "measured CPU time per %d-context minibatch:\n", st.preset.Batch)
		for _, r := range pending {
			if k := archKey(r.spec); !seen[k] {
				seen[k] = true
				c := cost[k]
				fmt.Fprintf(st.logOut, "  %-40s %6.1f steps/s  forward %5.1f ms  build %4.0f ms\n", r.spec.name(), 1/c.step, 1e3*c.evalBatch, 1e3*c.build)
			}
		}
		for i, r := range pending {
			fmt.Fprintf(st.logOut, "  %3d  %-5s %-40s L=%-6d seed %d  epochs %d  ~%s\n", i+1, strings.Join(r.figs, ","), r.spec.name(), r.spec.L, r.spec.Seed, r.spec.Epochs, fmtDuration(est[i]))
		}
		return nil
	}
	sets := map[[2]uint64]*dataSets{}
	start := st.now()
	lastPlot := start
	spentEst := 0.0
	for i, r := range pending {
		dk := [2]uint64{uint64(r.spec.N), r.spec.DataSeed}
		if sets[dk] == nil {
			if sets[dk], err = newDataSets(r.spec.N, r.spec.DataSeed); err != nil {
				return err
			}
		}
		label := fmt.Sprintf("[%d/%d] %s %s L=%d seed=%d", i+1, len(pending), strings.Join(r.figs, ","), r.spec.name(), r.spec.L, r.spec.Seed)
		t, err := r.spec.train(sets[dk], st.progress, label)
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		if err := journal.Append(r.spec, t.rec); err != nil {
			return err
		}
		spentEst += est[i]
		elapsed := st.now().Sub(start).Seconds()
		left := (total - spentEst) * elapsed / max(spentEst, 1e-9) // rescaled by the speed seen so far
		fmt.Fprintf(st.logOut, "%s: %v  (%.0fs; sweep %d/%d, elapsed %s, left ~%s)\n",
			label, t.rec.Final, t.rec.TrainSeconds, i+1, len(pending), fmtDuration(elapsed), fmtDuration(left))
		if st.now().Sub(lastPlot) > time.Minute && i+1 < len(pending) {
			if err := journal.Reload(); err != nil {
				return err
			}
			if err := writeFigures(st, journal); err != nil {
				return err
			}
			lastPlot = st.now()
		}
	}
	if err := journal.Reload(); err != nil { // other shards' runs
		return err
	}
	if left := countPending(runs, journal); left > 0 {
		fmt.Fprintf(st.logOut, "%d runs of the plan are not in %s yet (other shards?); the figures show what is there\n", left, journal.Path())
	}
	return writeFigures(st, journal)
}

func countPending(runs []plannedRun, j *sweep.Journal) int {
	n := 0
	for _, r := range runs {
		if _, ok := j.Get(r.key); !ok {
			n++
		}
	}
	return n
}

func figNames(figs []figure) string {
	var s []string
	for _, f := range figs {
		s = append(s, f.Name)
	}
	return strings.Join(s, ",")
}

// stepCost is the measured cost of one kind of model.
type stepCost struct {
	build, step, evalBatch float64 // seconds: graph build, training step, forward pass of one minibatch
}

// seconds estimates the duration of run r.
func (c stepCost) seconds(r runSpec) float64 {
	steps := float64(train.Steps(r.L, r.Batch, r.Epochs))
	evals := 1.0
	if r.Curve {
		evals = float64(r.Epochs)
	}
	fwd := float64((r.M + r.Batch - 1) / r.Batch)
	return c.build + steps*c.step + evals*fwd*c.evalBatch
}

func archKey(r runSpec) string {
	k, _ := sweep.Key(r.arch())
	return k
}

func countArchs(runs []plannedRun) int {
	seen := map[string]bool{}
	for _, r := range runs {
		seen[archKey(r.spec)] = true
	}
	return len(seen)
}

// calibrate measures the CPU time of a training step and of a forward pass
// of every kind of model in runs: the median over a few bursts, after a
// warm-up. CPU time rather than wall time, so that the estimate is the
// time on a free core whatever else the machine is doing.
func calibrate(runs []plannedRun) (map[string]stepCost, error) {
	out := map[string]stepCost{}
	for _, r := range runs {
		key := archKey(r.spec)
		if _, ok := out[key]; ok {
			continue
		}
		c, err := measure(r.spec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.spec.name(), err)
		}
		out[key] = c
	}
	return out, nil
}

func measure(spec runSpec) (stepCost, error) {
	var c stepCost
	d, err := newDataSets(spec.N, spec.DataSeed)
	if err != nil {
		return c, err
	}
	b, err := d.task.Sample(spec.Batch, rand.New(rand.NewPCG(spec.DataSeed, 3)))
	if err != nil {
		return c, err
	}
	t0 := cpuTime()
	m, _, err := spec.build()
	if err != nil {
		return c, err
	}
	run, err := train.NewRunner(m, train.RunnerConfig{Optim: train.Config{LR: spec.LR}})
	if err != nil {
		return c, err
	}
	defer run.Close()
	c.build = (cpuTime() - t0).Seconds()
	// One epoch over b (one minibatch) is one step.
	steps := func(n int) error { return run.Fit(b, train.FitConfig{Epochs: n, Seed: 1}) }
	if err := steps(3); err != nil { // warm-up
		return c, err
	}
	var perStep, perEval []float64
	for burst := 0; burst < 5; burst++ {
		n, t := 0, cpuTime()
		for n < 5 || (n < 200 && cpuTime()-t < 20*time.Millisecond) {
			if err := steps(1); err != nil {
				return c, err
			}
			n++
		}
		perStep = append(perStep, (cpuTime()-t).Seconds()/float64(n))
		t = cpuTime()
		if _, err := run.Evaluate(b); err != nil {
			return c, err
		}
		perEval = append(perEval, (cpuTime() - t).Seconds())
	}
	slices.Sort(perStep)
	slices.Sort(perEval)
	c.step, c.evalBatch = perStep[len(perStep)/2], perEval[len(perEval)/2]
	return c, nil
}

func fmtDuration(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	case d >= time.Minute:
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// parseIntList parses comma-separated positive integers for flag name.
func parseIntList(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%s %q: want positive integers separated by commas", name, s)
		}
		out = append(out, v)
	}
	return out, nil
}

// hasTF reports whether a figure of figs trains a Trained TF.
func hasTF(figs []figure) bool {
	for _, f := range figs {
		for _, s := range f.Series {
			if s.Run.Model == "tf" {
				return true
			}
		}
	}
	return false
}
