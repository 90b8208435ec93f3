package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/examples/internal/sweep"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
	"gorgonia.org/tensor"
)

// options are the command's flags.
type options struct {
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

// Results is what results.json holds.
type Results struct {
	Command  string          `json:"command"`
	Options  options         `json:"options"`
	Features []featureResult `json:"features"`
	Seconds  float64         `json:"seconds"`
}

type featureResult struct {
	Kind      string      `json:"kind"`
	Cache     string      `json:"cache"`
	Spec      featureSpec `json:"spec"`
	CNNValAcc []float64   `json:"cnn_val_acc,omitempty"`
	InputDim  int         `json:"input_dim"` // d seen by the models
	Train     []string    `json:"train_categories_sample"`
	Test      []string    `json:"test_categories"`
	Models    []modelRes  `json:"models"`
}

type modelRes struct {
	Name    string    `json:"name"`
	Top1    float64   `json:"top1_mean"`
	Top1Std float64   `json:"top1_std"`
	NLL     float64   `json:"nll_mean"`
	NLLStd  float64   `json:"nll_std"`
	Seeds   []seedRes `json:"seeds"`
}

type seedRes struct {
	Seed    uint64       `json:"seed"`
	Top1    float64      `json:"top1"`
	NLL     float64      `json:"nll"`
	Seconds float64      `json:"seconds"`
	Curve   []curvePoint `json:"curve,omitempty"`
	Params  int          `json:"params,omitempty"`
}

type curvePoint struct {
	Epoch     int     `json:"epoch"`
	TrainLoss float64 `json:"train_loss"`
	Top1      float64 `json:"top1"`
	NLL       float64 `json:"nll"`
}

func run(o options, stdout io.Writer) (*Results, error) {
	start := time.Now()
	var progress io.Writer = os.Stderr
	if o.Quiet {
		progress = nil
	}
	kinds, err := splitList(o.Features, "features")
	if err != nil {
		return nil, err
	}
	models, err := splitList(o.Models, "models")
	if err != nil {
		return nil, err
	}
	for _, m := range models {
		if _, err := blocksOf(m); err != nil && m != "tf" && m != "lp" {
			return nil, fmt.Errorf("-models: unknown model %q (want gd<K>, tf or lp)", m)
		}
	}
	if o.L <= 0 || o.M <= 0 || o.Epochs <= 0 || o.TFEpochs <= 0 || o.Batch <= 0 || o.Seeds <= 0 || o.D < 0 || o.EvalPoints <= 0 {
		return nil, fmt.Errorf("-L, -M, -epochs, -tf-epochs, -batch, -seeds and -eval-points must be positive (-d >= 0)")
	}
	dt, err := graph.ParseDtype(o.Dtype)
	if err != nil {
		return nil, err
	}
	res := &Results{Command: strings.Join(os.Args, " "), Options: o}
	for _, kind := range kinds {
		spec := featureSpec{Kind: kind, TestClasses: o.TestClasses, SplitSeed: o.SplitSeed, Dim: o.CNNDim}
		if kind == "cnn" {
			spec.Channels, spec.Epochs, spec.Seed, spec.Val = o.CNNChannels, o.CNNEpochs, o.CNNSeed, 10
		}
		fs, err := loadFeatures(spec, o.QuickDraw, o.Cache, progress)
		if err != nil {
			return nil, err
		}
		x, err := prepare(fs, o.D, o.Norm)
		if err != nil {
			return nil, err
		}
		fr := featureResult{Kind: kind, Cache: fs.Dir, Spec: spec, CNNValAcc: fs.Meta.CNNValAcc, InputDim: x.Dim}
		for i, c := range fs.Meta.TrainClasses {
			if i < 10 {
				fr.Train = append(fr.Train, fs.F.Names[c])
			}
		}
		for _, c := range fs.Meta.TestClasses {
			fr.Test = append(fr.Test, fs.F.Names[c])
		}
		trainEp, err := data.NewEpisodes(x, fs.Meta.TrainClasses, data.EpisodeConfig{})
		if err != nil {
			return nil, err
		}
		testEp, err := data.NewEpisodes(x, fs.Meta.TestClasses, data.EpisodeConfig{})
		if err != nil {
			return nil, err
		}
		trainSet, err := trainEp.Sample(o.L, rand.New(rand.NewPCG(o.DataSeed, 1)))
		if err != nil {
			return nil, err
		}
		testSet, err := testEp.Sample(o.M, rand.New(rand.NewPCG(o.DataSeed, 2)))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(stdout, "%s features (%s): d=%d, %d train / %d held-out categories, L=%d train / M=%d test episodes (5-way 10-shot, N=50)\n",
			kind, fs.Dir, x.Dim, len(fs.Meta.TrainClasses), len(fs.Meta.TestClasses), o.L, o.M)
		for _, name := range models {
			mr, err := runModel(o, name, dt, trainSet, testSet, progress)
			if err != nil {
				return nil, fmt.Errorf("%s features, %s: %w", kind, name, err)
			}
			fmt.Fprintf(stdout, "  %-4s top-1 %.4f ± %.4f   NLL %.4f ± %.4f   (%d seeds)\n", name, mr.Top1, mr.Top1Std, mr.NLL, mr.NLLStd, len(mr.Seeds))
			fr.Models = append(fr.Models, mr)
		}
		res.Features = append(res.Features, fr)
	}
	res.Seconds = time.Since(start).Seconds()
	if o.Out != "" {
		if err := writeResults(res, o.Out); err != nil {
			return nil, err
		}
		fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(o.Out, "results.json"), filepath.Join(o.Out, "fewshot.png"))
	}
	return res, nil
}

