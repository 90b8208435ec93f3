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
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gdattn/gdattn/data"
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

func main() {
	o := defaults()
	def := o
	cache := os.Getenv("GDATTN_CACHE")
	if cache == "" {
		cache = filepath.Join(filepath.Dir(data.QuickDrawDir()))
	}
	flag.StringVar(&o.QuickDraw, "quickdraw", data.QuickDrawDir(), "folder of <category>.ndjson.gz files (scripts/fetch-quickdraw.sh)")
	flag.StringVar(&o.Cache, "cache", filepath.Join(cache, "fewshot"), "folder for cached features")
	flag.StringVar(&o.Out, "out", "results/fewshot", "folder for results.json and fewshot.png (empty: none)")
	flag.StringVar(&o.Features, "features", def.Features, "feature maps, comma-separated: cnn (learned), pca (raw pixels)")
	flag.StringVar(&o.Models, "models", def.Models, "models, comma-separated: lp (linear probing), gd<K> (GD, K blocks), tf (Trained TF)")
	flag.IntVar(&o.TestClasses, "test-classes", def.TestClasses, "held-out categories (the rest train the CNN and the models)")
	flag.Uint64Var(&o.SplitSeed, "split-seed", def.SplitSeed, "seed of the train/held-out category split")
	flag.IntVar(&o.CNNDim, "cnn-dim", def.CNNDim, "width of the CNN's penultimate layer (the feature dimension); also the PCA components of the pixel baseline")
	flag.IntVar(&o.CNNEpochs, "cnn-epochs", def.CNNEpochs, "CNN training epochs")
	flag.IntVar(&o.D, "d", def.D, "model input dimension d: features are PCA-reduced to d, fitted on the training categories (0: keep all)")
	flag.StringVar(&o.Norm, "norm", def.Norm, "unit (standardise, then unit norm) or std (standardise)")
	flag.IntVar(&o.L, "L", def.L, "training episodes")
	flag.IntVar(&o.M, "M", def.M, "test episodes (held-out categories)")
	flag.IntVar(&o.Epochs, "epochs", def.Epochs, "training epochs of the GD models")
	flag.IntVar(&o.TFEpochs, "tf-epochs", def.TFEpochs, "training epochs of the Trained TF")
	flag.IntVar(&o.Batch, "batch", def.Batch, "episodes per minibatch")
	flag.Float64Var(&o.LR, "lr", def.LR, "Adam learning rate of the GD models")
	flag.Float64Var(&o.TFLR, "tf-lr", def.TFLR, "Adam learning rate of the Trained TF")
	flag.IntVar(&o.Seeds, "seeds", def.Seeds, "model seeds (seed, seed+1, ...)")
	flag.Uint64Var(&o.Seed, "seed", def.Seed, "first model seed")
	flag.Uint64Var(&o.DataSeed, "data-seed", def.DataSeed, "seed of the training and test episodes")
	flag.IntVar(&o.EvalPoints, "eval-points", def.EvalPoints, "evaluations on the test episodes along training (the curve)")
	flag.IntVar(&o.DPrime, "dprime", def.DPrime, "embedding dimension d'")
	flag.StringVar(&o.Kernel, "kernel", def.Kernel, "attention kernel: softmax, rbf, exp, laplacian, linear")
	flag.IntVar(&o.TFLayers, "tf-layers", def.TFLayers, "layers of the Trained TF (each self-attention + cross-attention)")
	flag.StringVar(&o.Dtype, "dtype", def.Dtype, "float32 or float64")
	flag.IntVar(&o.ProbeSteps, "probe-steps", def.ProbeSteps, "gradient steps of linear probing on each test context")
	flag.Float64Var(&o.ProbeL2, "probe-l2", def.ProbeL2, "L2 penalty λ of linear probing")
	flag.BoolVar(&o.Quick, "quick", false, "small preset (minutes on 2 cores): smaller CNN, d=32, L=M=512, 8 epochs, 2 seeds, lp,gd1,gd2,tf")
	flag.BoolVar(&o.Quiet, "quiet", false, "no progress output")
	mergeDirs := flag.String("merge", "", "instead of running: merge the results.json of these comma-separated folders into -out")
	flag.Parse()
	if *mergeDirs != "" {
		if _, err := merge(strings.Split(*mergeDirs, ","), o.Out, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "fewshot:", err)
			os.Exit(1)
		}
		return
	}
	if o.Quick {
		o = quickOverride(o)
	}
	if _, err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fewshot:", err)
		os.Exit(1)
	}
}

// quickOverride applies the quick preset to the flags left at their
// defaults, so explicit flags still win.
func quickOverride(o options) options {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
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
