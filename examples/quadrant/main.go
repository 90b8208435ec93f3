// Command quadrant runs the lower-dimensional experiments of the paper's
// Appendix F on the quadrant task (d = 2, C = 20, d' = 5, N = 100): one
// attention layer, GD against the Trained TF, for the linear, RBF,
// exponential, Laplacian and softmax kernels. It writes
//
//	fig6_accuracy.png       test top-1 against training steps, mean ± std
//	                        over seeds, with the oracle (Figure 6)
//	fig7_probmap_<k>.png    p(y = c | x) over [−1, 1]² for one context, GD
//	                        above and TF below, all grid queries in one
//	                        forward pass (Figure 7)
//	fig8_params_<k>.png     the TF's learned W_Q, W_K, W_V, P (Figure 8)
//	fig9_q_ed.png           Q = AᵀB and E·D of the TF per kernel (Figure 9)
//	results.json            every number behind the figures
//
// into -out, and copies the figures to -figdir if given (-figdir docs/figures
// updates the tracked ones). Finished runs are kept in -out/runs (package
// experiment; an older -out/journal.jsonl is read too) with their
// parameters under -out/ckpt, so an interrupted sweep resumes where it
// stopped, and -index/-shard workers on several machines can share -out.
//
//	go run ./examples/quadrant -quick   # about 2 minutes on 2 cores
//	go run ./examples/quadrant          # the full sweep (5 kernels × 5 seeds)
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gdattn/gdattn/examples/internal/quadrant"
	"github.com/gdattn/gdattn/experiment"
	"github.com/gdattn/gdattn/internal/cli"
	"github.com/gdattn/gdattn/layers"
)

// Limits of the sizes a command line may ask for: far above the paper's
// (N = 100, L = 2048, 81×81 grid), low enough that a typo cannot hang the
// graph construction or exhaust memory.
const (
	maxContexts = 1 << 20 // -L, -M, -eval-M
	maxN        = 4096    // -N
	maxEpochs   = 1 << 20 // -epochs, -every
	maxBatch    = 1 << 16 // -batch
	maxSeeds    = 1000    // -seeds
	maxGrid     = 1024    // -grid (grid² queries in one forward pass)
	maxC        = 1 << 12 // -C
	maxDPrime   = 1 << 10 // -dprime
)

func main() { cli.Main("quadrant", func() error { return command(os.Args[1:]) }) }

