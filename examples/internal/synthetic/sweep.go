package synthetic

import (
	"errors"
	"flag"
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
	"github.com/gdattn/gdattn/experiment"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/train"
)

// A sweep reproduces the figures of Section 5.1: each figure is a set of
// series (a model), each trained for every swept value and every seed; the
// runs of all selected figures form one plan, run in order (seed by seed, so
// that an interrupted sweep already has every figure with fewer seeds) and
// recorded in a store of package experiment, one file per run keyed by its
// configuration, so that a rerun resumes and workers on several machines share it.

// Preset holds the sizes of a sweep.
type Preset struct {
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
	FullPreset = Preset{
		Ls: []int{2048, 4096, 8192, 16384, 32768}, Epochs: 60,
		CurveL: 2048, CurveEpochs: 100, Blocks: []int{1, 2, 3, 4, 5, 6},
		Seeds: 5, M: 2048, N: 10, Batch: 64, LR: 1e-2, Seed: 1, DataSeed: 1, Dtype: "float64",
		ResultsDir: filepath.Join("results", "synthetic"),
	}
	QuickPreset = Preset{
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

var FigureNames = []string{"fig2", "fig3", "fig4"}

// ExtraFigureNames are figures outside "all": the linear-attention
// comparison that Section 5.1 says was examined but does not plot, and the
// depth sweep (GD with K blocks at fig3's L, final metrics only; the
// authors' published depth sweep is at N = 125).
var ExtraFigureNames = []string{"linear", "depth"}

// figures returns the named figures with the sizes of p.
func figures(names []string, p Preset) ([]figure, error) {
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
		case "depth":
			fig := figure{Name: name, ByL: true, Ls: []int{p.CurveL},
				Title: fmt.Sprintf("Depth sweep: GD with K blocks, softmax kernel, L=%d", p.CurveL)}
			for _, K := range p.Blocks {
				label := fmt.Sprintf("K=%d blocks", K)
				if K == 1 {
					label = "K=1 block"
				}
				// The runs of the default mode's -blocks K (the same keys).
				fig.Series = append(fig.Series, series{"softmax kernel", label, with(func(r *runSpec) {
					r.Model, r.Form, r.Depth, r.Kernel = "gd", gd.Interleaved.String(), K, "softmax"
				})})
			}
			out = append(out, fig)
		default:
			return nil, fmt.Errorf("-sweep: unknown figure %q (want %s or all)", name, strings.Join(append(slices.Clone(FigureNames), ExtraFigureNames...), ", "))
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
					key, err := experiment.Key(r)
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

// Setup is a resolved -sweep command line (ResolveSweep).
type Setup struct {
	preset             Preset
	figs               []figure
	seeds              []uint64
	resultsDir, figDir string
	exp                experiment.Flags
	fs                 *flag.FlagSet // the command line (-submit passes it on to the workers)
	exec               graph.ExecutorFactory
	progress, logOut   io.Writer
	now                func() time.Time
}

// Dirs returns the directories the sweep writes to: its results (run files,
// JSON, CSV) and its figures.
func (st *Setup) Dirs() (results, figures string) { return st.resultsDir, st.figDir }

// ResolveSweep applies the preset and the flags given on the command line.
func ResolveSweep(o Options) (*Setup, error) {
	for _, f := range []string{"kernel", "out", "eval", "x", "y", "probs"} {
		if o.Set[f] {
			return nil, fmt.Errorf("-%s does not apply to -sweep (the figures fix their models; see -h)", f)
		}
	}
	p := FullPreset
	if o.Quick {
		p = QuickPreset
	}
	var err error
	if o.Set["Ls"] {
		if p.Ls, err = ParseIntList("-Ls", o.Ls); err != nil {
			return nil, err
		}
	}
	if o.Set["blocks"] {
		if p.Blocks, err = ParseIntList("-blocks", o.Blocks); err != nil {
			return nil, err
		}
	}
	if o.Set["epochs"] {
		p.Epochs, p.CurveEpochs = o.Epochs, o.Epochs
	}
	if o.Set["L"] {
		p.CurveL = o.L
	}
	for _, v := range []struct {
		flag string
		dst  *int
		val  int
	}{{"seeds", &p.Seeds, o.Seeds}, {"M", &p.M, o.M}, {"N", &p.N, o.N}, {"batch", &p.Batch, o.Batch}} {
		if o.Set[v.flag] {
			if v.val <= 0 {
				return nil, fmt.Errorf("-%s = %d, want > 0", v.flag, v.val)
			}
			*v.dst = v.val
		}
	}
	if p.Epochs <= 0 || p.CurveEpochs <= 0 {
		return nil, fmt.Errorf("-epochs must be positive")
	}
	if o.Set["lr"] {
		p.LR = o.LR
	}
	if !(p.LR > 0) {
		return nil, fmt.Errorf("-lr = %v, want > 0", p.LR)
	}
	if o.Set["seed"] {
		p.Seed = o.Seed
	}
	if o.Set["data-seed"] {
		p.DataSeed = o.DataSeed
	}
	if o.Set["dtype"] {
		p.Dtype = o.Dtype
	}
	if o.Set["results"] {
		p.ResultsDir = o.Results
	}
	names := strings.Split(o.Sweep, ",")
	if strings.TrimSpace(o.Sweep) == "all" {
		names = slices.Clone(FigureNames)
	}
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	st := &Setup{preset: p, resultsDir: p.ResultsDir, figDir: p.ResultsDir, exp: o.Exp, fs: o.FlagSet,
		logOut: os.Stdout, progress: os.Stderr, now: time.Now}
	if o.Quiet {
		st.progress = nil
	}
	if o.Set["figures"] {
		st.figDir = o.Figures
	}
	if st.figs, err = figures(names, p); err != nil {
		return nil, err
	}
	for s := 0; s < p.Seeds; s++ {
		st.seeds = append(st.seeds, p.Seed+uint64(s))
	}
	return st, nil
}

// label is how the run is named in logs and plans, e.g. "fig2 gd-onestep K=1
// rbf L=256 seed=1".
func (r plannedRun) label() string {
	return fmt.Sprintf("%s %s L=%d seed=%d", strings.Join(r.figs, ","), r.spec.name(), r.spec.L, r.spec.Seed)
}

// runOutput is a run's result in the store (package experiment): the test
// metrics after training and, for fig3, after every epoch. (An older
// journal line's fields other than config, train_seconds and finished are
// the same.)
type runOutput struct {
	Final train.Metrics        `json:"final"`
	Curve []train.EpochMetrics `json:"curve,omitempty"`
}

// newRunOutput keeps the deterministic part of rec: its metrics without the
// evaluation times, so that a run repeated (a duplicated array task) stores
// the identical output.
func newRunOutput(rec sweep.Record) runOutput {
	out := runOutput{Final: rec.Final, Curve: slices.Clone(rec.Curve)}
	out.Final.Seconds = 0
	for i := range out.Curve {
		out.Curve[i].Seconds = 0
	}
	return out
}

// Plan returns the sweep's plan of package experiment (without estimates).
func (st *Setup) Plan() (experiment.Plan, error) {
	_, p, err := experimentPlan(st)
	return p, err
}

// experimentPlan is the sweep as a plan of package experiment.
func experimentPlan(st *Setup) ([]plannedRun, experiment.Plan, error) {
	runs, err := plan(st.figs, st.seeds)
	if err != nil {
		return nil, experiment.Plan{}, err
	}
	p := experiment.Plan{Name: "synthetic-" + strings.ReplaceAll(figNames(st.figs), ",", "-")}
	for _, r := range runs {
		if _, err := p.Add(r.spec, r.label(), 0, r.figs...); err != nil {
			return nil, p, err
		}
	}
	return runs, p, nil
}

// estimate measures the speed of the kinds of model of runs at indices and
// sets their runs' estimates in p; it returns the sum.
func estimate(st *Setup, runs []plannedRun, p experiment.Plan, indices []int) (map[string]stepCost, float64, error) {
	if len(indices) == 0 {
		return nil, 0, nil
	}
	sel := make([]plannedRun, len(indices))
	for k, i := range indices {
		sel[k] = runs[i]
	}
	fmt.Fprintf(st.logOut, "measuring the speed of %d model kinds on this machine ...\n", countArchs(sel))
	cost, err := calibrate(sel)
	if err != nil {
		return nil, 0, err
	}
	total := 0.0
	for _, i := range indices {
		p.Runs[i].Estimate = cost[archKey(runs[i].spec)].seconds(runs[i].spec)
		total += p.Runs[i].Estimate
	}
	return cost, total, nil
}

// RunSweep does what the experiment flags ask: print the plan, submit it to
// Slurm, merge the runs done into the figures, run a share of it (-index,
// -shard), or, by default, run every pending run and write every figure's
// JSON, CSV and PNG.
func RunSweep(st *Setup, exec graph.ExecutorFactory) error {
	st.exec = exec
	runs, p, err := experimentPlan(st)
	if err != nil {
		return err
	}
	store, err := experiment.OpenStore(st.resultsDir)
	if err != nil {
		return err
	}
	if st.exp.Merge {
		return mergeSweep(st, p, store)
	}
	c, err := store.Load()
	if err != nil {
		return err
	}
	if len(c.Unreadable) > 0 {
		fmt.Fprintf(st.logOut, "warning: %s: skipped %d unreadable result(s) (%s); those runs will rerun\n", st.resultsDir, len(c.Unreadable), strings.Join(c.Unreadable, ", "))
	}
	done := func(key string) bool { _, ok := c.Results[key]; return ok }
	if st.exp.Plan || st.exp.PlanJSON || st.exp.Submit != "" {
		return planSweep(st, runs, p, store, done)
	}
	indices, err := st.exp.Indices(len(p.Runs))
	if err != nil {
		return err
	}
	var pending []int
	ndone := 0
	for _, r := range p.Runs {
		if done(r.Key) {
			ndone++
		}
	}
	for _, i := range indices {
		if !done(p.Runs[i].Key) {
			pending = append(pending, i)
		}
	}
	fmt.Fprintf(st.logOut, "sweep %s: %d runs, %d already in %s", figNames(st.figs), len(runs), ndone, store.RunsDir())
	if st.exp.Worker() {
		fmt.Fprintf(st.logOut, "; this worker runs %d of them", len(pending))
	}
	fmt.Fprintln(st.logOut)
	if st.preset.FigureSuffix == QuickPreset.FigureSuffix && hasTF(st.figs) {
		fmt.Fprintln(st.logOut, "note: the quick preset undertrains the Trained TF baselines (few epochs, small L): it checks the pipeline; the full preset (no -quick) gives the paper's comparison")
	}
	total := 0.0
	if st.exp.Index == "" { // one run needs no estimate
		if _, total, err = estimate(st, runs, p, pending); err != nil {
			return err
		}
		fmt.Fprintf(st.logOut, "estimated time: %s for %d runs, one after the other on one free core (CPU time measured just now; other jobs on the machine make it longer)\n",
			experiment.FormatSeconds(total), len(pending))
	}
	sets := map[[2]uint64]*dataSets{}
	start := st.now()
	lastPlot := start
	spentEst := 0.0
	n := 0
	err = experiment.Execute(p, store, pending, func(i int, er experiment.Run) (any, error) {
		n++
		r := runs[i]
		dk := [2]uint64{uint64(r.spec.N), r.spec.DataSeed}
		if sets[dk] == nil {
			d, err := newDataSets(r.spec.N, r.spec.DataSeed)
			if err != nil {
				return nil, err
			}
			sets[dk] = d
		}
		label := fmt.Sprintf("[%d/%d] %s", n, len(pending), er.Label)
		t, err := r.spec.train(sets[dk], st.exec, st.progress, label)
		if err != nil {
			return nil, err
		}
		spentEst += er.Estimate
		elapsed := st.now().Sub(start).Seconds()
		left := (total - spentEst) * elapsed / max(spentEst, 1e-9) // rescaled by the speed seen so far
		fmt.Fprintf(st.logOut, "%s: %v  (%.0fs; sweep %d/%d, elapsed %s, left ~%s)\n",
			label, t.rec.Final, t.rec.TrainSeconds, n, len(pending), experiment.FormatSeconds(elapsed), experiment.FormatSeconds(left))
		if !st.exp.Worker() && st.now().Sub(lastPlot) > time.Minute && n < len(pending) {
			if err := writeFiguresFrom(st, p, store); err != nil {
				return nil, err
			}
			lastPlot = st.now()
		}
		return newRunOutput(t.rec), nil
	}, st.progress)
	if st.exp.Worker() {
		if err == nil {
			fmt.Fprintf(st.logOut, "worker done; -merge writes the figures once every run of the plan is done\n")
		}
		return err
	}
	rep, cerr := experiment.Collect(p, store)
	if cerr != nil {
		return errors.Join(err, cerr)
	}
	if !rep.Complete() {
		fmt.Fprintf(st.logOut, "%d runs of the plan have no result in %s (failed, or other workers'); the figures show what is there\n", len(rep.Missing), store.RunsDir())
	}
	return errors.Join(err, writeFigures(st, rep))
}

// writeFiguresFrom writes the figures from the runs in store so far.
func writeFiguresFrom(st *Setup, p experiment.Plan, store *experiment.Store) error {
	rep, err := experiment.Collect(p, store)
	if err != nil {
		return err
	}
	return writeFigures(st, rep)
}

// mergeSweep writes the figures from the runs done: the status first, and
// a refusal while runs are missing unless -partial.
func mergeSweep(st *Setup, p experiment.Plan, store *experiment.Store) error {
	rep, err := experiment.Collect(p, store)
	if err != nil {
		return err
	}
	rep.WriteStatus(st.logOut)
	if err := rep.Check(st.exp.Partial); err != nil {
		return err
	}
	if note := rep.Note(); note != "" {
		fmt.Fprintln(st.logOut, note)
	}
	return writeFigures(st, rep)
}

// planSweep prints the plan with estimates measured on this machine (-plan,
// -plan-json), or submits its missing runs to Slurm (-submit).
func planSweep(st *Setup, runs []plannedRun, p experiment.Plan, store *experiment.Store, done func(string) bool) error {
	all := make([]int, len(runs))
	for i := range all {
		all[i] = i
	}
	out := st.logOut
	if st.exp.PlanJSON { // stdout is the JSON: the calibration message goes to stderr
		st.logOut = st.progress
		if st.logOut == nil {
			st.logOut = io.Discard
		}
	}
	cost, _, err := estimate(st, runs, p, all)
	st.logOut = out
	if err != nil {
		return err
	}
	switch {
	case st.exp.PlanJSON:
		return p.WriteJSON(st.logOut, done)
	case st.exp.Submit != "":
		_, err := experiment.Submit(st.logOut, p, store, st.fs, st.exp.Slurm)
		return err
	}
	seen := map[string]bool{}
	fmt.Fprintf(st.logOut, "measured CPU time per %d-context minibatch:\n", st.preset.Batch)
	for _, r := range runs {
		if k := archKey(r.spec); !seen[k] {
			seen[k] = true
			c := cost[k]
			fmt.Fprintf(st.logOut, "  %-40s %6.1f steps/s  forward %5.1f ms  build %4.0f ms\n", r.spec.name(), 1/c.step, 1e3*c.evalBatch, 1e3*c.build)
		}
	}
	return p.WriteText(st.logOut, done)
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
	k, _ := experiment.Key(r.arch())
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

// ParseIntList parses comma-separated positive integers for flag name.
func ParseIntList(name, s string) ([]int, error) {
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
