package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/gdattn/gdattn/examples/internal/device"
	"github.com/gdattn/gdattn/examples/internal/synthetic"
	"github.com/gdattn/gdattn/experiment"
	"github.com/gdattn/gdattn/internal/cli"
	"github.com/gdattn/gdattn/layers"
)

// Flags that apply only to -sweep, only to -eval, and not to -eval (see run).
var (
	sweepOnly = append([]string{"quick", "Ls", "results", "figures"}, experiment.FlagNames...)
	evalOnly  = []string{"x", "y", "probs"}
	notEval   = []string{"blocks", "kernel", "L", "M", "N", "epochs", "batch", "lr", "seeds", "seed", "data-seed", "dtype", "out", "device", "sweep"}
)

func main() { cli.Main("synthetic", func() error { return command(os.Args[1:]) }) }

// command parses and checks the command line args, then runs it.
func command(args []string) error {
	var o options
	fs := cli.NewFlagSet("synthetic")
	fs.StringVar(&o.Blocks, "blocks", "1", fmt.Sprintf("comma-separated numbers of GD blocks (steps) to train, each 1..%d, e.g. 1,2,3 (with -sweep: fig3's K, default 1,...,6)", synthetic.MaxBlocks))
	fs.StringVar(&o.Kernel, "kernel", "softmax", "update kernel: linear, rbf, exp, laplacian or softmax")
	fs.IntVar(&o.L, "L", 2048, fmt.Sprintf("number of training contexts, 1..%d (with -sweep: fig3's L)", synthetic.MaxContexts))
	fs.IntVar(&o.M, "M", 2048, fmt.Sprintf("number of test contexts, 1..%d", synthetic.MaxContexts))
	fs.IntVar(&o.N, "N", 10, fmt.Sprintf("context size (examples per context), 1..%d", synthetic.MaxN))
	fs.IntVar(&o.Epochs, "epochs", 60, fmt.Sprintf("training epochs, 1..%d", synthetic.MaxEpochs))
	fs.IntVar(&o.Batch, "batch", 64, fmt.Sprintf("contexts per minibatch, 1..%d", synthetic.MaxBatch))
	fs.Float64Var(&o.LR, "lr", 1e-2, "Adam learning rate (finite, > 0)")
	fs.IntVar(&o.Seeds, "seeds", 1, fmt.Sprintf("number of model seeds (seed, seed+1, ...), 1..%d; mean ± std is reported", synthetic.MaxSeeds))
	fs.Uint64Var(&o.Seed, "seed", 1, "first model seed (initialisation and minibatch order)")
	fs.Uint64Var(&o.DataSeed, "data-seed", 1, "seed of the task (W_e) and of the train/test contexts")
	fs.StringVar(&o.Dtype, "dtype", "float64", "float32 or float64")
	fs.StringVar(&o.Out, "out", "checkpoints/synthetic", "directory for checkpoints (one per blocks/seed); empty: none")
	fs.StringVar(&o.evalDir, "eval", "", "evaluate this checkpoint instead of training (needs -x and -y; the training flags do not apply)")
	fs.StringVar(&o.xPath, "x", "", "with -eval: contexts x, .npy float64 (B, N+1, d)")
	fs.StringVar(&o.yPath, "y", "", "with -eval: labels y, .npy int64 (B, N+1); the last label may be -1")
	fs.StringVar(&o.probsPath, "probs", synthetic.DefaultProbs, "with -eval: where to write the query probabilities (B, C)")
	fs.BoolVar(&o.Quiet, "quiet", false, "no progress output")
	fs.StringVar(&o.Sweep, "sweep", "", "run the sweeps of these figures: fig2, fig3, fig4, linear (comma-separated) or all (fig2,fig3,fig4)")
	fs.BoolVar(&o.Quick, "quick", false, "with -sweep: the small preset (a few minutes) instead of the full one (hours)")
	fs.StringVar(&o.Ls, "Ls", "", "with -sweep: comma-separated training-context counts L of fig2 and fig4")
	fs.StringVar(&o.Results, "results", "", "with -sweep: results directory (default results/synthetic, or results/synthetic-quick with -quick)")
	fs.StringVar(&o.Figures, "figures", "", "with -sweep: directory for the PNGs (default the results directory)")
	o.Exp.Register(fs) // -plan, -index, -shard, -merge, -submit, ... (with -sweep; alone: -sweep all)
	fs.StringVar(&o.device, "device", "cpu", "where the graphs run (not with -eval): "+device.Names)
	if err := cli.Parse(fs, args, func(w io.Writer) { usage(w, fs) }); err != nil {
		return err
	}
	o.Set = cli.Given(fs)
	o.FlagSet = fs
	if !o.Set["sweep"] && o.evalDir == "" {
		for _, n := range experiment.FlagNames {
			if o.Set[n] { // -plan, -index, ... without -sweep: the paper's figures, -sweep all
				o.Sweep, o.Set["sweep"] = "all", true
				break
			}
		}
	}
	rules := cli.Rules{
		"blocks": cli.List(cli.IntIn(1, synthetic.MaxBlocks)), "kernel": cli.OneOf(layers.KernelNames()...),
		"L": cli.IntIn(1, synthetic.MaxContexts), "M": cli.IntIn(1, synthetic.MaxContexts), "N": cli.IntIn(1, synthetic.MaxN),
		"epochs": cli.IntIn(1, synthetic.MaxEpochs), "batch": cli.IntIn(1, synthetic.MaxBatch), "lr": cli.Positive,
		"seeds": cli.IntIn(1, synthetic.MaxSeeds), "seed": cli.Any, "data-seed": cli.Any,
		"dtype": cli.OneOf("float32", "float64"), "out": cli.Any, "eval": cli.Any, "x": cli.Any, "y": cli.Any,
		"probs": cli.NonEmpty, "quiet": cli.Any, "sweep": cli.Optional(sweepRule), "quick": cli.Any,
		"Ls": cli.Optional(cli.List(cli.IntIn(1, synthetic.MaxContexts))), "results": cli.Any, "figures": cli.Any,
		"device": cli.OneOf("cpu", "cuda", "emulator"),
	}
	for _, n := range experiment.FlagNames { // experiment.Flags.Check checks these
		rules[n] = cli.Any
	}
	if err := cli.Validate(fs, rules); err != nil {
		return err
	}
	return run(o)
}

