// Command theorem2 checks Theorem 2 of the paper (Appendix I) numerically:
// at the one-step GD construction, a single-layer Trained TF should sit at
// a stationary point of the population cross-entropy in the directions the
// theorem covers.
//
// For each kernel it (1) fits the GD model's step α and kernel parameter g
// (W_e fixed to the task's true W_e), since the theorem only says that
// SOME scale of the construction is stationary; (2) builds a TF at that
// construction and estimates the gradient of the population loss with
// respect to every attention parameter by Monte Carlo over fresh contexts,
// with standard errors from the spread of the minibatch gradients; (3)
// splits it into the symmetry-forbidden directions (the traceless part of
// the x×x blocks of W_Q, W_K, and the blocks coupling x with the
// label/f coordinates), the GD scalars and the directions outside
// Assumptions 1-2, with Hotelling tests of "zero mean"; (4) repeats the
// estimate at random perturbations of the construction of several sizes.
//
//	go run ./examples/theorem2 -quick                      # softmax, 20k contexts: about 10 s
//	go run ./examples/theorem2                             # five kernels, 200k contexts each: about 12 min on 2 cores
//	go run ./examples/theorem2 -task anisotropic -kernels softmax   # the negative control
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gdattn/gdattn/examples/internal/theorem2"
	"github.com/gdattn/gdattn/experiment"
	"github.com/gdattn/gdattn/internal/cli"
	"github.com/gdattn/gdattn/layers"
)

// Limits of the sizes a command line may ask for: far above the paper's
// and the defaults, low enough that a typo cannot hang the graph
// construction or exhaust memory.
const (
	maxN       = 4096    // -N
	maxBatch   = 1 << 16 // -batch
	maxBatches = 1 << 20 // -nb, -pert-nb, -newton-batches, -hess-batches
	maxSteps   = 1 << 20 // -adam-steps
	maxNewton  = 100     // -newton
	maxDirs    = 1000    // -dirs
)

func main() { cli.Main("theorem2", func() error { return command(os.Args[1:]) }) }

