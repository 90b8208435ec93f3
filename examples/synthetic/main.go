// Command synthetic trains attention models on the paper's synthetic
// in-context classification task (Section 5.1 and Appendix D: C=25
// categories, d'=5, d=10) and reports top-1 accuracy, NLL and the Bayes
// oracle on fresh test contexts. It has three modes:
//
//	go run ./examples/synthetic                        # train K-block GD models (1 block, softmax, L=2048)
//	go run ./examples/synthetic -blocks 1,2,3 -seeds 5 # the README table
//	go run ./examples/synthetic -eval ckpt -x x.npy -y y.npy -probs p.npy
//	go run ./examples/synthetic -sweep all -quick      # the sweeps of Figures 2, 3 and 4 (left), small
//	go run ./examples/synthetic -sweep fig2 -plan      # the runs of a full sweep and its time estimate
//
// The default mode saves each trained model as a checkpoint, which -eval
// evaluates on contexts given as .npy files. -sweep trains the models of the
// paper's figures for several seeds, records every finished run in a
// results journal (a rerun resumes where an interrupted sweep stopped) and
// writes the figures as JSON, CSV and PNG; run with -h for the details.
package main

import (
	"flag"
	"fmt"
	"github.com/gdattn/gdattn/examples/internal/device"
	"os"
)

func main() {
	var o options
	flag.StringVar(&o.blocks, "blocks", "1", "comma-separated numbers of GD blocks (steps) to train, e.g. 1,2,3 (with -sweep: fig3's K, default 1,...,6)")
	flag.StringVar(&o.kernel, "kernel", "softmax", "update kernel: linear, rbf, exp, laplacian or softmax")
	flag.IntVar(&o.L, "L", 2048, "number of training contexts (with -sweep: fig3's L)")
	flag.IntVar(&o.M, "M", 2048, "number of test contexts")
	flag.IntVar(&o.N, "N", 10, "context size (examples per context)")
	flag.IntVar(&o.epochs, "epochs", 60, "training epochs")
	flag.IntVar(&o.batch, "batch", 64, "contexts per minibatch")
	flag.Float64Var(&o.lr, "lr", 1e-2, "Adam learning rate")
	flag.IntVar(&o.seeds, "seeds", 1, "number of model seeds (seed, seed+1, ...); mean ± std is reported")
	flag.Uint64Var(&o.seed, "seed", 1, "first model seed (initialisation and minibatch order)")
	flag.Uint64Var(&o.dataSeed, "data-seed", 1, "seed of the task (W_e) and of the train/test contexts")
	flag.StringVar(&o.dtype, "dtype", "float64", "float32 or float64")
	flag.StringVar(&o.out, "out", "checkpoints/synthetic", "directory for checkpoints (one per blocks/seed); empty: none")
	flag.StringVar(&o.evalDir, "eval", "", "evaluate this checkpoint instead of training (needs -x and -y)")
	flag.StringVar(&o.xPath, "x", "", "with -eval: contexts x, .npy float64 (B, N+1, d)")
	flag.StringVar(&o.yPath, "y", "", "with -eval: labels y, .npy int64 (B, N+1); the last label may be -1")
	flag.StringVar(&o.probsPath, "probs", "probs.npy", "with -eval: where to write the query probabilities (B, C)")
	flag.BoolVar(&o.quiet, "quiet", false, "no progress output")
	flag.StringVar(&o.sweep, "sweep", "", "run the sweeps of these figures: fig2, fig3, fig4 (comma-separated) or all")
	flag.BoolVar(&o.quick, "quick", false, "with -sweep: the small preset (a few minutes) instead of the full one (hours)")
	flag.StringVar(&o.ls, "Ls", "", "with -sweep: comma-separated training-context counts L of fig2 and fig4")
	flag.StringVar(&o.results, "results", "", "with -sweep: results directory (default results/synthetic, or results/synthetic-quick with -quick)")
	flag.StringVar(&o.figures, "figures", "", "with -sweep: directory for the PNGs (default the results directory)")
	flag.BoolVar(&o.plan, "plan", false, "with -sweep: print the pending runs and the time estimate, train nothing")
	flag.BoolVar(&o.plotOnly, "plot-only", false, "with -sweep: write JSON, CSV and PNG from the recorded runs, train nothing")
	flag.StringVar(&o.shard, "shard", "", "with -sweep: i/n runs only every n-th pending run from the i-th (0 <= i < n), to run n processes on one results directory")
	flag.StringVar(&o.device, "device", "cpu", "where the graphs run: "+device.Names)
	flag.Usage = usage
	flag.Parse()
	o.set = map[string]bool{}
	flag.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "synthetic:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags only; see -h)", flag.Arg(0))
	}
	closeDev, err := openDevice(o.device)
	if err != nil {
		return err
	}
	defer closeDev()
	if o.sweep == "" {
		for _, f := range []string{"quick", "Ls", "results", "figures", "plan", "plot-only", "shard"} {
			if o.set[f] {
				return fmt.Errorf("-%s needs -sweep", f)
			}
		}
		if o.evalDir != "" {
			return evalCheckpoint(o)
		}
		return trainBlocks(o)
	}
	st, err := resolveSweep(o)
	if err != nil {
		return err
	}
	return runSweep(st)
}

