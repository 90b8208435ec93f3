package synthetic

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/examples/internal/sweep"
	"github.com/gdattn/gdattn/experiment"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
)

// Options is a command line of examples/synthetic: the training flags (TrainBlocks) and the
// sweep flags (ResolveSweep).
type Options struct {
	Blocks, Kernel, Dtype, Out    string
	L, M, N, Epochs, Batch, Seeds int
	LR                            float64
	Seed, DataSeed                uint64
	Quiet                         bool

	// Sweeps (sweep.go).
	Sweep, Ls, Results, Figures string
	Quick                       bool
	Exp                         experiment.Flags
	Set                         map[string]bool // flags given on the command line
	FlagSet                     *flag.FlagSet   // the command line (-submit passes it on to the workers)

	// Executor runs the training and evaluation machines (nil: the Go VM
	// on the CPU).
	Executor graph.ExecutorFactory
}

// runSpec is one training run: a model, its training and the data. Its JSON
// is the run's key in a sweep's results journal, so every field that
// changes the result belongs here (new fields must be omitempty so that
// old keys stay valid).
type runSpec struct {
	Model    string  `json:"model"`           // "gd" or "tf"
	Form     string  `json:"form,omitempty"`  // gd: "onestep" or "interleaved"
	Depth    int     `json:"depth"`           // gd: blocks (GD steps); tf: layers
	Heads    int     `json:"heads,omitempty"` // tf: self-attention heads per layer
	Cross    bool    `json:"cross,omitempty"` // tf: cross-attention against W_e after each layer
	Kernel   string  `json:"kernel"`
	N        int     `json:"N"`
	L        int     `json:"L"` // training contexts
	M        int     `json:"M"` // test contexts
	Epochs   int     `json:"epochs"`
	Batch    int     `json:"batch"`
	LR       float64 `json:"lr"`
	Dtype    string  `json:"dtype"`
	Seed     uint64  `json:"seed"`      // model initialisation and minibatch order
	DataSeed uint64  `json:"data_seed"` // W_e of the task, training and test contexts
	Curve    bool    `json:"curve,omitempty"`
}

// name is a short description of the run's model, e.g. "gd-interleaved K=2
// softmax" or "tf L=2 H=2 cross softmax".
func (r runSpec) name() string {
	if r.Model == "gd" {
		return fmt.Sprintf("gd-%s K=%d %s", r.Form, r.Depth, r.Kernel)
	}
	s := fmt.Sprintf("tf layers=%d heads=%d", r.Depth, r.Heads)
	if r.Cross {
		s += " cross"
	}
	return s + " " + r.Kernel
}

// arch is the run with everything that does not change the cost of a
// training step cleared: runs of equal arch have equal step times.
func (r runSpec) arch() runSpec {
	return runSpec{Model: r.Model, Form: r.Form, Depth: r.Depth, Heads: r.Heads, Cross: r.Cross,
		Kernel: r.Kernel, N: r.N, Batch: r.Batch, Dtype: r.Dtype}
}

// build makes the run's model in a new scope seeded with r.Seed. The
// returned config is the model's completed gd.Config or tf.Config.
func (r runSpec) build() (train.Model, any, error) {
	dt, err := graph.ParseDtype(r.Dtype)
	if err != nil {
		return nil, nil, err
	}
	scope, err := graph.NewScope(dt, r.Seed)
	if err != nil {
		return nil, nil, err
	}
	task := data.DefaultSyntheticConfig()
	switch r.Model {
	case "gd":
		form := gd.Interleaved
		if r.Form == "onestep" { // the journal's name for gd.OneStep (whose String is "one-step")
			form = gd.OneStep
		}
		m, err := gd.NewModel(scope, gd.Config{D: task.D, DPrime: task.DPrime, C: task.C, N: r.N,
			Form: form, Blocks: r.Depth, Kernel: layers.Builtin(r.Kernel, 1)}, r.Batch)
		if err != nil {
			return nil, nil, err
		}
		return m, m.Cfg, nil
	case "tf":
		m, err := tf.NewModel(scope, tf.Config{D: task.D, DPrime: task.DPrime, C: task.C, N: r.N,
			Layers: r.Depth, Heads: r.Heads, Cross: r.Cross, Kernel: layers.Builtin(r.Kernel, 1)}, r.Batch)
		if err != nil {
			return nil, nil, err
		}
		return m, m.Cfg, nil
	}
	return nil, nil, fmt.Errorf("unknown model %q", r.Model)
}

// dataSets samples the task's training and test contexts, keeping the last
// ones drawn: the training set of L contexts comes from PCG(dataSeed, 1)
// and the test set of M from PCG(dataSeed, 2), so every run with the same
// data seed, N, L and M sees the same contexts.
type dataSets struct {
	N        int
	dataSeed uint64
	task     *data.Synthetic
	train    *data.Batch
	test     *data.Batch
}

func newDataSets(N int, dataSeed uint64) (*dataSets, error) {
	cfg := data.DefaultSyntheticConfig()
	cfg.N = N
	task, err := data.NewSynthetic(cfg, dataSeed)
	if err != nil {
		return nil, err
	}
	return &dataSets{N: N, dataSeed: dataSeed, task: task}, nil
}

