// Command quadrant runs the lower-dimensional experiments of the paper's
// Appendix E on the quadrant task (d = 2, C = 20, d' = 5, N = 100): one
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
// updates the tracked ones). Finished runs are kept in
// -out/journal.jsonl with their parameters under -out/ckpt, so an
// interrupted sweep resumes where it stopped.
//
//	go run ./examples/quadrant -quick   # about 2 minutes on 2 cores
//	go run ./examples/quadrant          # the full sweep (5 kernels × 5 seeds)
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
	flag.StringVar(&o.kernels, "kernels", "linear,rbf,exp,laplacian,softmax", "comma-separated attention kernels")
	flag.IntVar(&o.seeds, "seeds", 5, "model seeds per kernel and model (seed, seed+1, ...)")
	flag.Uint64Var(&o.seed, "seed", 1, "first model seed (initialisation and minibatch order)")
	flag.Uint64Var(&o.dataSeed, "data-seed", 1, "seed of W_e and of the train/test contexts")
	flag.IntVar(&o.L, "L", 2048, "training contexts")
	flag.IntVar(&o.M, "M", 2048, "test contexts (final accuracy)")
	flag.IntVar(&o.evalM, "eval-M", 512, "test contexts evaluated along the training curves")
	flag.IntVar(&o.N, "N", 100, "context size")
	flag.IntVar(&o.C, "C", 20, "number of categories (Appendix F's supplementary dataset: 100)")
	flag.IntVar(&o.dPrime, "dprime", 5, "embedding dimension d' (Appendix F's supplementary dataset: 25)")
	flag.IntVar(&o.epochs, "epochs", 40, "training epochs (steps = epochs·ceil(L/batch))")
	flag.IntVar(&o.every, "every", 2, "evaluate the curves every this many epochs")
	flag.IntVar(&o.batch, "batch", 32, "contexts per minibatch")
	flag.Float64Var(&o.lr, "lr", 1e-2, "Adam learning rate (GD and TF)")
	flag.IntVar(&o.grid, "grid", 81, "points per side of the probability-map grid (Figure 7)")
	flag.IntVar(&o.context, "context", -1, "test context of Figure 7 (-1: the first whose quadrants have 3 distinct most probable categories)")
	flag.StringVar(&o.out, "out", "results/quadrant", "output directory (results.json, figures, journal, checkpoints)")
	flag.StringVar(&o.figdir, "figdir", "", "directory the figures are copied to, e.g. docs/figures to update the tracked ones (default: none; they stay in -out)")
	flag.BoolVar(&o.quiet, "quiet", false, "no per-step progress output")
	flag.BoolVar(&quick, "quick", false, "small preset (rbf and softmax, 2 seeds, L=512, 20 epochs, output in results/quadrant-quick, -figdir unset); explicit flags still apply")
	flag.Parse()
	if quick {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		preset := map[string]string{"kernels": "rbf,softmax", "seeds": "2", "L": "512", "M": "512", "eval-M": "256",
			"epochs": "20", "every": "2", "grid": "65", "out": "results/quadrant-quick", "figdir": ""}
		for name, v := range preset {
			if !set[name] {
				if err := flag.Set(name, v); err != nil {
					panic(err) // the preset names existing flags
				}
			}
		}
	}
	if err := run(o, "go run ./examples/quadrant "+strings.Join(os.Args[1:], " ")); err != nil {
		fmt.Fprintln(os.Stderr, "quadrant:", err)
		os.Exit(1)
	}
}
