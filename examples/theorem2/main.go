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
	"os"
	"strings"
)

func main() {
	var o options
	var quick bool
	flag.StringVar(&o.kernels, "kernels", "softmax,linear,exp,rbf,laplacian", "comma-separated attention kernels")
	flag.StringVar(&o.task, "task", TaskRotated, "covariate law: rotated (x ~ N(0,I), quadrant axes at a random angle: O(2)-invariant), square (N(0,I), axis-aligned), uniform (the paper's U(-1,1)²), anisotropic (square with x₂ scaled by -aniso: a control that breaks the symmetry)")
	flag.Float64Var(&o.aniso, "aniso", 0.5, "with -task anisotropic: the scale of x₂")
	flag.IntVar(&o.N, "N", 20, "context size")
	flag.IntVar(&o.batch, "batch", 100, "contexts per minibatch")
	flag.IntVar(&o.nb, "nb", 2000, "minibatches at the GD point (contexts = nb·batch)")
	flag.IntVar(&o.pertNB, "pert-nb", 200, "minibatches at each perturbed point (and at the GD point for comparison)")
	flag.StringVar(&o.scales, "scales", "0.003,0.01,0.03,0.1,0.3", "relative perturbation sizes ε")
	flag.IntVar(&o.dirs, "dirs", 3, "random perturbation directions per size")
	flag.IntVar(&o.adamSteps, "adam-steps", 400, "Adam steps fitting α and g")
	flag.IntVar(&o.newtonIters, "newton", 3, "Newton steps polishing α and g on a fixed sample")
	flag.IntVar(&o.newtonBatches, "newton-batches", 2000, "minibatches of that fixed sample (independent of the check's)")
	flag.IntVar(&o.hessBatches, "hess-batches", 200, "minibatches of it used for the finite-difference Hessian")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the Monte Carlo samples and perturbations")
	flag.Uint64Var(&o.dataSeed, "data-seed", 1, "seed of W_e")
	flag.StringVar(&o.out, "out", "results/theorem2", "output directory (results_<task>.json, theorem2_<task>.png; empty: none)")
	flag.StringVar(&o.figdir, "figdir", "", "directory the figure is copied to, e.g. docs/figures to update the tracked one (default: none)")
	flag.BoolVar(&o.quiet, "quiet", false, "no progress output")
	replot := flag.String("replot", "", "recompute the summaries of this results_<task>.json and redraw its figure (into its directory and -figdir) instead of running")
	flag.BoolVar(&quick, "quick", false, "small preset (softmax, N=10, 20k contexts, 2 directions; output in results/theorem2-quick); explicit flags still apply")
	flag.Parse()
	if quick {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		preset := map[string]string{"kernels": "softmax", "N": "10", "nb": "200", "pert-nb": "50", "scales": "0.01,0.1", "dirs": "2",
			"adam-steps": "200", "newton-batches": "200", "hess-batches": "50", "out": "results/theorem2-quick", "figdir": ""}
		for name, v := range preset {
			if !set[name] {
				if err := flag.Set(name, v); err != nil {
					panic(err) // the preset names existing flags
				}
			}
		}
	}
	if *replot != "" {
		if err := redraw(*replot, o.figdir); err != nil {
			fmt.Fprintln(os.Stderr, "theorem2:", err)
			os.Exit(1)
		}
		return
	}
	if _, err := run(o, "go run ./examples/theorem2 "+strings.Join(os.Args[1:], " "), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "theorem2:", err)
		os.Exit(1)
	}
}
