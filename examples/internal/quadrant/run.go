package quadrant

import (
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/examples/internal/sweep"
	"github.com/gdattn/gdattn/experiment"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
)

// Options are the settings of a sweep (the command line's flags).
type Options struct {
	Kernels                       string // comma-separated attention kernels
	Seeds                         int
	Seed, DataSeed                uint64
	L, M, EvalM, N, Epochs, Every int
	C, DPrime                     int // task sizes (Appendix F's supplementary dataset: C = 100, d' = 25)
	Batch, Grid, Context          int
	LR                            float64
	Out, Figdir                   string
	Quiet                         bool
	Exp                           experiment.Flags
	FS                            *flag.FlagSet // the command line (-submit passes it on to the workers)
}

// runKey identifies one training run in the journal; every field changes
// the result.
type runKey struct {
	Kernel   string  `json:"kernel"`
	Model    string  `json:"model"` // "gd" or "tf"
	Seed     uint64  `json:"seed"`
	DataSeed uint64  `json:"data_seed"`
	L        int     `json:"l"`
	EvalM    int     `json:"eval_m"`
	N        int     `json:"n"`
	Epochs   int     `json:"epochs"`
	Every    int     `json:"every"`
	Batch    int     `json:"batch"`
	LR       float64 `json:"lr"`
	// C and DPrime are the task's sizes; 0 (omitted, so that the keys of
	// runs journaled before these fields existed still match) means the
	// defaults C = 20, d' = 5.
	C      int `json:"c,omitempty"`
	DPrime int `json:"dprime,omitempty"`
}

// sizes returns the key's C and d', with the defaults filled in.
func (k runKey) sizes() (C, dPrime int) {
	def := data.DefaultQuadrantConfig() // C = 20, d' = 5
	C, dPrime = def.C, def.DPrime
	if k.C != 0 {
		C = k.C
	}
	if k.DPrime != 0 {
		dPrime = k.DPrime
	}
	return C, dPrime
}

// ModelNames are the models compared in every panel.
var ModelNames = []string{"gd", "tf"}

// model is a built GD or TF model with its scope.
type model struct {
	s   *graph.Scope
	m   train.Model
	gd  *gd.Model
	tf  *tf.Model
	key runKey
}

// build makes the model of key for minibatches of batch contexts; its
// parameters are drawn from the scope's generator seeded with key.Seed.
func build(key runKey, batch int) (*model, error) {
	s, err := graph.NewScope(graph.Float64, key.Seed)
	if err != nil {
		return nil, err
	}
	out := &model{s: s, key: key}
	C, dp := key.sizes()
	d := data.QuadrantD
	switch key.Model {
	case "gd":
		g, err := gd.NewModel(s, gd.Config{D: d, DPrime: dp, C: C, N: key.N, Form: gd.OneStep, Kernel: layers.Builtin(key.Kernel, 1)}, batch)
		if err != nil {
			return nil, err
		}
		out.gd, out.m = g, g
	case "tf":
		t, err := tf.NewModel(s, tf.Config{D: d, DPrime: dp, C: C, N: key.N, Kernel: layers.Builtin(key.Kernel, 1)}, batch)
		if err != nil {
			return nil, err
		}
		out.tf, out.m = t, t
	default:
		return nil, fmt.Errorf("unknown model %q", key.Model)
	}
	return out, nil
}

// layer returns the trained model as a oneLayer.
func (m *model) layer() (oneLayer, error) {
	if m.gd != nil {
		return fromGD(m.gd)
	}
	return fromTF(m.tf)
}

// sets are the task and its train, test and evaluation-curve contexts.
type sets struct {
	task        *data.Quadrant
	train, test *data.Batch
	testLatent  *data.QuadrantLatent
	eval        *data.Batch // the first evalM test contexts, for the curves
}

func makeSets(o Options) (*sets, error) {
	task, err := data.NewQuadrant(data.QuadrantConfig{N: o.N, C: o.C, DPrime: o.DPrime}, o.DataSeed)
	if err != nil {
		return nil, err
	}
	st := &sets{task: task}
	if st.train, err = task.Sample(o.L, rand.New(rand.NewPCG(o.DataSeed, 1))); err != nil {
		return nil, err
	}
	if st.test, st.testLatent, err = task.SampleLatent(o.M, rand.New(rand.NewPCG(o.DataSeed, 2))); err != nil {
		return nil, err
	}
	st.eval, err = st.test.Slice(0, min(o.EvalM, o.M))
	return st, err
}