func (d *dataSets) get(L, M int) (train, test *data.Batch, err error) {
	if d.train == nil || d.train.B != L {
		if d.train, err = d.task.Sample(L, rand.New(rand.NewPCG(d.dataSeed, 1))); err != nil {
			return nil, nil, err
		}
	}
	if d.test == nil || d.test.B != M {
		if d.test, err = d.task.Sample(M, rand.New(rand.NewPCG(d.dataSeed, 2))); err != nil {
			return nil, nil, err
		}
	}
	return d.train, d.test, nil
}

// trained is a finished run.
type trained struct {
	rec   sweep.Record
	scope *graph.Scope
	cfg   any         // gd.Config or tf.Config
	model train.Model // *gd.Model or *tf.Model
}

// train runs r on the data sets (which must match r's N and data seed),
// with progress to w (nil: silent) under label.
func (r runSpec) train(d *dataSets, exec graph.ExecutorFactory, w io.Writer, label string) (*trained, error) {
	if d.N != r.N || d.dataSeed != r.DataSeed {
		return nil, fmt.Errorf("internal error: data sets for N=%d seed %d, run wants N=%d seed %d", d.N, d.dataSeed, r.N, r.DataSeed)
	}
	trainSet, testSet, err := d.get(r.L, r.M)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	m, cfg, err := r.build()
	if err != nil {
		return nil, err
	}
	run, err := train.NewRunner(m, train.RunnerConfig{
		Optim:    train.Config{LR: r.LR, Progress: w, Label: label, Total: train.Steps(r.L, r.Batch, r.Epochs)},
		Executor: exec,
	})
	if err != nil {
		return nil, err
	}
	defer run.Close()
	fc := train.FitConfig{Epochs: r.Epochs, Seed: r.Seed}
	out := &trained{scope: m.Scope(), cfg: cfg, model: m}
	if r.Curve {
		if out.rec.Curve, err = run.FitCurve(trainSet, testSet, fc, 1); err != nil {
			return nil, err
		}
		out.rec.Final = out.rec.Curve[len(out.rec.Curve)-1].Metrics
	} else {
		if err := run.Fit(trainSet, fc); err != nil {
			return nil, err
		}
		if out.rec.Final, err = run.Evaluate(testSet); err != nil {
			return nil, err
		}
	}
	out.rec.TrainSeconds = time.Since(start).Seconds()
	return out, nil
}

// BlockCheckpoint is where TrainBlocks saves the model of K blocks and
// seed (under o.Out).
func BlockCheckpoint(o Options, K int, seed uint64) string {
	return filepath.Join(o.Out, fmt.Sprintf("blocks%d-seed%d", K, seed))
}

// TrainBlocks is the default mode: K-block GD models for every K of -blocks and
// every seed, with a checkpoint per run in -out.
func TrainBlocks(o Options) error {
	blocks, err := ParseIntList("-blocks", o.Blocks)
	if err != nil {
		return err
	}
	if _, err := graph.ParseDtype(o.Dtype); err != nil {
		return err
	}
	if o.L <= 0 || o.M <= 0 || o.N <= 0 || o.Epochs <= 0 || o.Batch <= 0 || o.Seeds <= 0 {
		return fmt.Errorf("-L, -M, -N, -epochs, -batch and -seeds must be positive")
	}
	d, err := newDataSets(o.N, o.DataSeed)
	if err != nil {
		return err
	}
	var progress io.Writer = os.Stderr
	if o.Quiet {
		progress = nil
	}
	cfg := d.task.Config
	fmt.Printf("synthetic task: C=%d d'=%d d=%d N=%d, L=%d train / M=%d test contexts, kernel %s, %s\n",
		cfg.C, cfg.DPrime, cfg.D, o.N, o.L, o.M, o.Kernel, o.Dtype)
	for _, K := range blocks {
		var top1, nll []float64
		var oracle float64
		for s := 0; s < o.Seeds; s++ {
			seed := o.Seed + uint64(s)
			r := runSpec{Model: "gd", Form: gd.Interleaved.String(), Depth: K, Kernel: o.Kernel, N: o.N,
				L: o.L, M: o.M, Epochs: o.Epochs, Batch: o.Batch, LR: o.LR, Dtype: o.Dtype, Seed: seed, DataSeed: o.DataSeed}
			t, err := r.train(d, o.Executor, progress, fmt.Sprintf("K=%d seed=%d", K, seed))
			if err != nil {
				return err
			}
			met := t.rec.Final
			fmt.Printf("blocks %d seed %d: %v\n", K, seed, met)
			top1, nll, oracle = append(top1, met.Top1), append(nll, met.NLL), met.Oracle
			if o.Out != "" {
				dir := BlockCheckpoint(o, K, seed)
				if err := t.model.(*gd.Model).Save(dir); err != nil {
					return err
				}
				fmt.Printf("saved checkpoint %s (gd.Load reads it; -eval %s evaluates it)\n", dir, dir)
			}
		}
		mt, st := sweep.MeanStd(top1)
		mn, sn := sweep.MeanStd(nll)
		fmt.Printf("== blocks %d (%d seeds): top-1 %.3f ± %.3f  NLL %.3f ± %.3f  oracle %.3f\n", K, o.Seeds, mt, st, mn, sn, oracle)
	}
	return nil
}
