package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/gdattn/gdattn/examples/internal/regression"
	"github.com/gdattn/gdattn/experiment"
	"github.com/gdattn/gdattn/internal/cli"
)

// options are the parsed flags.
type options struct {
	regression.Options
	evalDir, xPath, yPath, predPath, bayesPath string
	exp                                        experiment.Flags
}

// Flags of -eval, and the flags that do not apply to it.
var (
	evalOnly = []string{"x", "y", "pred", "bayes"}
	notEval  = append([]string{"exp", "steps", "Ls", "dtype", "results", "figures", "out", "d", "N", "dy", "L", "M", "epochs",
		"batch", "seeds", "noise", "lr", "seed", "data-seed", "quick"}, experiment.FlagNames...)
)

func main() { cli.Main("regression", func() error { return command(os.Args[1:]) }) }

func command(args []string) error {
	var o options
	fs := cli.NewFlagSet("regression")
	fs.StringVar(&o.Exps, "exp", "linear,nonlinear", "experiments to run: linear, nonlinear (comma-separated)")
	fs.StringVar(&o.Steps, "steps", "1,2,3", fmt.Sprintf("linear: GD steps = TF layers to compare, each 1..%d", regression.MaxDepth))
	fs.StringVar(&o.Ls, "Ls", "", "nonlinear: comma-separated training-context counts L (default 256,1024,4096,16384; -quick 256,1024)")
	fs.IntVar(&o.D, "d", 10, fmt.Sprintf("covariate dimension d, 1..%d", regression.MaxD))
	fs.IntVar(&o.N, "N", 10, fmt.Sprintf("context size N, 1..%d", regression.MaxN))
	fs.IntVar(&o.DY, "dy", 1, fmt.Sprintf("target dimension d_y, 1..%d", regression.MaxD))
	fs.Float64Var(&o.Noise, "noise", 0, "standard deviation σ of the targets' noise (linear task; the nonlinear task uses 0.1 unless given)")
	fs.IntVar(&o.L, "L", 8192, fmt.Sprintf("linear: training contexts, 1..%d (-quick: 2048)", regression.MaxContexts))
	fs.IntVar(&o.M, "M", 2048, fmt.Sprintf("test contexts, 1..%d (-quick: 512)", regression.MaxContexts))
	fs.IntVar(&o.Epochs, "epochs", 40, fmt.Sprintf("training epochs, 1..%d (-quick: 20)", regression.MaxEpochs))
	fs.IntVar(&o.Batch, "batch", 64, fmt.Sprintf("contexts per minibatch, 1..%d", regression.MaxBatch))
	fs.Float64Var(&o.LR, "lr", 1e-3, "Adam learning rate (finite, > 0)")
	fs.IntVar(&o.Seeds, "seeds", 5, fmt.Sprintf("model seeds seed, seed+1, ..., 1..%d (-quick: 2); mean ± std is reported", regression.MaxSeeds))
	fs.Uint64Var(&o.Seed, "seed", 1, "first model seed (initialisation and minibatch order)")
	fs.Uint64Var(&o.DataSeed, "data-seed", 1, "seed of the training and test contexts")
	fs.StringVar(&o.Dtype, "dtype", "float64", "float32 or float64")
	fs.BoolVar(&o.Quick, "quick", false, "the small preset (under two minutes of CPU) instead of the full one")
	fs.StringVar(&o.Results, "results", "", "directory for the JSON and CSV results (default results/regression, -quick results/regression-quick)")
	fs.StringVar(&o.Figures, "figures", "", "directory for the PNG figures (default the results directory)")
	fs.StringVar(&o.Out, "out", "checkpoints/regression", "directory for the checkpoints of the linear task's GD models (first seed); empty: none")
	fs.BoolVar(&o.Quiet, "quiet", false, "no progress output")
	fs.StringVar(&o.evalDir, "eval", "", "evaluate this GD checkpoint (Gaussian likelihood) instead of training (needs -x and -y)")
	fs.StringVar(&o.xPath, "x", "", "with -eval: contexts x, .npy float64 (B, N+1, d)")
	fs.StringVar(&o.yPath, "y", "", "with -eval: targets y, .npy float64 (B, N+1, d_y); the query's row is ignored (any value)")
	fs.StringVar(&o.predPath, "pred", regression.DefaultPred, "with -eval: where to write the query predictions f_K, .npy float64 (B, d_y)")
	fs.StringVar(&o.bayesPath, "bayes", "", "with -eval: the Bayes error of each query, .npy float64 (B) (data.Batch.WriteNPY writes it), printed beside the MSE")
	o.exp.Register(fs) // -plan, -index, -shard, -merge, -submit, ... (package experiment)
	if err := cli.Parse(fs, args, func(w io.Writer) { usage(w, fs) }); err != nil {
		return err
	}
	o.Set = cli.Given(fs)
	rules := cli.Rules{
		"exp": cli.List(cli.OneOf("linear", "nonlinear")), "steps": cli.List(cli.IntIn(1, regression.MaxDepth)),
		"Ls": cli.Optional(cli.List(cli.IntIn(1, regression.MaxContexts))), "d": cli.IntIn(1, regression.MaxD), "N": cli.IntIn(1, regression.MaxN),
		"dy": cli.IntIn(1, regression.MaxD), "noise": cli.NonNegative, "L": cli.IntIn(1, regression.MaxContexts),
		"M": cli.IntIn(1, regression.MaxContexts), "epochs": cli.IntIn(1, regression.MaxEpochs),
		"batch": cli.IntIn(1, regression.MaxBatch), "lr": cli.Positive, "seeds": cli.IntIn(1, regression.MaxSeeds),
		"seed": cli.Any, "data-seed": cli.Any, "dtype": cli.OneOf("float32", "float64"), "quick": cli.Any,
		"results": cli.Any, "figures": cli.Any, "out": cli.Any, "quiet": cli.Any,
		"eval": cli.Any, "x": cli.Any, "y": cli.Any, "pred": cli.NonEmpty, "bayes": cli.Any,
	}
	for _, n := range experiment.FlagNames { // experiment.Flags.Check checks these
		rules[n] = cli.Any
	}
	if err := cli.Validate(fs, rules); err != nil {
		return err
	}
	if err := o.exp.Check(o.Set); err != nil {
		return cli.Usage(err)
	}
	eval := o.evalDir != ""
	if err := cli.First(cli.Needs(o.Set, eval, "-eval", evalOnly...), cli.NotWith(o.Set, eval, "-eval", notEval...)); err != nil {
		return err
	}
	if eval {
		if o.xPath == "" || o.yPath == "" {
			return cli.Usagef("-eval needs -x and -y")
		}
		if err := cli.OutFile("pred", o.predPath); err != nil {
			return err
		}
		in, err := regression.ReadEvalInputs(o.evalDir, o.xPath, o.yPath, o.bayesPath)
		if err != nil {
			return cli.Usage(err)
		}
		if err := cli.NotInputs([]cli.Path{{Flag: "pred", Path: o.predPath}},
			cli.Path{Flag: "eval", Path: o.evalDir}, cli.Path{Flag: "x", Path: o.xPath}, cli.Path{Flag: "y", Path: o.yPath}); err != nil {
			return err
		}
		return in.Evaluate(o.predPath)
	}
	p, err := regression.Resolve(o.Options)
	if err != nil {
		return cli.Usage(err)
	}
	if err := regression.Check(p, o.exp); err != nil {
		return err
	}
	return regression.RunAll(p, o.exp, fs)
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Usage:
  regression [flags]                       train and compare GD and Trained TF on regression tasks
  regression -eval DIR -x X -y Y [-pred P] evaluate a GD checkpoint (Gaussian likelihood) on .npy contexts

Real-valued y with the Gaussian likelihood of Appendix G: functional GD
f_{k+1}(x_j) = f_k(x_j) + (α/N) Σ_i (y_i − f_k(x_i)) κ(x_i, x_j), built as attention.

Experiments (-exp):
  linear     von Oswald et al.'s task: x ~ U(−1,1)^d, W ~ N(0,I), y = Wx (+ noise), d = 10,
             N = 10. GD with the linear kernel (K = 1, 2, 3 steps, α learned) against a trained
             linear self-attention model with K layers: test MSE, the Bayes error, the L2
             distance of the query predictions and the cosine similarity of the sensitivities
             dŷ/dx_q on held-out tasks, and the learned one-step α against the optimal one-step
             rate (closed form and Monte Carlo).
  nonlinear  a random sum of RBF bumps (as Appendix E) plus noise σ = 0.1: one GD step with the
             RBF and the softmax kernel against a 1-layer softmax TF, over L training contexts
             (as Figure 2); oracle: σ².

Presets: full (default): L = 8192, M = 2048, 40 epochs, 5 seeds, nonlinear Ls 256..16384;
-quick: L = 2048, M = 512, 20 epochs, 2 seeds, Ls 256,1024 (under two minutes of CPU).
Flags given on the command line override the preset. Adam, batch 64, lr 1e-3, float64.

Writes <results>/linear.{json,csv}, nonlinear.{json,csv} and <figures>/regression-linear.png,
regression-nonlinear.png (-quick: with the suffix -quick), and the GD checkpoints of the
linear task (first seed) to <out>/gd-linear-K<k>, and prints the path of each file it writes.
-eval writes the predictions to -pred (default results/regression/pred.npy, as synthetic -eval
writes results/synthetic/probs.npy), prints where, and prints the query MSE when every query row
of -y is finite (with -bayes, the mean Bayes error beside it). Every output location is checked before any work starts; the input files (-x, -y)
must be regular files.

The runs (linear: a K-step GD and a K-layer TF per K and seed; nonlinear: one model per L,
model and seed) form a plan (package experiment), each run's result a file under
<results>/runs: -plan lists them, -index i and -shard i/n run a part of them on any number of
machines sharing <results>, -merge (-partial) writes the tables and figures from the runs done,
-submit slurm -time T submits the missing runs as a Slurm job array (docs/cluster.md).

Exit status: 0 done, 2 bad command line or input (one line on stderr, before any work),
1 a failure during the run.

Flags:
`)
	cli.PrintDefaults(fs, w)
}