// runRecord is a finished run: its key and journal record.
type runRecord struct {
	key runKey
	rec sweep.Record
}

// keyOf is the journal key of a run with the options o.
func keyOf(o Options, kern, model string, seed uint64) runKey {
	k := runKey{Kernel: kern, Model: model, Seed: seed, DataSeed: o.DataSeed,
		L: o.L, EvalM: o.EvalM, N: o.N, Epochs: o.Epochs, Every: o.Every, Batch: o.Batch, LR: o.LR}
	if def := data.DefaultQuadrantConfig(); o.C != def.C || o.DPrime != def.DPrime {
		k.C, k.DPrime = o.C, o.DPrime
	}
	return k
}

// ckptDir is where the parameters of a run are saved: named by kernel,
// model and seed, plus a hash of the whole key, so that runs with other
// settings in the same -out keep their own parameters.
func ckptDir(o Options, k runKey) string {
	h := fnv.New32a()
	b, _ := json.Marshal(k) // a struct of plain fields: cannot fail
	h.Write(b)
	return filepath.Join(o.Out, "ckpt", fmt.Sprintf("%s-%s-seed%d-%08x", k.Kernel, k.Model, k.Seed, h.Sum32()))
}

// savedConfig is the config.json of a run's checkpoint.
type savedConfig struct {
	Run runKey `json:"run"`
}

// sweepPlan lists the runs, kernel by kernel, model by model, seed by
// seed, as a plan of package experiment, with their keys.
func sweepPlan(o Options, kernels []string) (experiment.Plan, []runKey, error) {
	p := experiment.Plan{Name: "quadrant"}
	var keys []runKey
	for _, kern := range kernels {
		for _, name := range ModelNames {
			for s := 0; s < o.Seeds; s++ {
				key := keyOf(o, kern, name, o.Seed+uint64(s))
				if _, err := p.Add(key, fmt.Sprintf("%s %s seed %d", kern, name, key.Seed), 0, kern); err != nil {
					return p, nil, err
				}
				keys = append(keys, key)
			}
		}
	}
	return p, keys, nil
}

// openStore opens the results of -out: one file per run under -out/runs,
// and the older journal -out/journal.jsonl.
func openStore(o Options) (*experiment.Store, error) {
	s, err := experiment.OpenStore(o.Out)
	if err != nil {
		return nil, err
	}
	s.SetJournal("journal.jsonl")
	return s, nil
}

// runOutput is a run's result in the store: its final test metrics and
// training curve, without the evaluation times (so that a rerun stores an
// identical output).
type runOutput struct {
	Final train.Metrics        `json:"final"`
	Curve []train.EpochMetrics `json:"curve,omitempty"`
}

// trainAll trains the runs of p at indices that have no result, saving each
// run's parameters under -out/ckpt and its result in store.
func trainAll(o Options, st *sets, p experiment.Plan, keys []runKey, indices []int, store *experiment.Store, progress io.Writer) error {
	stepsPerEpoch := (o.L + o.Batch - 1) / o.Batch
	return experiment.Execute(p, store, indices, func(i int, _ experiment.Run) (any, error) {
		rec, err := trainOne(o, st, keys[i], stepsPerEpoch, progress)
		if err != nil {
			return nil, err
		}
		out := runOutput{Final: rec.Final, Curve: slices.Clone(rec.Curve)}
		out.Final.Seconds = 0
		for c := range out.Curve {
			out.Curve[c].Seconds = 0
		}
		return out, nil
	}, progress)
}

// collect returns the records of the runs done, in plan order, and the
// kernels all of whose runs are done.
func collect(rep *experiment.Report, keys []runKey, kernels []string) ([]runRecord, []string, error) {
	var runs []runRecord
	missing := map[string]bool{}
	for i, r := range rep.Plan.Runs {
		res, ok := rep.Get(r.Key)
		if !ok {
			missing[keys[i].Kernel] = true
			continue
		}
		var out runOutput
		if err := json.Unmarshal(res.Output, &out); err != nil {
			return nil, nil, fmt.Errorf("result of %s (%s): %w", r.Label, res.Source, err)
		}
		runs = append(runs, runRecord{keys[i], sweep.Record{Final: out.Final, Curve: out.Curve, TrainSeconds: res.Seconds}})
	}
	var complete []string
	for _, k := range kernels {
		if !missing[k] {
			complete = append(complete, k)
		}
	}
	return runs, complete, nil
}