// command parses and checks the command line args, then runs it.
func command(args []string) error {
	var o quadrant.Options
	var quick bool
	fs := cli.NewFlagSet("quadrant")
	fs.StringVar(&o.Kernels, "kernels", "linear,rbf,exp,laplacian,softmax", "comma-separated attention kernels")
	fs.IntVar(&o.Seeds, "seeds", 5, fmt.Sprintf("model seeds per kernel and model (seed, seed+1, ...), 1..%d", maxSeeds))
	fs.Uint64Var(&o.Seed, "seed", 1, "first model seed (initialisation and minibatch order)")
	fs.Uint64Var(&o.DataSeed, "data-seed", 1, "seed of W_e and of the train/test contexts")
	fs.IntVar(&o.L, "L", 2048, fmt.Sprintf("training contexts, 1..%d", maxContexts))
	fs.IntVar(&o.M, "M", 2048, fmt.Sprintf("test contexts (final accuracy), 1..%d", maxContexts))
	fs.IntVar(&o.EvalM, "eval-M", 512, fmt.Sprintf("test contexts evaluated along the training curves, 1..%d", maxContexts))
	fs.IntVar(&o.N, "N", 100, fmt.Sprintf("context size, 1..%d", maxN))
	fs.IntVar(&o.C, "C", 20, fmt.Sprintf("number of categories, 4..%d (Appendix F's supplementary dataset: 100)", maxC))
	fs.IntVar(&o.DPrime, "dprime", 5, fmt.Sprintf("embedding dimension d', 1..%d (Appendix F's supplementary dataset: 25)", maxDPrime))
	fs.IntVar(&o.Epochs, "epochs", 40, fmt.Sprintf("training epochs (steps = epochs·ceil(L/batch)), 1..%d", maxEpochs))
	fs.IntVar(&o.Every, "every", 2, "evaluate the curves every this many epochs (>= 1; the last epoch always)")
	fs.IntVar(&o.Batch, "batch", 32, fmt.Sprintf("contexts per minibatch, 1..%d", maxBatch))
	fs.Float64Var(&o.LR, "lr", 1e-2, "Adam learning rate (GD and TF; finite, > 0)")
	fs.IntVar(&o.Grid, "grid", 81, fmt.Sprintf("points per side of the probability-map grid (Figure 7), 2..%d", maxGrid))
	fs.IntVar(&o.Context, "context", -1, "test context of Figure 7, 0..M-1 (-1: the first whose quadrants have 3 distinct most probable categories)")
	fs.StringVar(&o.Out, "out", "results/quadrant", "output directory (results.json, figures, journal, checkpoints; not empty)")
	fs.StringVar(&o.Figdir, "figdir", "", "directory the figures are copied to, e.g. docs/figures to update the tracked ones (default: none; they stay in -out)")
	fs.BoolVar(&o.Quiet, "quiet", false, "no per-step progress output")
	o.Exp.Register(fs) // -plan, -index, -shard, -merge, -submit, ... (package experiment)
	o.FS = fs
	fs.BoolVar(&quick, "quick", false, "small preset (rbf and softmax, 2 seeds, L=512, 20 epochs, output in results/quadrant-quick, -figdir unset); explicit flags still apply")
	if err := cli.Parse(fs, args, func(w io.Writer) { usage(w, fs) }); err != nil {
		return err
	}
	if quick {
		set := cli.Given(fs)
		preset := map[string]string{"kernels": "rbf,softmax", "seeds": "2", "L": "512", "M": "512", "eval-M": "256",
			"epochs": "20", "every": "2", "grid": "65", "out": "results/quadrant-quick", "figdir": ""}
		for name, v := range preset {
			if !set[name] {
				if err := fs.Set(name, v); err != nil {
					panic(err) // the preset names existing flags with valid values
				}
			}
		}
	}
	rules := cli.Rules{
		"kernels": cli.List(cli.OneOf(layers.KernelNames()...)), "seeds": cli.IntIn(1, maxSeeds),
		"seed": cli.Any, "data-seed": cli.Any, "L": cli.IntIn(1, maxContexts), "M": cli.IntIn(1, maxContexts),
		"eval-M": cli.IntIn(1, maxContexts), "N": cli.IntIn(1, maxN), "C": cli.IntIn(4, maxC), "dprime": cli.IntIn(1, maxDPrime), "epochs": cli.IntIn(1, maxEpochs),
		"every": cli.IntIn(1, maxEpochs), "batch": cli.IntIn(1, maxBatch), "lr": cli.Positive,
		"grid": cli.IntIn(2, maxGrid), "context": cli.IntIn(-1, maxContexts-1), "out": cli.NonEmpty,
		"figdir": cli.Any, "quiet": cli.Any, "quick": cli.Any,
	}
	for _, n := range experiment.FlagNames { // experiment.Flags.Check checks these
		rules[n] = cli.Any
	}
	if err := cli.Validate(fs, rules); err != nil {
		return err
	}
	if err := o.Exp.Check(cli.Given(fs)); err != nil {
		return cli.Usage(err)
	}
	if kernels, err := quadrant.ParseKernels(o.Kernels); err == nil { // -index past the plan, or -index env unset
		if _, err := o.Exp.Indices(len(kernels) * len(quadrant.ModelNames) * o.Seeds); err != nil {
			return cli.Usage(err)
		}
	}
	if err := cli.First(cli.OutDir("out", o.Out), cli.OutDir("figdir", o.Figdir), cli.OutCheckpoints("out", quadrant.PlannedCheckpoints(o)...)); err != nil {
		return err
	}
	if o.Context >= o.M {
		return cli.Usagef("-context %d: the test set has -M %d contexts (0..%d)", o.Context, o.M, o.M-1)
	}
	if quick {
		fmt.Fprintln(os.Stderr, "note: the quick preset undertrains the Trained TF baseline (L=512, 20 epochs, 2 seeds): it checks the pipeline; the full preset gives the paper's comparison")
	}
	return quadrant.Run(o, "go run ./examples/quadrant "+strings.Join(args, " "))
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, `Usage: quadrant [flags]

Trains one-layer GD and Trained TF models on the quadrant task of the paper's Appendix F
for each kernel and seed, and writes Figures 6-9 and results.json into -out. Each run's
result is its own file under -out/runs (an older -out/journal.jsonl is read too), its
parameters under -out/ckpt: a rerun resumes. The runs form a plan (package experiment):
-plan lists them, -index i and -shard i/n run a part of it on any number of machines sharing
-out, -merge (-partial) draws the figures from the runs done, -submit slurm submits the
missing runs as a Slurm job array (docs/cluster.md). Exit status: 0 done, 2 bad command line (one line on stderr, before any
work), 1 a failure during the run.

Flags:
`)
	cli.PrintDefaults(fs, w)
}
