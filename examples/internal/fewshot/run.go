package fewshot

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/examples/internal/sweep"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
)

// runOut is the output of a run (the result file's output): the feature
// map's description and the model's numbers, without timings (a rerun
// reproduces it exactly).
type runOut struct {
	Features FeatureResult `json:"features"`
	// TrainClasses is the number of training categories.
	TrainClasses int     `json:"train_classes"`
	Top1         float64 `json:"top1"`
	NLL          float64 `json:"nll"`
	// Top1Err and NLLErr are linear probing's standard errors over the
	// test episodes.
	Top1Err float64      `json:"top1_err,omitempty"`
	NLLErr  float64      `json:"nll_err,omitempty"`
	Curve   []CurvePoint `json:"curve,omitempty"`
	Params  int          `json:"params,omitempty"`
}

// kindData is a feature map's episodes, built once per process.
type kindData struct {
	info         FeatureResult
	trainClasses int
	train, test  *data.Batch
	err          error
}

// episodes returns the episodes of the feature map of run k, loading (or
// building and caching) its features the first time.
func (e *Experiment) episodes(k runKey, progress io.Writer) (*kindData, error) {
	kind := k.Features.Kind
	if d, ok := e.data[kind]; ok {
		return d, d.err
	}
	d := &kindData{}
	d.err = d.load(e.O, k, progress)
	e.data[kind] = d
	return d, d.err
}

func (d *kindData) load(o Options, k runKey, progress io.Writer) error {
	fs, err := loadFeatures(k.Features, o.QuickDraw, o.Cache, progress)
	if err != nil {
		return err
	}
	x, err := prepare(fs, k.D, k.Norm)
	if err != nil {
		return err
	}
	d.info = FeatureResult{Kind: k.Features.Kind, Cache: fs.Name, Spec: k.Features, CNNValAcc: fs.Meta.CNNValAcc, InputDim: x.Dim}
	for i, c := range fs.Meta.TrainClasses {
		if i < 10 {
			d.info.Train = append(d.info.Train, fs.F.Names[c])
		}
	}
	for _, c := range fs.Meta.TestClasses {
		d.info.Test = append(d.info.Test, fs.F.Names[c])
	}
	d.trainClasses = len(fs.Meta.TrainClasses)
	trainEp, err := data.NewEpisodes(x, fs.Meta.TrainClasses, data.EpisodeConfig{})
	if err != nil {
		return err
	}
	testEp, err := data.NewEpisodes(x, fs.Meta.TestClasses, data.EpisodeConfig{})
	if err != nil {
		return err
	}
	if d.train, err = trainEp.Sample(k.L, rand.New(rand.NewPCG(k.DataSeed, 1))); err != nil {
		return err
	}
	d.test, err = testEp.Sample(k.M, rand.New(rand.NewPCG(k.DataSeed, 2)))
	return err
}

// runOne runs run i of the plan.
func (e *Experiment) runOne(i int, progress io.Writer) (runOut, error) {
	k := e.keys[i]
	d, err := e.episodes(k, progress)
	if err != nil {
		return runOut{}, err
	}
	out := runOut{Features: d.info, TrainClasses: d.trainClasses}
	if k.Probe != nil {
		err = probeRun(k, d.test, &out)
	} else {
		err = trainRun(k, d.train, d.test, progress, &out)
	}
	if err != nil {
		return out, fmt.Errorf("%s features, %s: %w", k.Features.Kind, k.Model, err)
	}
	return out, nil
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

// probeRun fits linear probing on every test context; it has no seed, so
// its errors are the standard errors over the M test episodes.
func probeRun(k runKey, testSet *data.Batch, out *runOut) error {
	probs, err := linearProbe(testSet, probeConfig{Steps: k.Probe.Steps, L2: k.Probe.L2})
	if err != nil {
		return err
	}
	top1, nll, err := scoreProbs(testSet, probs)
	if err != nil {
		return err
	}
	out.Top1, out.NLL = top1, nll
	out.Top1Err = math.Sqrt(top1 * (1 - top1) / float64(testSet.B))
	per := make([]float64, testSet.B)
	for i := range per {
		per[i] = -math.Log(math.Max(probs[i*testSet.C+testSet.Y[i*testSet.T+testSet.T-1]], 1e-300))
	}
	_, sd := sweep.MeanStd(per)
	out.NLLErr = sd / math.Sqrt(float64(testSet.B))
	return nil
}

// trainRun trains the GD model or Trained TF of run k with its seed,
// evaluating it on the test episodes EvalPoints times along training.
func trainRun(k runKey, trainSet, testSet *data.Batch, progress io.Writer, out *runOut) error {
	t := k.Train
	dt, err := graph.ParseDtype(t.Dtype)
	if err != nil {
		return err
	}
	s, err := graph.NewScope(dt, t.Seed)
	if err != nil {
		return err
	}
	D, C, N := trainSet.D, trainSet.C, trainSet.T-1
	var m train.Model
	if k.Model == "tf" {
		if m, err = tf.NewModel(s, tf.Config{D: D, DPrime: t.DPrime, C: C, N: N, Layers: t.Layers, Cross: true, Kernel: layers.Builtin(t.Kernel, 1)}, t.Batch); err != nil {
			return err
		}
	} else {
		K, err := blocksOf(k.Model)
		if err != nil {
			return err
		}
		if m, err = gd.NewModel(s, gd.Config{D: D, DPrime: t.DPrime, C: C, N: N, Blocks: K, Kernel: layers.Builtin(t.Kernel, 1)}, t.Batch); err != nil {
			return err
		}
	}
	for _, p := range s.Params() {
		out.Params += p.Shape().TotalSize()
	}
	r, err := train.NewRunner(m, train.RunnerConfig{Optim: train.Config{LR: t.LR, Progress: progress,
		Label: fmt.Sprintf("%s seed %d", k.Model, t.Seed), Total: train.Steps(trainSet.B, t.Batch, t.Epochs)}})
	if err != nil {
		return err
	}
	defer r.Close()
	every := max(1, t.Epochs/t.EvalPoints)
	fc := train.FitConfig{Epochs: t.Epochs, Seed: t.Seed}
	fc.AfterEpoch = func(ep int, loss float64) error {
		if ep%every != 0 && ep != t.Epochs {
			return nil
		}
		met, err := r.Evaluate(testSet)
		if err != nil {
			return err
		}
		out.Curve = append(out.Curve, CurvePoint{Epoch: ep, TrainLoss: loss, Top1: met.Top1, NLL: met.NLL})
		logf(progress, "%s seed %d epoch %d: train loss %.4f, held-out top-1 %.4f NLL %.4f", k.Model, t.Seed, ep, loss, met.Top1, met.NLL)
		return nil
	}
	if err := r.Fit(trainSet, fc); err != nil {
		return err
	}
	last := out.Curve[len(out.Curve)-1]
	out.Top1, out.NLL = last.Top1, last.NLL
	return nil
}
