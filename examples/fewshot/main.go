// Command fewshot reproduces the in-context image classification experiment
// of the paper (Section 5.2, Figure 4 right) on Quick, Draw! drawings: a
// small CNN, trained as a classifier on 300 of the 345 categories only,
// provides the features; GD attention models (1, 2, 3 blocks) and a Trained
// TF learn in-context 5-way 10-shot classification from L episodes of the
// training categories, and are tested on M episodes of the 45 held-out
// categories, against linear probing trained anew on every test context.
// A PCA of the raw pixels is the baseline feature map.
//
//	scripts/fetch-quickdraw.sh                   # once: the drawings, into ~/.cache/gdattn/quickdraw
//	go run ./examples/fewshot -quick             # a small run, minutes on 2 cores
//	go run ./examples/fewshot                    # the full run (see RESULTS.md)
//	go run ./examples/fewshot -plan              # its runs, with their estimated CPU time
//
// The experiment lives in examples/internal/fewshot; this command wires the
// flags to it. Features are cached as .npy (classes, count, dim) + counts
// under -cache and reused; each run's result goes to -out/runs, and the
// merged results to -out as results.json and fewshot.png.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/examples/internal/fewshot"
	"github.com/gdattn/gdattn/experiment"
	"github.com/gdattn/gdattn/internal/cli"
	"github.com/gdattn/gdattn/layers"
)

// Limits of the sizes a command line may ask for: far above the paper's
// (345 categories, CNN width 512, d' = 4, 2048 episodes), low enough that a
// typo cannot hang the graph construction or exhaust memory.
const (
	maxClasses  = 1 << 16 // -test-classes
	maxDim      = 4096    // -cnn-dim, -d
	maxEpisodes = 1 << 20 // -L, -M
	maxEpochs   = 1 << 20 // -epochs, -tf-epochs, -cnn-epochs
	maxBatch    = 1 << 16 // -batch
	maxSeeds    = 1000    // -seeds
	maxBlocks   = 64      // K of gd<K>, -tf-layers
	maxDPrime   = 1024    // -dprime
	maxSteps    = 1 << 20 // -probe-steps
	maxPoints   = 1000    // -eval-points
)

// Flags that apply only to some models of -models or feature maps of
// -features (see command).
var (
	gdFlags      = []string{"epochs", "lr"}
	tfFlags      = []string{"tf-epochs", "tf-lr", "tf-layers"}
	trainedFlags = []string{"batch", "seeds", "seed", "eval-points", "dprime", "kernel", "dtype"}
	probeFlags   = []string{"probe-steps", "probe-l2"}
	cnnFlags     = []string{"cnn-epochs"}
)

func main() { cli.Main("fewshot", func() error { return command(os.Args[1:]) }) }

