package regression

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/experiment"
	"github.com/gdattn/gdattn/internal/cli"
)

// Plan is the resolved command line: the preset with the flags given on
// the command line applied.
type Plan struct {
	Exps     []string `json:"exps"`
	Steps    []int    `json:"steps"`
	Ls       []int    `json:"Ls"`
	D        int      `json:"d"`
	N        int      `json:"N"`
	DY       int      `json:"dy"`
	Noise    float64  `json:"noise"` // linear task
	NoiseRBF float64  `json:"noise_nonlinear"`
	L        int      `json:"L"`
	M        int      `json:"M"`
	Train    trainCfg `json:"train"`
	Seeds    int      `json:"seeds"`
	Seed     uint64   `json:"seed"`
	DataSeed uint64   `json:"data_seed"`
	Dtype    string   `json:"dtype"`
	Quick    bool     `json:"quick"`

	results, figures, out string
	progress              io.Writer
}

// Options are the settings of the experiments (the command line's flags,
// but -eval's); Set names the flags given on the command line.
type Options struct {
	Exps, Steps, Ls, Dtype, Results, Figures, Out string
	D, N, DY, L, M, Epochs, Batch, Seeds          int
	Noise, LR                                     float64
	Seed, DataSeed                                uint64
	Quick, Quiet                                  bool
	Set                                           cli.Set
}

// Resolve applies the preset and the flags given in o to the defaults.
func Resolve(o Options) (*Plan, error) {
	p := &Plan{D: o.D, N: o.N, DY: o.DY, Noise: o.Noise, NoiseRBF: 0.1, L: 8192, M: 2048,
		Train: trainCfg{Epochs: 40, Batch: o.Batch, LR: o.LR}, Seeds: 5, Seed: o.Seed, DataSeed: o.DataSeed,
		Dtype: o.Dtype, Quick: o.Quick, Ls: []int{256, 1024, 4096, 16384}}
	if o.Quick {
		p.L, p.M, p.Train.Epochs, p.Seeds, p.Ls = 2048, 512, 20, 2, []int{256, 1024}
	}
	if o.Set["noise"] {
		p.NoiseRBF = o.Noise
	}
	for _, f := range []struct {
		name string
		v    int
		dst  *int
	}{{"L", o.L, &p.L}, {"M", o.M, &p.M}, {"epochs", o.Epochs, &p.Train.Epochs}, {"seeds", o.Seeds, &p.Seeds}} {
		if o.Set[f.name] {
			*f.dst = f.v
		}
	}
	var err error
	p.Exps = strings.Split(o.Exps, ",")
	if p.Steps, err = ints(o.Steps); err != nil {
		return nil, fmt.Errorf("-steps: %w", err)
	}
	if o.Ls != "" {
		if p.Ls, err = ints(o.Ls); err != nil {
			return nil, fmt.Errorf("-Ls: %w", err)
		}
	}
	p.results = o.Results
	if p.results == "" {
		p.results = filepath.Join("results", "regression"+p.suffix())
	}
	p.figures = o.Figures
	if p.figures == "" {
		p.figures = p.results
	}
	p.out = o.Out
	if !o.Quiet {
		p.progress = os.Stderr
	}
	return p, nil
}

// mcSamples is the number of tasks of the Monte Carlo estimate of α*.
func (p *Plan) mcSamples() int {
	if p.Quick {
		return 200_000
	}
	return 1_000_000
}