// prepare maps features to the models' inputs: a PCA to d dimensions (when
// 0 < d < Dim) and a standardisation, both fitted on the training classes
// only, then (norm "unit") a scaling of every vector to unit norm.
func prepare(fs *featureSet, d int, norm string) (*data.Features, error) {
	f := fs.F
	if d > 0 && d < f.Dim {
		p, err := data.FitPCA(f, fs.Meta.TrainClasses, d)
		if err != nil {
			return nil, err
		}
		if f, err = p.Apply(f); err != nil {
			return nil, err
		}
	}
	mean, std, err := f.Stats(fs.Meta.TrainClasses)
	if err != nil {
		return nil, err
	}
	switch norm {
	case "unit":
		return f.Standardize(mean, std, true)
	case "std":
		return f.Standardize(mean, std, false)
	}
	return nil, fmt.Errorf("-norm %q: want unit or std", norm)
}

// runModel trains and evaluates one model over the seeds (or runs the
// linear probe, which has no seed).
func runModel(o options, name string, dt tensor.Dtype, trainSet, testSet *data.Batch, progress io.Writer) (modelRes, error) {
	mr := modelRes{Name: name}
	if name == "lp" {
		st := time.Now()
		probs, err := linearProbe(testSet, probeConfig{Steps: o.ProbeSteps, L2: o.ProbeL2})
		if err != nil {
			return mr, err
		}
		top1, nll, err := scoreProbs(testSet, probs)
		if err != nil {
			return mr, err
		}
		mr.Seeds = []seedRes{{Top1: top1, NLL: nll, Seconds: time.Since(st).Seconds()}}
		mr.Top1, mr.NLL = top1, nll
		// No seed: report the standard errors over the M episodes instead.
		mr.Top1Std = math.Sqrt(top1 * (1 - top1) / float64(testSet.B))
		per := make([]float64, testSet.B)
		for i := range per {
			per[i] = -math.Log(math.Max(probs[i*testSet.C+testSet.Y[i*testSet.T+testSet.T-1]], 1e-300))
		}
		_, sd := sweep.MeanStd(per)
		mr.NLLStd = sd / math.Sqrt(float64(testSet.B))
		return mr, nil
	}
	var top1s, nlls []float64
	for k := 0; k < o.Seeds; k++ {
		seed := o.Seed + uint64(k)
		sr, err := trainOne(o, name, dt, seed, trainSet, testSet, progress)
		if err != nil {
			return mr, err
		}
		mr.Seeds = append(mr.Seeds, sr)
		top1s, nlls = append(top1s, sr.Top1), append(nlls, sr.NLL)
	}
	mr.Top1, mr.Top1Std = sweep.MeanStd(top1s)
	mr.NLL, mr.NLLStd = sweep.MeanStd(nlls)
	return mr, nil
}