// command parses and checks the command line args, then runs it.
func command(args []string) error {
	o := fewshot.Defaults()
	def := o
	var exp experiment.Flags
	cache := os.Getenv("GDATTN_CACHE")
	if cache == "" {
		cache = filepath.Join(filepath.Dir(data.QuickDrawDir()))
	}
	fs := cli.NewFlagSet("fewshot")
	fs.StringVar(&o.QuickDraw, "quickdraw", data.QuickDrawDir(), "folder of <category>.ndjson.gz files (scripts/fetch-quickdraw.sh)")
	fs.StringVar(&o.Cache, "cache", filepath.Join(cache, "fewshot"), "folder for cached features (not empty; shared by the workers of a plan)")
	fs.StringVar(&o.Out, "out", "results/fewshot", "folder for the runs (runs/), results.json and fewshot.png (empty: a temporary one for the runs, no files)")
	fs.StringVar(&o.Features, "features", def.Features, "feature maps, comma-separated: cnn (learned), pca (raw pixels)")
	fs.StringVar(&o.Models, "models", def.Models, fmt.Sprintf("models, comma-separated: lp (linear probing), gd<K> (GD, K blocks, 1..%d), tf (Trained TF)", maxBlocks))
	fs.IntVar(&o.TestClasses, "test-classes", def.TestClasses, "held-out categories, >= 5 (the rest, at least 5, train the CNN and the models)")
	fs.Uint64Var(&o.SplitSeed, "split-seed", def.SplitSeed, "seed of the train/held-out category split")
	fs.IntVar(&o.CNNDim, "cnn-dim", def.CNNDim, fmt.Sprintf("width of the CNN's penultimate layer (the feature dimension), 1..%d; also the PCA components of the pixel baseline", maxDim))
	fs.IntVar(&o.CNNEpochs, "cnn-epochs", def.CNNEpochs, "CNN training epochs (>= 1; with cnn in -features)")
	fs.IntVar(&o.D, "d", def.D, fmt.Sprintf("model input dimension d, 0..%d: features are PCA-reduced to d, fitted on the training categories (0: keep all)", maxDim))
	fs.StringVar(&o.Norm, "norm", def.Norm, "unit (standardise, then unit norm) or std (standardise)")
	fs.IntVar(&o.L, "L", def.L, fmt.Sprintf("training episodes, 1..%d", maxEpisodes))
	fs.IntVar(&o.M, "M", def.M, fmt.Sprintf("test episodes (held-out categories), 1..%d", maxEpisodes))
	fs.IntVar(&o.Epochs, "epochs", def.Epochs, "training epochs of the GD models (>= 1; with a gd<K> model)")
	fs.IntVar(&o.TFEpochs, "tf-epochs", def.TFEpochs, "training epochs of the Trained TF (>= 1; with tf in -models)")
	fs.IntVar(&o.Batch, "batch", def.Batch, fmt.Sprintf("episodes per minibatch, 1..%d (with a trained model: gd<K> or tf)", maxBatch))
	fs.Float64Var(&o.LR, "lr", def.LR, "Adam learning rate of the GD models (finite, > 0; with a gd<K> model)")
	fs.Float64Var(&o.TFLR, "tf-lr", def.TFLR, "Adam learning rate of the Trained TF (finite, > 0; with tf in -models)")
	fs.IntVar(&o.Seeds, "seeds", def.Seeds, fmt.Sprintf("model seeds (seed, seed+1, ...), 1..%d (with gd<K> or tf)", maxSeeds))
	fs.Uint64Var(&o.Seed, "seed", def.Seed, "first model seed (with gd<K> or tf)")
	fs.Uint64Var(&o.DataSeed, "data-seed", def.DataSeed, "seed of the training and test episodes")
	fs.IntVar(&o.EvalPoints, "eval-points", def.EvalPoints, fmt.Sprintf("evaluations on the test episodes along training (the curve), 1..%d (with gd<K> or tf)", maxPoints))
	fs.IntVar(&o.DPrime, "dprime", def.DPrime, fmt.Sprintf("embedding dimension d', 1..%d (with gd<K> or tf)", maxDPrime))
	fs.StringVar(&o.Kernel, "kernel", def.Kernel, "attention kernel: softmax, rbf, exp, laplacian, linear (with gd<K> or tf)")
	fs.IntVar(&o.TFLayers, "tf-layers", def.TFLayers, fmt.Sprintf("layers of the Trained TF (each self-attention + cross-attention), 1..%d (with tf in -models)", maxBlocks))
	fs.StringVar(&o.Dtype, "dtype", def.Dtype, "float32 or float64 (with gd<K> or tf)")
	fs.IntVar(&o.ProbeSteps, "probe-steps", def.ProbeSteps, fmt.Sprintf("gradient steps of linear probing on each test context, 1..%d (with lp in -models)", maxSteps))
	fs.Float64Var(&o.ProbeL2, "probe-l2", def.ProbeL2, "L2 penalty λ of linear probing (finite, >= 0; with lp in -models)")
	fs.BoolVar(&o.Quick, "quick", false, "small preset (minutes on 2 cores): smaller CNN, d=32, L=M=512, 8 epochs, 2 seeds, lp,gd1,gd2,tf")
	fs.BoolVar(&o.Quiet, "quiet", false, "no progress output")
	combine := fs.String("combine", "", "instead of running: combine the results.json of these comma-separated folders (at least two) into -out; no other flag applies")
	exp.Register(fs) // -plan, -index, -shard, -merge, -submit, ... (package experiment)
	if err := cli.Parse(fs, args, func(w io.Writer) { usage(w, fs) }); err != nil {
		return err
	}
	set := cli.Given(fs)
	rules := cli.Rules{
		"quickdraw": cli.Any, "cache": cli.NonEmpty, "out": cli.Any,
		"features": cli.List(cli.OneOf("cnn", "pca")), "models": cli.List(modelRule),
		"test-classes": cli.IntIn(5, maxClasses), "split-seed": cli.Any, "cnn-dim": cli.IntIn(1, maxDim),
		"cnn-epochs": cli.IntIn(1, maxEpochs), "d": cli.IntIn(0, maxDim), "norm": cli.OneOf("unit", "std"),
		"L": cli.IntIn(1, maxEpisodes), "M": cli.IntIn(1, maxEpisodes), "epochs": cli.IntIn(1, maxEpochs),
		"tf-epochs": cli.IntIn(1, maxEpochs), "batch": cli.IntIn(1, maxBatch), "lr": cli.Positive, "tf-lr": cli.Positive,
		"seeds": cli.IntIn(1, maxSeeds), "seed": cli.Any, "data-seed": cli.Any, "eval-points": cli.IntIn(1, maxPoints),
		"dprime": cli.IntIn(1, maxDPrime), "kernel": cli.OneOf(layers.KernelNames()...), "tf-layers": cli.IntIn(1, maxBlocks),
		"dtype": cli.OneOf("float32", "float64"), "probe-steps": cli.IntIn(1, maxSteps), "probe-l2": cli.NonNegative,
		"quick": cli.Any, "quiet": cli.Any, "combine": cli.Optional(cli.List(cli.NonEmpty)),
	}
	for _, n := range experiment.FlagNames { // experiment.Flags.Check checks these
		rules[n] = cli.Any
	}
	if err := cli.Validate(fs, rules); err != nil {
		return err
	}
	if *combine != "" {
		dirs, err := fewshot.CheckCombine(set, *combine, o.Out)
		if err == nil {
			err = cli.OutDir("out", o.Out)
		}
		if err != nil {
			return err
		}
		_, err = fewshot.Combine(dirs, o.Out, os.Stdout)
		return err
	}
	if err := exp.Check(set); err != nil {
		return cli.Usage(err)
	}
	if o.Quick {
		o = fewshot.QuickPreset(o, set)
	}
	if err := checkRun(o, exp, set); err != nil {
		return err
	}
	if o.Quick && strings.Contains(","+o.Models+",", ",tf,") && !exp.Plan && !exp.PlanJSON && !exp.Merge && exp.Submit == "" {
		fmt.Fprintln(os.Stderr, "note: the quick preset undertrains the Trained TF baseline (L=M=512, 8 epochs, 2 seeds): it checks the pipeline; the full preset gives the paper's comparison")
	}
	return fewshot.RunAll(o, exp, fs, os.Stdout)
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, `Usage:
  fewshot [flags]                        features, in-context models and linear probing on Quick, Draw!
  fewshot [flags] -plan                  list the runs (feature map, model, seed), estimated CPU time
  fewshot [flags] -index i | -shard i/n  run a part of them (workers sharing -out and -cache)
  fewshot [flags] -merge [-partial]      write results.json, the table and fewshot.png from the runs done
  fewshot [flags] -submit slurm          submit the missing runs as a Slurm job array (docs/cluster.md)
  fewshot -combine DIR,DIR... -out DIR   combine the results.json of several commands

Reproduces the few-shot experiment of the paper's Section 5.2 (5-way 10-shot episodes of
held-out categories). A run of the plan is one feature map, model and seed (linear probing:
one per feature map); its result goes to -out/runs. The features are built once (the CNN
trained, or the pixel PCA fitted) by the first run that needs them and cached in -cache, which
every worker reads: on a cluster, give all workers the same -cache on the shared filesystem, and
run the plan's first run of each feature map (its lp run, -index 0 for cnn) before the array
so that the tasks do not all build the features at once. A flag that applies only to some
models or feature maps (its help says which) is refused when -models or -features has none of
them. Exit status: 0 done, 2 bad command line or input (one line on stderr, before any work),
1 a failure during the run.

Flags:
`)
	cli.PrintDefaults(fs, w)
}
