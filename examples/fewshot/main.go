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
//
// Features are cached as .npy (classes, count, dim) + counts under -cache and
// reused; results go to -out as results.json and fewshot.png.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/internal/cli"
	"github.com/gdattn/gdattn/layers"
)

func defaults() options {
	return options{
		Features: "cnn,pca", Models: "lp,gd1,gd2,gd3,tf", TestClasses: 45, SplitSeed: 1,
		CNNDim: 512, CNNChannels: [2]int{16, 32}, CNNEpochs: 5, CNNSeed: 1,
		D: 32, Norm: "unit",
		L: 2048, M: 2048, Epochs: 6, TFEpochs: 10, Batch: 64, LR: 2e-2, TFLR: 1e-3,
		Seeds: 5, Seed: 1, DataSeed: 1, EvalPoints: 3, DPrime: 4, Kernel: "softmax", TFLayers: 2, Dtype: "float32",
		ProbeSteps: 500, ProbeL2: 1e-3,
	}
}

// quick shrinks a run to minutes on 2 cores.
func quick(o options) options {
	o.CNNDim, o.CNNChannels, o.CNNEpochs = 128, [2]int{8, 16}, 2
	o.D = 32
	o.L, o.M, o.Epochs, o.TFEpochs, o.Seeds, o.EvalPoints = 512, 512, 8, 8, 2, 4
	o.Models = "lp,gd1,gd2,tf"
	return o
}

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
	o := defaults()
	def := o
	cache := os.Getenv("GDATTN_CACHE")
	if cache == "" {
		cache = filepath.Join(filepath.Dir(data.QuickDrawDir()))
	}
	fs := cli.NewFlagSet("fewshot")
	fs.StringVar(&o.QuickDraw, "quickdraw", data.QuickDrawDir(), "folder of <category>.ndjson.gz files (scripts/fetch-quickdraw.sh)")
	fs.StringVar(&o.Cache, "cache", filepath.Join(cache, "fewshot"), "folder for cached features (not empty)")
	fs.StringVar(&o.Out, "out", "results/fewshot", "folder for results.json and fewshot.png (empty: none)")
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
	mergeDirs := fs.String("merge", "", "instead of running: merge the results.json of these comma-separated folders (at least two) into -out; no other flag applies")
	if err := cli.Parse(fs, args, func(w io.Writer) { usage(w, fs) }); err != nil {
		return err
	}
	set := cli.Given(fs)
	err := cli.Validate(fs, cli.Rules{
		"quickdraw": cli.Any, "cache": cli.NonEmpty, "out": cli.Any,
		"features": cli.List(cli.OneOf("cnn", "pca")), "models": cli.List(modelRule),
		"test-classes": cli.IntIn(5, maxClasses), "split-seed": cli.Any, "cnn-dim": cli.IntIn(1, maxDim),
		"cnn-epochs": cli.IntIn(1, maxEpochs), "d": cli.IntIn(0, maxDim), "norm": cli.OneOf("unit", "std"),
		"L": cli.IntIn(1, maxEpisodes), "M": cli.IntIn(1, maxEpisodes), "epochs": cli.IntIn(1, maxEpochs),
		"tf-epochs": cli.IntIn(1, maxEpochs), "batch": cli.IntIn(1, maxBatch), "lr": cli.Positive, "tf-lr": cli.Positive,
		"seeds": cli.IntIn(1, maxSeeds), "seed": cli.Any, "data-seed": cli.Any, "eval-points": cli.IntIn(1, maxPoints),
		"dprime": cli.IntIn(1, maxDPrime), "kernel": cli.OneOf(layers.KernelNames()...), "tf-layers": cli.IntIn(1, maxBlocks),
		"dtype": cli.OneOf("float32", "float64"), "probe-steps": cli.IntIn(1, maxSteps), "probe-l2": cli.NonNegative,
		"quick": cli.Any, "quiet": cli.Any, "merge": cli.Optional(cli.List(cli.NonEmpty)),
	})
	if err != nil {
		return err
	}
	if *mergeDirs != "" {
		dirs, err := checkMerge(set, *mergeDirs, o.Out)
		if err == nil {
			err = cli.OutDir("out", o.Out)
		}
		if err != nil {
			return err
		}
		_, err = merge(dirs, o.Out, os.Stdout)
		return err
	}
	if o.Quick {
		o = quickOverride(o, set)
	}
	has := map[string]bool{}
	for _, m := range strings.Split(o.Models, ",") {
		m = strings.TrimSpace(m)
		has[m], has["gd"] = true, has["gd"] || strings.HasPrefix(m, "gd")
	}
	err = cli.First(
		cli.Needs(set, has["gd"], "a gd<K> model in -models", gdFlags...),
		cli.Needs(set, has["tf"], "tf in -models", tfFlags...),
		cli.Needs(set, has["gd"] || has["tf"], "a trained model (gd<K> or tf) in -models", trainedFlags...),
		cli.Needs(set, has["lp"], "lp in -models", probeFlags...),
		cli.Needs(set, strings.Contains(o.Features, "cnn"), "cnn in -features", cnnFlags...),
		checkFeatureInputs(o),
		cli.OutDir("out", o.Out),
		cli.OutDir("cache", o.Cache),
	)
	if err != nil {
		return err
	}
	if o.Quick && has["tf"] {
		fmt.Fprintln(os.Stderr, "note: the quick preset undertrains the Trained TF baseline (L=M=512, 8 epochs, 2 seeds): it checks the pipeline; the full preset gives the paper's comparison")
	}
	_, err = run(o, os.Stdout)
	return err
}