func (p *Plan) suffix() string {
	if p.Quick {
		return "-quick"
	}
	return ""
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// stat is a metric over seeds: mean, standard deviation (n−1) and values.
type stat struct {
	Mean   float64   `json:"mean"`
	Std    float64   `json:"std"`
	Values []float64 `json:"values"`
}

func newStat(v []float64) stat {
	s := stat{Values: v}
	for _, x := range v {
		s.Mean += x / float64(len(v))
	}
	if len(v) > 1 {
		for _, x := range v {
			s.Std += (x - s.Mean) * (x - s.Mean)
		}
		s.Std = math.Sqrt(s.Std / float64(len(v)-1))
	}
	return s
}

func (s stat) String() string { return fmt.Sprintf("%.4f ± %.4f", s.Mean, s.Std) }

// linearRow is one K of the linear experiment.
type linearRow struct {
	K       int  `json:"K"`
	GDMSE   stat `json:"gd_mse"`
	TFMSE   stat `json:"tf_mse"`
	GDAlpha stat `json:"gd_alpha"`
	// Dist and Cos compare the K-layer TF with the K-step GD model on the
	// test contexts: mean L2 distance of the query predictions and mean
	// cosine similarity of the sensitivities dŷ/dx_q.
	Dist stat `json:"pred_distance"`
	Cos  stat `json:"sensitivity_cosine"`
}

// linearResult is linear.json.
type linearResult struct {
	Plan   *Plan       `json:"plan"`
	Oracle float64     `json:"oracle"`   // mean Bayes error of the test queries
	Zero   float64     `json:"zero_mse"` // MSE of predicting 0 (E y_q² on the test set)
	Rows   []linearRow `json:"rows"`
	// The optimal one-step learning rate and its MSE: closed form and
	// Monte Carlo over 10^6 tasks.
	AlphaOpt   float64 `json:"alpha_opt"`
	MSEOpt     float64 `json:"mse_opt"`
	AlphaOptMC float64 `json:"alpha_opt_mc"`
	MSEOptMC   float64 `json:"mse_opt_mc"`
	// AlphaOptTrain minimises the one-step MSE on the training contexts
	// themselves: what a perfectly trained one-step model learns from them.
	AlphaOptTrain float64 `json:"alpha_opt_train"`
	Seconds       float64 `json:"seconds"`
}

// nonlinearRow is one L of the nonlinear experiment: test MSE of one GD step
// with the RBF and the softmax kernel and of a 1-layer softmax TF.
type nonlinearRow struct {
	L         int  `json:"L"`
	GDRBF     stat `json:"gd_rbf"`
	GDSoftmax stat `json:"gd_softmax"`
	TFSoftmax stat `json:"tf_softmax"`
}

type nonlinearResult struct {
	Plan    *Plan          `json:"plan"`
	Oracle  float64        `json:"oracle"`
	Zero    float64        `json:"zero_mse"`
	Rows    []nonlinearRow `json:"rows"`
	Seconds float64        `json:"seconds"`
}

// runKey is one run of the plan, with every setting that changes its
// result: a linear run (K, seed) trains the K-step GD and the K-layer TF and
// compares them; a nonlinear run (L, model, kernel, seed) trains one model on
// the first L contexts of a pool of MaxL.
type runKey struct {
	Exp      string   `json:"exp"`
	Model    string   `json:"model,omitempty"` // nonlinear: gd or tf
	Kernel   string   `json:"kernel"`
	K        int      `json:"K"`
	L        int      `json:"L"`
	MaxL     int      `json:"max_L,omitempty"` // nonlinear: the pool the L contexts are the first of
	M        int      `json:"M"`
	D        int      `json:"d"`
	N        int      `json:"N"`
	DY       int      `json:"dy"`
	Noise    float64  `json:"noise"`
	Train    trainCfg `json:"train"`
	Dtype    string   `json:"dtype"`
	Seed     uint64   `json:"seed"`
	DataSeed uint64   `json:"data_seed"`
	First    bool     `json:"-"` // the first seed: a linear run saves its GD checkpoint
}

// linearOut and nonlinearOut are the outputs of a run.
type linearOut struct {
	GDMSE float64 `json:"gd_mse"`
	TFMSE float64 `json:"tf_mse"`
	Alpha float64 `json:"gd_alpha"`
	Dist  float64 `json:"pred_distance"`
	Cos   float64 `json:"sensitivity_cosine"`
}

type nonlinearOut struct {
	MSE float64 `json:"mse"`
}

// nonlinearSpecs are the models of a nonlinear row, in table order.
var nonlinearSpecs = []spec{{"gd", 1, "rbf"}, {"gd", 1, "softmax"}, {"tf", 1, "softmax"}}

// runPlan lists the runs of p's experiments: linear K by K, seed by seed;
// nonlinear L by L, model by model, seed by seed.
func runPlan(p *Plan) (experiment.Plan, []runKey, error) {
	ep := experiment.Plan{Name: "regression"}
	var keys []runKey
	add := func(k runKey, label string) error {
		keys = append(keys, k)
		_, err := ep.Add(k, label, 0, k.Exp)
		return err
	}
	for _, e := range p.Exps {
		switch e {
		case "linear":
			for _, K := range p.Steps {
				for s := 0; s < p.Seeds; s++ {
					k := runKey{Exp: e, Kernel: "linear", K: K, L: p.L, M: p.M, D: p.D, N: p.N, DY: p.DY, Noise: p.Noise,
						Train: p.Train, Dtype: p.Dtype, Seed: p.Seed + uint64(s), DataSeed: p.DataSeed, First: s == 0}
					if err := add(k, fmt.Sprintf("linear K=%d seed %d", K, k.Seed)); err != nil {
						return ep, nil, err
					}
				}
			}
		case "nonlinear":
			maxL := slices.Max(p.Ls)
			for _, L := range p.Ls {
				for _, sp := range nonlinearSpecs {
					for s := 0; s < p.Seeds; s++ {
						k := runKey{Exp: e, Model: sp.Model, Kernel: sp.Kernel, K: sp.Depth, L: L, MaxL: maxL, M: p.M, D: p.D, N: p.N,
							DY: p.DY, Noise: p.NoiseRBF, Train: p.Train, Dtype: p.Dtype, Seed: p.Seed + uint64(s), DataSeed: p.DataSeed}
						if err := add(k, fmt.Sprintf("nonlinear L=%d %s seed %d", L, sp, k.Seed)); err != nil {
							return ep, nil, err
						}
					}
				}
			}
		}
	}
	return ep, keys, nil
}

// linearData is the linear experiment's task, sets and reference numbers.
type linearData struct {
	train, test *data.Batch
	res         *linearResult
}

func newLinearData(p *Plan) (*linearData, error) {
	task, err := data.NewLinearRegression(data.LinearRegressionConfig{D: p.D, DY: p.DY, N: p.N, Noise: p.Noise})
	if err != nil {
		return nil, err
	}
	d := &linearData{}
	if d.train, err = task.Sample(p.L, rand.New(rand.NewPCG(p.DataSeed, 1))); err != nil {
		return nil, err
	}
	if d.test, err = task.Sample(p.M, rand.New(rand.NewPCG(p.DataSeed, 2))); err != nil {
		return nil, err
	}
	res := &linearResult{Plan: p, Oracle: d.test.Oracle()}
	for _, y := range d.test.QueryTargets() {
		res.Zero += y * y / float64(d.test.B*d.test.DY)
	}
	res.AlphaOpt, res.MSEOpt = optimalAlpha(p.D, p.N, p.Noise)
	if res.AlphaOptMC, res.MSEOptMC, err = optimalAlphaMC(task, p.mcSamples(), p.DataSeed+1000); err != nil {
		return nil, err
	}
	var acc alphaAcc
	acc.add(d.train)
	res.AlphaOptTrain, _ = acc.result()
	d.res = res
	return d, nil
}

func (d *linearData) printHeader(p *Plan) {
	res := d.res
	fmt.Printf("linear regression: d=%d, N=%d, d_y=%d, noise %g; L=%d, M=%d, %d epochs, %d seeds\n",
		p.D, p.N, p.DY, p.Noise, p.L, p.M, p.Train.Epochs, p.Seeds)
	fmt.Printf("  Bayes error %.4f, zero predictor %.4f; optimal one-step α* = %.4f (MSE %.4f; Monte Carlo over %d tasks %.4f, MSE %.4f; on the training contexts %.4f)\n",
		res.Oracle, res.Zero, res.AlphaOpt, res.MSEOpt, p.mcSamples(), res.AlphaOptMC, res.MSEOptMC, res.AlphaOptTrain)
}

// runLinear trains the K-step GD and the K-layer TF of run k and compares
// them; the first seed's GD is saved to -out.
func runLinear(p *Plan, d *linearData, k runKey) (linearOut, error) {
	var out linearOut
	g, err := trainOne(spec{"gd", k.K, "linear"}, p.Dtype, p.D, p.DY, p.N, d.train, d.test, p.Train, k.Seed, p.progress)
	if err != nil {
		return out, err
	}
	defer g.runner.Close()
	t, err := trainOne(spec{"tf", k.K, "linear"}, p.Dtype, p.D, p.DY, p.N, d.train, d.test, p.Train, k.Seed, p.progress)
	if err != nil {
		return out, err
	}
	defer t.runner.Close()
	dv, cv, err := compare(t.runner, g.runner, d.test)
	if err != nil {
		return out, err
	}
	if k.First && p.out != "" {
		path, err := saveGD(g, p.checkpointDir(k.K))
		if err != nil {
			return out, err
		}
		fmt.Printf("  saved checkpoint %s (-eval %s evaluates it)\n", path, path)
	}
	fmt.Printf("  K=%d seed %d: GD MSE %.4f (α %.4f), TF MSE %.4f, distance %.4f, sensitivity cosine %.4f\n",
		k.K, k.Seed, g.met.MSE, g.alpha, t.met.MSE, dv, cv)
	return linearOut{GDMSE: g.met.MSE, TFMSE: t.met.MSE, Alpha: g.alpha, Dist: dv, Cos: cv}, nil
}

// nonlinearData is the nonlinear experiment's pool of training contexts
// and its test set.
type nonlinearData struct {
	pool, test *data.Batch
	res        *nonlinearResult
}

func newNonlinearData(p *Plan) (*nonlinearData, error) {
	task, err := data.NewRBFRegression(data.RBFRegressionConfig{D: p.D, DY: p.DY, N: p.N, Noise: p.NoiseRBF})
	if err != nil {
		return nil, err
	}
	d := &nonlinearData{}
	if d.pool, err = task.Sample(slices.Max(p.Ls), rand.New(rand.NewPCG(p.DataSeed, 3))); err != nil {
		return nil, err
	}
	if d.test, err = task.Sample(p.M, rand.New(rand.NewPCG(p.DataSeed, 4))); err != nil {
		return nil, err
	}
	d.res = &nonlinearResult{Plan: p, Oracle: d.test.Oracle()}
	for _, y := range d.test.QueryTargets() {
		d.res.Zero += y * y / float64(d.test.B*d.test.DY)
	}
	return d, nil
}

func runNonlinear(p *Plan, d *nonlinearData, k runKey) (nonlinearOut, error) {
	trainSet, err := d.pool.Slice(0, k.L) // the first L contexts: nested training sets
	if err != nil {
		return nonlinearOut{}, err
	}
	f, err := trainOne(spec{k.Model, k.K, k.Kernel}, p.Dtype, p.D, p.DY, p.N, trainSet, d.test, p.Train, k.Seed, p.progress)
	if err != nil {
		return nonlinearOut{}, err
	}
	f.runner.Close()
	return nonlinearOut{MSE: f.met.MSE}, nil
}

// RunAll does what the experiment flags ask: print the plan, submit it to
// Slurm, run a part of it (-index, -shard), merge the runs done into the
// tables and figures (-merge), or, by default, run every run without a
// result and merge.
func RunAll(p *Plan, exp experiment.Flags, fs *flag.FlagSet) error {
	start := time.Now()
	ep, keys, err := runPlan(p)
	if err != nil {
		return err
	}
	store, err := experiment.OpenStore(p.results)
	if err != nil {
		return err
	}
	switch {
	case exp.Plan, exp.PlanJSON:
		return experiment.WritePlan(os.Stdout, ep, store, exp.PlanJSON)
	case exp.Submit != "":
		_, err := experiment.Submit(os.Stdout, ep, store, fs, exp.Slurm)
		return err
	}
	var lin *linearData
	var non *nonlinearData
	if slices.Contains(p.Exps, "linear") {
		if lin, err = newLinearData(p); err != nil {
			return err
		}
	}
	if slices.Contains(p.Exps, "nonlinear") {
		if non, err = newNonlinearData(p); err != nil {
			return err
		}
	}
	if !exp.Merge {
		indices, err := exp.Indices(len(ep.Runs))
		if err != nil {
			return err
		}
		if lin != nil && !exp.Worker() {
			lin.printHeader(p)
		}
		err = experiment.Execute(ep, store, indices, func(i int, _ experiment.Run) (any, error) {
			if keys[i].Exp == "linear" {
				return runLinear(p, lin, keys[i])
			}
			return runNonlinear(p, non, keys[i])
		}, p.progress)
		if err != nil || exp.Worker() {
			return err
		}
	}
	rep, err := experiment.Collect(ep, store)
	if err != nil {
		return err
	}
	if exp.Merge {
		rep.WriteStatus(os.Stdout)
	}
	if err := rep.Check(exp.Partial); err != nil {
		return err
	}
	if note := rep.Note(); note != "" {
		fmt.Println(note + "; the tables hold the runs done")
	}
	if lin != nil {
		if exp.Merge {
			lin.printHeader(p)
		}
		if err := mergeLinear(p, lin.res, rep, keys); err != nil {
			return err
		}
	}
	if non != nil {
		if err := mergeNonlinear(p, non.res, rep, keys); err != nil {
			return err
		}
	}
	fmt.Printf("done in %.0f s; results in %s, figures in %s\n", time.Since(start).Seconds(), p.results, p.figures)
	return nil
}

// outputs returns the outputs of the runs done of experiment exp, with
// their keys, in plan order.
func outputs[T any](rep *experiment.Report, keys []runKey, exp string) ([]runKey, []T, error) {
	var ks []runKey
	var outs []T
	for i, r := range rep.Plan.Runs {
		if keys[i].Exp != exp {
			continue
		}
		res, ok := rep.Get(r.Key)
		if !ok {
			continue
		}
		var o T
		if err := json.Unmarshal(res.Output, &o); err != nil {
			return nil, nil, fmt.Errorf("result of %s (%s): %w", r.Label, res.Source, err)
		}
		ks, outs = append(ks, keys[i]), append(outs, o)
	}
	return ks, outs, nil
}

func mergeLinear(p *Plan, res *linearResult, rep *experiment.Report, keys []runKey) error {
	ks, outs, err := outputs[linearOut](rep, keys, "linear")
	if err != nil {
		return err
	}
	for _, K := range p.Steps {
		var gdm, tfm, al, dist, cos []float64
		for i, k := range ks {
			if k.K == K {
				o := outs[i]
				gdm, tfm, al = append(gdm, o.GDMSE), append(tfm, o.TFMSE), append(al, o.Alpha)
				dist, cos = append(dist, o.Dist), append(cos, o.Cos)
			}
		}
		if len(gdm) > 0 {
			res.Rows = append(res.Rows, linearRow{K: K, GDMSE: newStat(gdm), TFMSE: newStat(tfm), GDAlpha: newStat(al),
				Dist: newStat(dist), Cos: newStat(cos)})
		}
	}
	for _, k := range ks {
		res.Seconds += rep.Results[experimentKey(k)].Seconds
	}
	fmt.Println()
	fmt.Println("| K | GD: test MSE | GD: learned α | TF (linear attention): test MSE | ‖ŷ_TF − ŷ_GD‖ | cos(∂ŷ_TF/∂x, ∂ŷ_GD/∂x) |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range res.Rows {
		fmt.Printf("| %d | %s | %s | %s | %s | %s |\n", r.K, r.GDMSE, r.GDAlpha, r.TFMSE, r.Dist, r.Cos)
	}
	fmt.Printf("Bayes error %.4f; zero predictor %.4f; optimal one-step α* %.4f (Monte Carlo %.4f; training contexts %.4f), its expected MSE %.4f (Monte Carlo %.4f)\n\n",
		res.Oracle, res.Zero, res.AlphaOpt, res.AlphaOptMC, res.AlphaOptTrain, res.MSEOpt, res.MSEOptMC)
	return writeLinear(p, res)
}

func mergeNonlinear(p *Plan, res *nonlinearResult, rep *experiment.Report, keys []runKey) error {
	ks, outs, err := outputs[nonlinearOut](rep, keys, "nonlinear")
	if err != nil {
		return err
	}
	fmt.Printf("nonlinear regression (RBF bumps): d=%d, N=%d, d_y=%d, noise %g; Ls %v, M=%d, %d epochs, %d seeds\n",
		p.D, p.N, p.DY, p.NoiseRBF, p.Ls, p.M, p.Train.Epochs, p.Seeds)
	for _, L := range p.Ls {
		row := nonlinearRow{L: L}
		dst := []*stat{&row.GDRBF, &row.GDSoftmax, &row.TFSoftmax}
		for j, sp := range nonlinearSpecs {
			var v []float64
			for i, k := range ks {
				if k.L == L && k.Model == sp.Model && k.Kernel == sp.Kernel {
					v = append(v, outs[i].MSE)
				}
			}
			*dst[j] = newStat(v)
			fmt.Printf("  L=%d %s: test MSE %s\n", L, sp, *dst[j])
		}
		res.Rows = append(res.Rows, row)
	}
	for _, k := range ks {
		res.Seconds += rep.Results[experimentKey(k)].Seconds
	}
	fmt.Println()
	fmt.Println("| L | GD (one step), rbf | GD (one step), softmax | Trained TF (1 layer), softmax |")
	fmt.Println("| ---: | ---: | ---: | ---: |")
	for _, r := range res.Rows {
		fmt.Printf("| %d | %s | %s | %s |\n", r.L, r.GDRBF, r.GDSoftmax, r.TFSoftmax)
	}
	fmt.Printf("test MSE; oracle (noise variance) %.4f, zero predictor %.4f\n\n", res.Oracle, res.Zero)
	return writeNonlinear(p, res)
}

func experimentKey(k runKey) string {
	s, _ := experiment.Key(k)
	return s
}

// plannedRuns is the number of runs in p's plan of package experiment.
func plannedRuns(p *Plan) (int, error) {
	ep, _, err := runPlan(p)
	if err != nil {
		return 0, err
	}
	return len(ep.Runs), nil
}