func trainOne(o options, name string, dt tensor.Dtype, seed uint64, trainSet, testSet *data.Batch, progress io.Writer) (seedRes, error) {
	st := time.Now()
	sr := seedRes{Seed: seed}
	s, err := graph.NewScope(dt, seed)
	if err != nil {
		return sr, err
	}
	D, C, N := trainSet.D, trainSet.C, trainSet.T-1
	var m train.Model
	epochs, lr := o.Epochs, o.LR
	if name == "tf" {
		mm, err := tf.NewModel(s, tf.Config{D: D, DPrime: o.DPrime, C: C, N: N, Layers: o.TFLayers, Cross: true, Kernel: layers.Builtin(o.Kernel, 1)}, o.Batch)
		if err != nil {
			return sr, err
		}
		m = mm
		epochs, lr = o.TFEpochs, o.TFLR
	} else {
		K, _ := blocksOf(name)
		mm, err := gd.NewModel(s, gd.Config{D: D, DPrime: o.DPrime, C: C, N: N, Blocks: K, Kernel: layers.Builtin(o.Kernel, 1)}, o.Batch)
		if err != nil {
			return sr, err
		}
		m = mm
	}
	for _, p := range s.Params() {
		sr.Params += p.Shape().TotalSize()
	}
	r, err := train.NewRunner(m, train.RunnerConfig{Optim: train.Config{LR: lr, Progress: progress,
		Label: fmt.Sprintf("%s seed %d", name, seed), Total: train.Steps(trainSet.B, o.Batch, epochs)}})
	if err != nil {
		return sr, err
	}
	defer r.Close()
	every := max(1, epochs/o.EvalPoints)
	tc := train.FitConfig{Epochs: epochs, Seed: seed}
	tc.AfterEpoch = func(ep int, loss float64) error {
		if ep%every != 0 && ep != epochs {
			return nil
		}
		met, err := r.Evaluate(testSet)
		if err != nil {
			return err
		}
		sr.Curve = append(sr.Curve, curvePoint{Epoch: ep, TrainLoss: loss, Top1: met.Top1, NLL: met.NLL})
		logf(progress, "%s seed %d epoch %d: train loss %.4f, held-out top-1 %.4f NLL %.4f", name, seed, ep, loss, met.Top1, met.NLL)
		return nil
	}
	if err := r.Fit(trainSet, tc); err != nil {
		return sr, err
	}
	last := sr.Curve[len(sr.Curve)-1]
	sr.Top1, sr.NLL, sr.Seconds = last.Top1, last.NLL, time.Since(st).Seconds()
	return sr, nil
}

// blocksOf parses "gd<K>".
func blocksOf(name string) (int, error) {
	var k int
	if _, err := fmt.Sscanf(name, "gd%d", &k); err != nil || k <= 0 || fmt.Sprintf("gd%d", k) != name {
		return 0, fmt.Errorf("not gd<K>: %q", name)
	}
	return k, nil
}

func splitList(s, flag string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-%s is empty", flag)
	}
	return out, nil
}

func writeResults(res *Results, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), raw, 0o644); err != nil {
		return err
	}
	return plotResults(res, filepath.Join(dir, "fewshot.png"))
}