// modelRule accepts lp, tf or gd<K> with 1 <= K <= maxBlocks.
func modelRule(name string, v any) error {
	m := v.(string)
	if m == "lp" || m == "tf" {
		return nil
	}
	if k, err := blocksOf(m); err != nil || k > maxBlocks {
		return fmt.Errorf("%s: unknown model %q (want lp, tf or gd<K> with K in 1..%d)", name, m, maxBlocks)
	}
	return nil
}

// checkMerge checks the -merge mode: no other flag but -out, which must be
// set, and at least two folders, each with a readable results.json that
// holds results (every trained model with its seeds).
func checkMerge(set cli.Set, list, out string) ([]string, error) {
	if err := cli.Only(set, true, "-merge", "merge", "out"); err != nil {
		return nil, err
	}
	if out == "" {
		return nil, cli.Usagef("-merge needs -out")
	}
	dirs := strings.Split(list, ",")
	if len(dirs) < 2 {
		return nil, cli.Usagef("-merge needs at least two result folders")
	}
	for i, d := range dirs {
		dirs[i] = strings.TrimSpace(d)
		p := filepath.Join(dirs[i], "results.json")
		raw, err := cli.ReadInput("merge", p, cli.MaxResultsBytes)
		if err != nil {
			return nil, err
		}
		var r Results
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, cli.Usagef("-merge: %s: %v", p, err)
		}
		if len(r.Features) == 0 {
			return nil, cli.Usagef("-merge: %s holds no results", p)
		}
		for _, fr := range r.Features {
			for _, m := range fr.Models {
				if m.Name != "lp" && len(m.Seeds) == 0 {
					// merge averages the seeds of a trained model.
					return nil, cli.Usagef("-merge: %s: %s features: model %q has no seeds", p, fr.Kind, m.Name)
				}
			}
		}
	}
	ins := make([]cli.Path, len(dirs))
	for i, d := range dirs {
		ins[i] = cli.Path{Flag: "merge", Path: d}
	}
	// The merge writes -out/results.json: -out must not be a merged folder.
	if err := cli.NotInputs([]cli.Path{{Flag: "out", Path: out}}, ins...); err != nil {
		return nil, err
	}
	return dirs, nil
}

// checkFeatureInputs refuses a -quickdraw that exists but is not a folder,
// and a run that has neither the drawings nor a cache to read features from. (Whether the cache holds the features of
// this run's settings is known only once run builds their specification.)
func checkFeatureInputs(o options) error {
	if fi, err := os.Stat(o.QuickDraw); err == nil {
		if !fi.IsDir() { // a file or device: never a folder of drawings, cache or not
			return cli.Usagef("-quickdraw %s: not a folder (%v), want the folder of <category>.ndjson.gz files", o.QuickDraw, fi.Mode().Type())
		}
		return nil
	}
	if fi, err := os.Stat(o.Cache); err == nil && fi.IsDir() {
		return nil
	}
	return cli.Usagef("-quickdraw %s: no such folder (scripts/fetch-quickdraw.sh fetches the drawings), and no feature cache in -cache %s", o.QuickDraw, o.Cache)
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, `Usage:
  fewshot [flags]                 features, in-context models and linear probing on Quick, Draw!
  fewshot -merge DIR,DIR... -out DIR  merge the results of several runs

Reproduces the few-shot experiment of the paper's Section 5.2 (5-way 10-shot episodes of
held-out categories). A flag that applies only to some models or feature maps (its help says
which) is refused when -models or -features has none of them. Exit status: 0 done, 2 bad
command line or input (one line on stderr, before any work), 1 a failure during the run.

Flags:
`)
	cli.PrintDefaults(fs, w)
}

// quickOverride applies the quick preset to the flags left at their
// defaults, so explicit flags still win.
func quickOverride(o options, set cli.Set) options {
	q := quick(o)
	keep := func(name string, dst *int, v int) {
		if !set[name] {
			*dst = v
		}
	}
	keep("cnn-dim", &o.CNNDim, q.CNNDim)
	keep("cnn-epochs", &o.CNNEpochs, q.CNNEpochs)
	keep("d", &o.D, q.D)
	keep("L", &o.L, q.L)
	keep("M", &o.M, q.M)
	keep("epochs", &o.Epochs, q.Epochs)
	keep("tf-epochs", &o.TFEpochs, q.TFEpochs)
	keep("seeds", &o.Seeds, q.Seeds)
	keep("eval-points", &o.EvalPoints, q.EvalPoints)
	o.CNNChannels = q.CNNChannels
	if !set["models"] {
		o.Models = q.Models
	}
	if !set["out"] {
		o.Out = "results/fewshot-quick"
	}
	return o
}
