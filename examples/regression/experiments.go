package main

import (
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
)

// plan is the resolved command line: the preset with the flags given on
// the command line applied.
type plan struct {
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

func resolve(o options) (*plan, error) {
	p := &plan{D: o.d, N: o.n, DY: o.dy, Noise: o.noise, NoiseRBF: 0.1, L: 8192, M: 2048,
		Train: trainCfg{Epochs: 40, Batch: o.batch, LR: o.lr}, Seeds: 5, Seed: o.seed, DataSeed: o.dataSeed,
		Dtype: o.dtype, Quick: o.quick, Ls: []int{256, 1024, 4096, 16384}}
	if o.quick {
		p.L, p.M, p.Train.Epochs, p.Seeds, p.Ls = 2048, 512, 20, 2, []int{256, 1024}
	}
	if o.set["noise"] {
		p.NoiseRBF = o.noise
	}
	for _, f := range []struct {
		name string
		v    int
		dst  *int
	}{{"L", o.L, &p.L}, {"M", o.M, &p.M}, {"epochs", o.epochs, &p.Train.Epochs}, {"seeds", o.seeds, &p.Seeds}} {
		if o.set[f.name] {
			*f.dst = f.v
		}
	}
	var err error
	p.Exps = strings.Split(o.exps, ",")
	if p.Steps, err = ints(o.steps); err != nil {
		return nil, fmt.Errorf("-steps: %w", err)
	}
	if o.ls != "" {
		if p.Ls, err = ints(o.ls); err != nil {
			return nil, fmt.Errorf("-Ls: %w", err)
		}
	}
	p.results = o.results
	if p.results == "" {
		p.results = filepath.Join("results", "regression"+p.suffix())
	}
	p.figures = o.figures
	if p.figures == "" {
		p.figures = p.results
	}
	p.out = o.out
	if !o.quiet {
		p.progress = os.Stderr
	}
	return p, nil
}

// mcSamples is the number of tasks of the Monte Carlo estimate of α*.
func (p *plan) mcSamples() int {
	if p.Quick {
		return 200_000
	}
	return 1_000_000
}

func (p *plan) suffix() string {
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
	Plan   *plan       `json:"plan"`
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

func runAll(p *plan) error {
	start := time.Now()
	for _, e := range p.Exps {
		var err error
		switch e {
		case "linear":
			err = runLinear(p)
		case "nonlinear":
			err = runNonlinear(p)
		}
		if err != nil {
			return err
		}
	}
	fmt.Printf("done in %.0f s; results in %s, figures in %s\n", time.Since(start).Seconds(), p.results, p.figures)
	return nil
}

func runLinear(p *plan) error {
	start := time.Now()
	task, err := data.NewLinearRegression(data.LinearRegressionConfig{D: p.D, DY: p.DY, N: p.N, Noise: p.Noise})
	if err != nil {
		return err
	}
	trainSet, err := task.Sample(p.L, rand.New(rand.NewPCG(p.DataSeed, 1)))
	if err != nil {
		return err
	}
	testSet, err := task.Sample(p.M, rand.New(rand.NewPCG(p.DataSeed, 2)))
	if err != nil {
		return err
	}
	res := &linearResult{Plan: p, Oracle: testSet.Oracle()}
	for _, y := range testSet.QueryTargets() {
		res.Zero += y * y / float64(testSet.B*testSet.DY)
	}
	res.AlphaOpt, res.MSEOpt = optimalAlpha(p.D, p.N, p.Noise)
	if res.AlphaOptMC, res.MSEOptMC, err = optimalAlphaMC(task, p.mcSamples(), p.DataSeed+1000); err != nil {
		return err
	}
	var acc alphaAcc
	acc.add(trainSet)
	res.AlphaOptTrain, _ = acc.result()
	fmt.Printf("linear regression: d=%d, N=%d, d_y=%d, noise %g; L=%d, M=%d, %d epochs, %d seeds\n",
		p.D, p.N, p.DY, p.Noise, p.L, p.M, p.Train.Epochs, p.Seeds)
	fmt.Printf("  Bayes error %.4f, zero predictor %.4f; optimal one-step α* = %.4f (MSE %.4f; Monte Carlo over %d tasks %.4f, MSE %.4f; on the training contexts %.4f)\n",
		res.Oracle, res.Zero, res.AlphaOpt, res.MSEOpt, p.mcSamples(), res.AlphaOptMC, res.MSEOptMC, res.AlphaOptTrain)
	for _, K := range p.Steps {
		var gdm, tfm, al, dist, cos []float64
		for s := 0; s < p.Seeds; s++ {
			seed := p.Seed + uint64(s)
			g, err := trainOne(spec{"gd", K, "linear"}, p.Dtype, p.D, p.DY, p.N, trainSet, testSet, p.Train, seed, p.progress)
			if err != nil {
				return err
			}
			t, err := trainOne(spec{"tf", K, "linear"}, p.Dtype, p.D, p.DY, p.N, trainSet, testSet, p.Train, seed, p.progress)
			if err != nil {
				g.runner.Close()
				return err
			}
			dv, cv, err := compare(t.runner, g.runner, testSet)
			if err == nil && s == 0 && p.out != "" {
				var path string
				if path, err = saveGD(g, p.checkpointDir(K)); err == nil {
					fmt.Printf("  saved checkpoint %s (-eval %s evaluates it)\n", path, path)
				}
			}
			g.runner.Close()
			t.runner.Close()
			if err != nil {
				return err
			}
			gdm, tfm, al = append(gdm, g.met.MSE), append(tfm, t.met.MSE), append(al, g.alpha)
			dist, cos = append(dist, dv), append(cos, cv)
			fmt.Printf("  K=%d seed %d: GD MSE %.4f (α %.4f), TF MSE %.4f, distance %.4f, sensitivity cosine %.4f\n",
				K, seed, g.met.MSE, g.alpha, t.met.MSE, dv, cv)
		}
		res.Rows = append(res.Rows, linearRow{K: K, GDMSE: newStat(gdm), TFMSE: newStat(tfm), GDAlpha: newStat(al),
			Dist: newStat(dist), Cos: newStat(cos)})
	}
	res.Seconds = time.Since(start).Seconds()
	fmt.Println()
	fmt.Println("| K | GD: test MSE | GD: learned α | TF (linear attention): test MSE | ‖ŷ_TF − ŷ_GD‖ | cos(∂ŷ_TF/∂x, ∂ŷ_GD/∂x) |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range res.Rows {
		fmt.Printf("| %d | %s | %s | %s | %s | %s |\n", r.K, r.GDMSE, r.GDAlpha, r.TFMSE, r.Dist, r.Cos)
	}
	fmt.Printf("Bayes error %.4f; zero predictor %.4f; optimal one-step α* %.4f (Monte Carlo %.4f; training contexts %.4f), its expected MSE %.4f (Monte Carlo %.4f)\n\n",
		res.Oracle, res.Zero, res.AlphaOpt, res.AlphaOptMC, res.AlphaOptTrain, res.MSEOpt, res.MSEOptMC)
	if err := writeLinear(p, res); err != nil {
		return err
	}
	return nil
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
	Plan    *plan          `json:"plan"`
	Oracle  float64        `json:"oracle"`
	Zero    float64        `json:"zero_mse"`
	Rows    []nonlinearRow `json:"rows"`
	Seconds float64        `json:"seconds"`
}

func runNonlinear(p *plan) error {
	start := time.Now()
	task, err := data.NewRBFRegression(data.RBFRegressionConfig{D: p.D, DY: p.DY, N: p.N, Noise: p.NoiseRBF})
	if err != nil {
		return err
	}
	maxL := slices.Max(p.Ls)
	pool, err := task.Sample(maxL, rand.New(rand.NewPCG(p.DataSeed, 3)))
	if err != nil {
		return err
	}
	testSet, err := task.Sample(p.M, rand.New(rand.NewPCG(p.DataSeed, 4)))
	if err != nil {
		return err
	}
	res := &nonlinearResult{Plan: p, Oracle: testSet.Oracle()}
	for _, y := range testSet.QueryTargets() {
		res.Zero += y * y / float64(testSet.B*testSet.DY)
	}
	fmt.Printf("nonlinear regression (RBF bumps): d=%d, N=%d, d_y=%d, noise %g; Ls %v, M=%d, %d epochs, %d seeds\n",
		p.D, p.N, p.DY, p.NoiseRBF, p.Ls, p.M, p.Train.Epochs, p.Seeds)
	for _, L := range p.Ls {
		trainSet, err := pool.Slice(0, L) // the first L contexts: nested training sets
		if err != nil {
			return err
		}
		row := nonlinearRow{L: L}
		for _, c := range []struct {
			s   spec
			dst *stat
		}{{spec{"gd", 1, "rbf"}, &row.GDRBF}, {spec{"gd", 1, "softmax"}, &row.GDSoftmax}, {spec{"tf", 1, "softmax"}, &row.TFSoftmax}} {
			var v []float64
			for s := 0; s < p.Seeds; s++ {
				f, err := trainOne(c.s, p.Dtype, p.D, p.DY, p.N, trainSet, testSet, p.Train, p.Seed+uint64(s), p.progress)
				if err != nil {
					return err
				}
				f.runner.Close()
				v = append(v, f.met.MSE)
			}
			*c.dst = newStat(v)
			fmt.Printf("  L=%d %s: test MSE %s\n", L, c.s, *c.dst)
		}
		res.Rows = append(res.Rows, row)
	}
	res.Seconds = time.Since(start).Seconds()
	fmt.Println()
	fmt.Println("| L | GD (one step), rbf | GD (one step), softmax | Trained TF (1 layer), softmax |")
	fmt.Println("| ---: | ---: | ---: | ---: |")
	for _, r := range res.Rows {
		fmt.Printf("| %d | %s | %s | %s |\n", r.L, r.GDRBF, r.GDSoftmax, r.TFSoftmax)
	}
	fmt.Printf("test MSE; oracle (noise variance) %.4f, zero predictor %.4f\n\n", res.Oracle, res.Zero)
	return writeNonlinear(p, res)
}