// sweepRule accepts -sweep all or a list of the figures.
var sweepRule = cli.List(cli.OneOf(append(append(slices.Clone(synthetic.FigureNames), synthetic.ExtraFigureNames...), "all")...))

// run checks which flags the mode takes (the default training, -eval or
// -sweep) and the files -eval reads, then runs the mode. Every refusal is a
// usage error (exit status 2), given before any work starts.
func run(o options) error {
	eval, sweep := o.evalDir != "", o.Sweep != ""
	err := cli.First(
		cli.Needs(o.Set, sweep, "-sweep", sweepOnly...),
		cli.Needs(o.Set, eval, "-eval", evalOnly...),
		cli.NotWith(o.Set, eval, "-eval", notEval...),
	)
	if err != nil {
		return err
	}
	var st *synthetic.Setup
	switch {
	case eval:
		if o.xPath == "" || o.yPath == "" {
			return cli.Usagef("-eval needs -x and -y")
		}
		outs := []cli.Path{{Flag: "probs", Path: o.probsPath}}
		if err := cli.First(cli.OutFile("probs", o.probsPath), synthetic.CheckEvalInputs(o.evalDir, o.xPath, o.yPath), cli.NotInputs(outs, cli.Path{Flag: "eval", Path: o.evalDir},
			cli.Path{Flag: "x", Path: o.xPath}, cli.Path{Flag: "y", Path: o.yPath})); err != nil {
			return err
		}
	case sweep:
		if err := o.Exp.Check(o.Set); err != nil {
			return cli.Usage(err)
		}
		if o.device == "cuda" { // the CUDA build's tasks each need a GPU (--gres=gpu:1)
			o.Exp.Slurm.GPU = true
		}
		if st, err = synthetic.ResolveSweep(o.Options); err != nil {
			return cli.Usage(err)
		}
		if err := st.Check(); err != nil {
			return err
		}
	default:
		if err := cli.First(synthetic.CheckSetSizes(o.Options), cli.OutDir("out", o.Out), cli.OutCheckpoints("out", synthetic.BlockCheckpoints(o.Options)...)); err != nil {
			return err
		}
	}
	if sweep && (o.Exp.Merge || o.Exp.Plan || o.Exp.PlanJSON || o.Exp.Submit != "") {
		return synthetic.RunSweep(st, nil) // nothing trains: no device (a merge job has no GPU)
	}
	executor, closeDev, err := device.Executor(o.device, os.Stderr)
	if err != nil {
		return err
	}
	defer closeDev()
	switch {
	case eval:
		return synthetic.EvalCheckpoint(o.evalDir, o.xPath, o.yPath, o.probsPath)
	case sweep:
		return synthetic.RunSweep(st, executor)
	}
	o.Executor = executor
	return synthetic.TrainBlocks(o.Options)
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, `Usage:
  synthetic [flags]                   train K-block GD models (-blocks, -kernel, -L, ...), save checkpoints
  synthetic -eval DIR -x X -y Y       evaluate a checkpoint on .npy contexts
  synthetic -sweep FIGS [-quick] ...  the sweeps of the paper's Section 5.1, with plots

Trains attention models on the synthetic task of Appendix E (C=25, d'=5, d=10, N=10)
and reports test top-1 accuracy, NLL and the Bayes oracle on M fresh test contexts.

Sweeps (-sweep fig2,fig3,fig4 or -sweep all):
  fig2  test top-1 and NLL against the number of training contexts L: GD (one step) vs
        Trained TF (one self-attention layer), RBF and softmax kernels
  fig3  test top-1 and NLL after every training epoch: GD with K = 1..6 blocks, softmax
  fig4  (left) as fig2 for 2 GD blocks vs a 2-layer Trained TF with cross-attention, softmax
  linear  as fig2 with the linear kernel (Section 5.1 examined it; not in "all")
  depth   GD with K = 1..6 blocks (-blocks) at fig3's L, final test metrics: the depth sweep
          (the authors': -N 125 -epochs 30; the same runs as the default mode's -blocks; not in "all")

%s
  Both: N=10, batch 64, Adam lr 1e-2, float64, seeds 1.. and data seed 1. Flags given on the
  command line override the preset: -Ls, -epochs, -seeds, -seed, -data-seed, -M, -N, -batch,
  -lr, -dtype, -L (fig3's L), -blocks (fig3's K). -kernel and -out do not apply.

  Every finished run is written to its own file, <results>/runs/<hash of its configuration>.json
  (package experiment; an older <results>/runs.jsonl journal is read too); a rerun skips the
  runs already there, so an interrupted sweep (Ctrl-C) resumes where it stopped and only the
  run in progress is lost. Before training, the sweep times each model in CPU time
  on this machine and prints the estimated time (on one free core; a busy machine takes
  longer). Each run shows a progress bar (a line every 10%% when the output is not a terminal)
  and a summary with the time left. After the sweep (and every minute during it) it writes,
  per figure:
    <results>/figN.json, figN.csv        mean and std over seeds of every point
    <figures>/synthetic-figN[-quick].png  the figure, error bars = std over seeds
  -plan (-plan-json) prints the plan: every run's index, estimated CPU time and key. -index i
  runs run i only, -shard i/n runs i, i+n, ...: workers on any number of machines sharing the
  results directory (NFS is fine) need no lock; -merge then writes the figures (refused while
  runs are missing, unless -partial). -submit slurm submits the missing runs as a Slurm job
  array and a merge job (see docs/cluster.md). Without -sweep these flags apply to -sweep all.

Each flag applies to one mode only where its help says so (-x, -y, -probs with -eval; the
training flags not with -eval); a flag given to a mode it does not apply to is refused.
Exit status: 0 done, 2 bad command line or input (one line on stderr, before any work),
1 a failure during the run.

Flags:
`, synthetic.PresetTable())
	cli.PrintDefaults(fs, w)
}

// options is the command line: the experiments' flags and those of -eval
// and -device.
type options struct {
	synthetic.Options
	evalDir, xPath, yPath, probsPath, device string
}
