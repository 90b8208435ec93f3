package fewshot

import (
	"github.com/gdattn/gdattn/internal/cli"
)

// Options are the experiment's settings (the command's flags).
type Options struct {
	QuickDraw string `json:"-"`
	Cache     string `json:"-"`
	Out       string `json:"-"`

	Features    string `json:"features"`     // comma-separated: cnn, pca
	Models      string `json:"models"`       // comma-separated: gd<K>, tf, lp
	TestClasses int    `json:"test_classes"` // held-out categories
	SplitSeed   uint64 `json:"split_seed"`

	CNNDim      int    `json:"cnn_dim"` // penultimate width of the CNN (and PCA components of the pixel baseline)
	CNNChannels [2]int `json:"cnn_channels"`
	CNNEpochs   int    `json:"cnn_epochs"`
	CNNSeed     uint64 `json:"cnn_seed"`

	D    int    `json:"d"`    // model input dimension: features are PCA-reduced to D (fitted on training classes); 0 keeps them
	Norm string `json:"norm"` // "unit": standardise then scale to unit norm; "std": standardise only

	L          int     `json:"L"`
	M          int     `json:"M"`
	Epochs     int     `json:"epochs"`
	TFEpochs   int     `json:"tf_epochs"`
	Batch      int     `json:"batch"`
	LR         float64 `json:"lr"`
	TFLR       float64 `json:"tf_lr"`
	Seeds      int     `json:"seeds"`
	Seed       uint64  `json:"seed"`
	DataSeed   uint64  `json:"data_seed"`
	EvalPoints int     `json:"eval_points"`
	DPrime     int     `json:"dprime"`
	Kernel     string  `json:"kernel"`
	TFLayers   int     `json:"tf_layers"`
	Dtype      string  `json:"dtype"`

	ProbeSteps int     `json:"probe_steps"`
	ProbeL2    float64 `json:"probe_l2"`

	Quick bool `json:"quick"`
	Quiet bool `json:"-"`
}

// Defaults are the settings of the full experiment (RESULTS.md).
func Defaults() Options {
	return Options{
		Features: "cnn,pca", Models: "lp,gd1,gd2,gd3,tf", TestClasses: 45, SplitSeed: 1,
		CNNDim: 512, CNNChannels: [2]int{16, 32}, CNNEpochs: 5, CNNSeed: 1,
		D: 32, Norm: "unit",
		L: 2048, M: 2048, Epochs: 6, TFEpochs: 10, Batch: 64, LR: 2e-2, TFLR: 1e-3,
		Seeds: 5, Seed: 1, DataSeed: 1, EvalPoints: 3, DPrime: 4, Kernel: "softmax", TFLayers: 2, Dtype: "float32",
		ProbeSteps: 500, ProbeL2: 1e-3,
	}
}

// QuickPreset applies the quick preset (minutes on 2 cores: a smaller CNN,
// d = 32, L = M = 512, 8 epochs, 2 seeds, lp, gd1, gd2, tf) to the settings
// whose flags are not in set, so flags given on the command line still
// win, and sets Quick.
func QuickPreset(o Options, set cli.Set) Options {
	keep := func(name string, dst *int, v int) {
		if !set[name] {
			*dst = v
		}
	}
	keep("cnn-dim", &o.CNNDim, 128)
	keep("cnn-epochs", &o.CNNEpochs, 2)
	keep("d", &o.D, 32)
	keep("L", &o.L, 512)
	keep("M", &o.M, 512)
	keep("epochs", &o.Epochs, 8)
	keep("tf-epochs", &o.TFEpochs, 8)
	keep("seeds", &o.Seeds, 2)
	keep("eval-points", &o.EvalPoints, 4)
	o.CNNChannels = [2]int{8, 16}
	if !set["models"] {
		o.Models = "lp,gd1,gd2,tf"
	}
	if !set["out"] {
		o.Out = "results/fewshot-quick"
	}
	o.Quick = true
	return o
}