// command parses and checks the command line args, then runs it.
func command(args []string) error {
	var o theorem2.Options
	var quick bool
	fs := cli.NewFlagSet("theorem2")
	fs.StringVar(&o.Kernels, "kernels", "softmax,linear,exp,rbf,laplacian", "comma-separated attention kernels")
	fs.StringVar(&o.Task, "task", theorem2.TaskRotated, "covariate law: rotated (x ~ N(0,I), quadrant axes at a random angle: O(2)-invariant), square (N(0,I), axis-aligned), uniform (the paper's U(-1,1)²), anisotropic (square with x₂ scaled by -aniso: a control that breaks the symmetry)")
	fs.Float64Var(&o.Aniso, "aniso", 0.5, "with -task anisotropic: the scale of x₂ (finite, > 0)")
	fs.IntVar(&o.N, "N", 20, fmt.Sprintf("context size, 1..%d", maxN))
	fs.IntVar(&o.Batch, "batch", 100, fmt.Sprintf("contexts per minibatch, 2..%d", maxBatch))
	fs.IntVar(&o.NB, "nb", 2000, fmt.Sprintf("minibatches at the GD point (contexts = nb·batch), 2..%d", maxBatches))
	fs.IntVar(&o.PertNB, "pert-nb", 200, fmt.Sprintf("minibatches at each perturbed point (and at the GD point for comparison), 2..%d", maxBatches))
	fs.StringVar(&o.Scales, "scales", "0.003,0.01,0.03,0.1,0.3", "relative perturbation sizes ε, comma-separated, each finite and > 0 (empty: none)")
	fs.IntVar(&o.Dirs, "dirs", 3, fmt.Sprintf("random perturbation directions per size, 0..%d", maxDirs))
	fs.IntVar(&o.AdamSteps, "adam-steps", 400, fmt.Sprintf("Adam steps fitting α and g, 1..%d", maxSteps))
	fs.IntVar(&o.NewtonIters, "newton", 3, fmt.Sprintf("Newton steps polishing α and g on a fixed sample, 0..%d", maxNewton))
	fs.IntVar(&o.NewtonBatches, "newton-batches", 2000, fmt.Sprintf("minibatches of that fixed sample (independent of the check's), 2..%d", maxBatches))
	fs.IntVar(&o.HessBatches, "hess-batches", 200, fmt.Sprintf("minibatches of it used for the finite-difference Hessian, 1..%d (at most -newton-batches are used)", maxBatches))
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the Monte Carlo samples and perturbations")
	fs.Uint64Var(&o.DataSeed, "data-seed", 1, "seed of W_e")
	fs.StringVar(&o.Out, "out", "results/theorem2", "output directory (results_<task>.json, theorem2_<task>.png; empty: none)")
	fs.StringVar(&o.Figdir, "figdir", "", "directory the figure is copied to, e.g. docs/figures to update the tracked one (default: none)")
	fs.BoolVar(&o.Quiet, "quiet", false, "no progress output")
	replot := fs.String("replot", "", "recompute the summaries of this results_<task>.json and redraw its figure (into its directory and -figdir) instead of running; only -figdir applies with it")
	fs.BoolVar(&quick, "quick", false, "small preset (softmax, N=10, 20k contexts, 2 directions; output in results/theorem2-quick); explicit flags still apply")
	o.Exp.Register(fs) // -plan, -index, -shard, -merge, -submit, ... (package experiment)
	o.FS = fs
	if err := cli.Parse(fs, args, func(w io.Writer) { usage(w, fs) }); err != nil {
		return err
	}
	set := cli.Given(fs)
	if err := cli.Only(set, *replot != "", "-replot", "replot", "figdir"); err != nil {
		return err
	}
	if quick {
		preset := map[string]string{"kernels": "softmax", "N": "10", "nb": "200", "pert-nb": "50", "scales": "0.01,0.1", "dirs": "2",
			"adam-steps": "200", "newton-batches": "200", "hess-batches": "50", "out": "results/theorem2-quick", "figdir": ""}
		for name, v := range preset {
			if !set[name] {
				if err := fs.Set(name, v); err != nil {
					panic(err) // the preset names existing flags with valid values
				}
			}
		}
	}
	rules := cli.Rules{
		"kernels": cli.List(cli.OneOf(layers.KernelNames()...)), "task": cli.OneOf(theorem2.Tasks...), "aniso": cli.Positive,
		"N": cli.IntIn(1, maxN), "batch": cli.IntIn(2, maxBatch), "nb": cli.IntIn(2, maxBatches),
		"pert-nb": cli.IntIn(2, maxBatches), "scales": cli.Optional(cli.List(cli.Positive)), "dirs": cli.IntIn(0, maxDirs),
		"adam-steps": cli.IntIn(1, maxSteps), "newton": cli.IntIn(0, maxNewton), "newton-batches": cli.IntIn(2, maxBatches),
		"hess-batches": cli.IntIn(1, maxBatches), "seed": cli.Any, "data-seed": cli.Any, "out": cli.Any, "figdir": cli.Any,
		"quiet": cli.Any, "replot": cli.Any, "quick": cli.Any,
	}
	for _, n := range experiment.FlagNames { // experiment.Flags.Check checks these
		rules[n] = cli.Any
	}
	err := cli.Validate(fs, rules)
	if err == nil {
		err = cli.Usage(o.Exp.Check(set))
	}
	if err == nil && o.Exp.Index != "" { // -index past the plan, or -index env unset
		if kernels, kerr := theorem2.ParseKernels(o.Kernels); kerr == nil {
			_, err = o.Exp.Indices(len(kernels))
			err = cli.Usage(err)
		}
	}
	if err == nil && o.Out == "" && (o.Exp.Worker() || o.Exp.Merge || o.Exp.Submit != "") {
		err = cli.Usagef("-out: the runs of -index, -shard, -merge and -submit need a results directory")
	}
	if err == nil {
		err = cli.Needs(set, o.Task == theorem2.TaskAnisotropic, "-task anisotropic", "aniso")
	}
	if err != nil {
		return err
	}
	if *replot != "" {
		if err := cli.First(theorem2.CheckReplot(*replot), cli.OutDir("figdir", o.Figdir)); err != nil {
			return err
		}
		return theorem2.Redraw(*replot, o.Figdir)
	}
	if err := cli.First(cli.OutDir("out", o.Out), cli.OutDir("figdir", o.Figdir)); err != nil {
		return err
	}
	return theorem2.Run(o, "go run ./examples/theorem2 "+strings.Join(args, " "), os.Stdout)
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, `Usage:
  theorem2 [flags]              check Theorem 2 numerically for each kernel of -kernels
  theorem2 -replot FILE [-figdir DIR]  redraw the figure of a results_<task>.json

Checks numerically that a single-layer Trained TF sits at a stationary point of the
population cross-entropy at the one-step GD construction (the paper's Theorem 2,
Appendix I). Each kernel's check is a run of a plan (package experiment), its result a file
under -out/runs: -plan lists them, -index i and -shard i/n run some on any number of machines
sharing -out, -merge (-partial) prints the tables of the runs done and writes results_<task>.json
and the figure from them, -submit slurm -time T submits the missing ones as a Slurm job array
(docs/cluster.md).
Exit status: 0 done, 2 bad command line or input (one line on stderr, before any work), 1 a
failure during the run.

Flags:
`)
	cli.PrintDefaults(fs, w)
}