func trainOne(o Options, st *sets, key runKey, stepsPerEpoch int, progress io.Writer) (sweep.Record, error) {
	m, err := build(key, o.Batch)
	if err != nil {
		return sweep.Record{}, err
	}
	r, err := train.NewRunner(m.m, train.RunnerConfig{Optim: train.Config{LR: o.LR, Progress: progress,
		Label: fmt.Sprintf("%s %s seed %d", key.Kernel, key.Model, key.Seed), Total: o.Epochs * stepsPerEpoch}})
	if err != nil {
		return sweep.Record{}, err
	}
	defer r.Close()
	start := time.Now()
	curve, err := r.FitCurve(st.train, st.eval, train.FitConfig{Epochs: o.Epochs, Seed: key.Seed}, o.Every)
	if err != nil {
		return sweep.Record{}, err
	}
	secs := time.Since(start).Seconds()
	final, err := r.Evaluate(st.test)
	if err != nil {
		return sweep.Record{}, err
	}
	fmt.Printf("%-9s %s seed %d: %v, trained in %.0f s\n", key.Kernel, key.Model, key.Seed, final, secs)
	if err := checkpoint.Save(ckptDir(o, key), m.s, savedConfig{Run: key}, checkpoint.SaveOptions{}); err != nil {
		return sweep.Record{}, err
	}
	return sweep.Record{Final: final, Curve: curve, TrainSeconds: secs}, nil
}

// load rebuilds the model of key (batch 1) with its saved parameters.
func load(o Options, key runKey) (*model, error) {
	m, err := build(key, 1)
	if err != nil {
		return nil, err
	}
	if err := checkpoint.Load(ckptDir(o, key), m.s, nil); err != nil {
		return nil, err
	}
	return m, nil
}

// ParseKernels splits a comma-separated kernel list and checks the names.
func ParseKernels(s string) ([]string, error) {
	var out []string
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		ok := false
		for _, n := range layers.KernelNames() {
			ok = ok || n == k
		}
		if !ok {
			return nil, fmt.Errorf("-kernels: unknown kernel %q (known: %v)", k, layers.KernelNames())
		}
		out = append(out, k)
	}
	return out, nil
}