func usage() {
	w := flag.CommandLine.Output()
	fmt.Fprintf(w, `Usage:
  synthetic [flags]                   train K-block GD models (-blocks, -kernel, -L, ...), save checkpoints
  synthetic -eval DIR -x X -y Y       evaluate a checkpoint on .npy contexts
  synthetic -sweep FIGS [-quick] ...  the sweeps of the paper's Section 5.1, with plots

Trains attention models on the synthetic task of Appendix D (C=25, d'=5, d=10, N=10)
and reports test top-1 accuracy, NLL and the Bayes oracle on M fresh test contexts.

Sweeps (-sweep fig2,fig3,fig4 or -sweep all):
  fig2  test top-1 and NLL against the number of training contexts L: GD (one step) vs
        Trained TF (one self-attention layer), RBF and softmax kernels
  fig3  test top-1 and NLL after every training epoch: GD with K = 1..6 blocks, softmax
  fig4  (left) as fig2 for 2 GD blocks vs a 2-layer Trained TF with cross-attention, softmax

%s
%s
%s
  Both: N=10, batch 64, Adam lr 1e-2, float64, seeds 1.. and data seed 1. Flags given on the
  command line override the preset: -Ls, -epochs, -seeds, -seed, -data-seed, -M, -N, -batch,
  -lr, -dtype, -L (fig3's L), -blocks (fig3's K). -kernel and -out do not apply.

  Every finished run is appended to <results>/runs.jsonl, keyed by its configuration; a rerun
  skips the runs already there, so an interrupted sweep (Ctrl-C) resumes where it stopped and
  only the run in progress is lost. Before training, the sweep times each model in CPU time
  on this machine and prints the estimated time (on one free core; a busy machine takes
  longer). Each run shows a progress bar (a line every 10%% when the output is not a terminal)
  and a summary with the time left. After the sweep (and every minute during it) it writes,
  per figure:
    <results>/figN.json, figN.csv        mean and std over seeds of every point
    <figures>/synthetic-figN[-quick].png  the figure, error bars = std over seeds
  -plan prints the plan and the estimate only; -plot-only rewrites the figures from the
  journal; -shard i/n splits the pending runs over n processes sharing one results directory
  (start i = 0..n-1 side by side, one core each; the last to finish writes the full figures).

Flags:
`, presetRow("preset", "L (fig2, fig4)", "epochs", "fig3", "seeds", "M", "time"),
		presetRow("full", joinInts(fullPreset.Ls), fullPreset.Epochs, fmt.Sprintf("L=%d, %d ep", fullPreset.CurveL, fullPreset.CurveEpochs), fullPreset.Seeds, fullPreset.M, "~2.5 h CPU (-plan)"),
		presetRow("-quick", joinInts(quickPreset.Ls), quickPreset.Epochs, fmt.Sprintf("L=%d, %d ep", quickPreset.CurveL, quickPreset.CurveEpochs), quickPreset.Seeds, quickPreset.M, "~70 s CPU"))
	flag.PrintDefaults()
}

func presetRow(a ...any) string {
	return fmt.Sprintf("  %-8v %-28v %-7v %-15v %-6v %-5v %v", a...)
}

func joinInts(v []int) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(x)
	}
	return s
}

func parseInts(s string) ([]int, error) { return parseIntList("-blocks", s) }