// Run is the whole experiment: train (or resume), summarise, draw; or the
// part of it the experiment flags ask for (-plan, -submit, -index, -shard,
// -merge).
func Run(o Options, command string) error {
	start := time.Now()
	kernels, err := ParseKernels(o.Kernels)
	if err != nil {
		return err
	}
	if o.Seeds <= 0 || o.L <= 0 || o.M <= 0 || o.EvalM <= 0 || o.N <= 0 || o.Epochs <= 0 || o.Every <= 0 || o.Batch <= 0 || o.Grid < 2 {
		return fmt.Errorf("-seeds, -L, -M, -eval-M, -N, -epochs, -every and -batch must be positive and -grid >= 2")
	}
	p, keys, err := sweepPlan(o, kernels)
	if err != nil {
		return err
	}
	store, err := openStore(o)
	if err != nil {
		return err
	}
	switch {
	case o.Exp.Plan, o.Exp.PlanJSON:
		return experiment.WritePlan(os.Stdout, p, store, o.Exp.PlanJSON)
	case o.Exp.Submit != "":
		_, err := experiment.Submit(os.Stdout, p, store, o.FS, o.Exp.Slurm)
		return err
	}
	st, err := makeSets(o)
	if err != nil {
		return err
	}
	var progress io.Writer = os.Stderr
	if o.Quiet {
		progress = nil
	}
	if !o.Exp.Merge {
		fmt.Printf("quadrant task: d=2 C=%d d'=%d N=%d, L=%d train / M=%d test contexts, oracle %.4f; kernels %v, %d seeds, %d epochs of %d steps\n",
			st.task.Config.C, st.task.Config.DPrime, o.N, o.L, o.M, st.test.Oracle(), kernels, o.Seeds, o.Epochs, (o.L+o.Batch-1)/o.Batch)
		indices, err := o.Exp.Indices(len(p.Runs))
		if err != nil {
			return err
		}
		if err := trainAll(o, st, p, keys, indices, store, progress); err != nil || o.Exp.Worker() {
			return err
		}
	}
	rep, err := experiment.Collect(p, store)
	if err != nil {
		return err
	}
	if o.Exp.Merge {
		rep.WriteStatus(os.Stdout)
	}
	if err := rep.Check(o.Exp.Partial); err != nil {
		return err
	}
	runs, complete, err := collect(rep, keys, kernels)
	if err != nil {
		return err
	}
	if note := rep.Note(); note != "" {
		fmt.Printf("%s; the figures leave out the kernels with runs missing (%d of %d kept)\n", note, len(complete), len(kernels))
		if len(complete) == 0 {
			return fmt.Errorf("no kernel has all its runs done: nothing to draw")
		}
	}
	kernels = complete
	res := &results{Command: command, Task: st.task.Config, Oracle: st.test.Oracle(), EvalOracle: st.eval.Oracle()}
	res.Options.Kernels, res.Options.Seeds, res.Options.Seed, res.Options.DataSeed = kernels, o.Seeds, o.Seed, o.DataSeed
	res.Options.L, res.Options.M, res.Options.EvalM, res.Options.N = o.L, o.M, o.EvalM, o.N
	res.Options.Epochs, res.Options.Batch, res.Options.LR = o.Epochs, o.Batch, o.LR
	res.Partial = rep.Note()
	var figs []string
	save := func(f interface{ Save(string) error }, name string) error {
		path := filepath.Join(o.Out, name)
		if err := f.Save(path); err != nil {
			return err
		}
		figs = append(figs, path)
		return nil
	}
	for _, kern := range kernels {
		seed := medianSeed(runs, kern)
		kr, err := summarise(o, kern, runs, (o.L+o.Batch-1)/o.Batch, seed)
		if err != nil {
			return err
		}
		if kr.Map, err = probMaps(o, st, kern, seed, save); err != nil {
			return err
		}
		first, err := load(o, keyOf(o, kern, "tf", seed))
		if err != nil {
			return err
		}
		l, err := first.layer()
		if err != nil {
			return err
		}
		name := fmt.Sprintf("fig8_params_%s.png", kern)
		if err := save(paramsFigure(kern, seed, l), name); err != nil {
			return err
		}
		kr.Files = append(kr.Files, kr.Map.File, filepath.Join(o.Out, name))
		res.Kernels = append(res.Kernels, kr)
		printSummary(kr)
	}
	if err := save(accuracyFigure(res.Kernels, res.EvalOracle), "fig6_accuracy.png"); err != nil {
		return err
	}
	if err := save(qedFigure(res.Kernels), "fig9_q_ed.png"); err != nil {
		return err
	}
	res.Figures = figs
	if o.Figdir != "" {
		for _, f := range figs {
			if !docFigures[filepath.Base(f)] {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			if err := sweep.WriteFile(filepath.Join(o.Figdir, "quadrant_"+filepath.Base(f)), b); err != nil {
				return err
			}
		}
	}
	res.WallSeconds = time.Since(start).Seconds()
	path := filepath.Join(o.Out, "results.json")
	if err := sweep.WriteJSON(path, res); err != nil {
		return err
	}
	fmt.Printf("wrote %s and %d figures in %.0f s\n", path, len(figs), res.WallSeconds)
	return nil
}

// docFigures are the figures copied to -figdir: the paper's choices
// (Figure 7 for RBF, Figure 8 for softmax) and the softmax map.
var docFigures = map[string]bool{
	"fig6_accuracy.png": true, "fig9_q_ed.png": true,
	"fig7_probmap_rbf.png": true, "fig7_probmap_softmax.png": true, "fig8_params_softmax.png": true,
}

// probMaps draws Figure 7 for kernel kern from the GD and TF of one seed,
// evaluating all grid queries of each model in one forward pass.
func probMaps(o Options, st *sets, kern string, seed uint64, save func(interface{ Save(string) error }, string) error) (*mapResult, error) {
	b, mp, cats, err := chooseContext(st, o.Context)
	if err != nil {
		return nil, err
	}
	T, N, C := st.test.T, st.test.T-1, st.test.C
	ctxX := st.test.X[b*T*2 : (b*T+N)*2]
	ctxY := st.test.Y[b*T : b*T+N]
	grid := squareGrid(o.Grid)
	mr := &mapResult{Seed: seed, Context: b, QuadrantCats: st.testLatent.Cats[4*b : 4*b+4], MostProbable: mp, Categories: cats,
		Grid: o.Grid, TrueAgree: map[string]float64{}, Seconds: map[string]float64{}}
	probs := map[string][]float64{}
	truth := make([]float64, C)
	for _, name := range ModelNames {
		m, err := load(o, keyOf(o, kern, name, seed))
		if err != nil {
			return nil, err
		}
		l, err := m.layer()
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		if probs[name], err = gridProbs(l, ctxX, ctxY, grid); err != nil {
			return nil, err
		}
		mr.Seconds[name] = time.Since(t0).Seconds()
		agree := 0
		for g := 0; g < len(grid)/2; g++ {
			if err := st.task.Probs(mr.QuadrantCats, st.testLatent.Angles[b], grid[2*g], grid[2*g+1], truth); err != nil {
				return nil, err
			}
			if argmax(truth) == argmax(probs[name][g*C:(g+1)*C]) {
				agree++
			}
		}
		mr.TrueAgree[name] = float64(agree) / float64(len(grid)/2)
	}
	for _, c := range cats {
		d := 0.0
		for g := 0; g < len(grid)/2; g++ {
			d = math.Max(d, math.Abs(probs["gd"][g*C+c]-probs["tf"][g*C+c]))
		}
		mr.MaxAbsDiff = append(mr.MaxAbsDiff, d)
	}
	mr.File = filepath.Join(o.Out, fmt.Sprintf("fig7_probmap_%s.png", kern))
	return mr, save(mapFigure(kern, seed, o.Grid, probs, C, cats, ctxX, ctxY), filepath.Base(mr.File))
}

// medianSeed is the seed of the TF run of kern with the median final test
// top-1 (the lower one of the middle pair for an even count): Figures 7-9
// show a typical run rather than the first.
func medianSeed(runs []runRecord, kern string) uint64 {
	var tfs []runRecord
	for _, r := range runs {
		if r.key.Kernel == kern && r.key.Model == "tf" {
			tfs = append(tfs, r)
		}
	}
	sort.SliceStable(tfs, func(i, j int) bool { return tfs[i].rec.Final.Top1 < tfs[j].rec.Final.Top1 })
	return tfs[(len(tfs)-1)/2].key.Seed
}

func argmax(p []float64) int {
	best := 0
	for i, v := range p {
		if v > p[best] {
			best = i
		}
	}
	return best
}

func printSummary(kr *kernelResult) {
	for _, name := range ModelNames {
		if mr := kr.Models[name]; mr != nil {
			fmt.Printf("== %-9s %-10s top-1 %.4f ± %.4f  NLL %.4f ± %.4f  g %.3g", kr.Kernel, modelLabels[name],
				mr.Top1.Mean, mr.Top1.Std, mr.NLL.Mean, mr.NLL.Std, mr.Gamma.Mean)
			if mr.Alpha != nil {
				fmt.Printf("  α %.3g", mr.Alpha.Mean)
			}
			fmt.Println()
		}
	}
	if a := kr.Analysis; a != nil {
		fmt.Printf("   TF analysis (mean ± std over seeds): off-diagonal share / diagonal spread of Q %.3f ± %.3f / %.3f, of E·D %.3f ± %.3f / %.3f, of W_V·P·R %.3f ± %.3f / %.3f\n",
			a.QDiagonality.Mean, a.QDiagonality.Std, a.QSpread.Mean, a.EDDiagonality.Mean, a.EDDiagonality.Std, a.EDSpread.Mean,
			a.MEffDiagonality.Mean, a.MEffDiagonality.Std, a.MEffSpread.Mean)
	}
	if m := kr.Map; m != nil {
		fmt.Printf("   map (seed %d): context %d, categories %v, max |p_GD − p_TF| %v, argmax agreement with truth: GD %.3f, TF %.3f\n",
			m.Seed, m.Context, m.Categories, fmtFloats(m.MaxAbsDiff), m.TrueAgree["gd"], m.TrueAgree["tf"])
	}
}

func fmtFloats(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.3f", x)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// PlannedCheckpoints lists the checkpoint of every run o.Kernels and
// o.Seeds ask for, for the up-front check of o.Out.
func PlannedCheckpoints(o Options) []string {
	kernels, err := ParseKernels(o.Kernels)
	if err != nil {
		return nil
	}
	var dirs []string
	for _, kern := range kernels {
		for _, name := range ModelNames {
			for s := 0; s < o.Seeds; s++ {
				dirs = append(dirs, ckptDir(o, keyOf(o, kern, name, o.Seed+uint64(s))))
			}
		}
	}
	return dirs
}
