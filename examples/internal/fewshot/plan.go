package fewshot

import (
	"fmt"
	"strings"

	"github.com/gdattn/gdattn/experiment"
	"github.com/gdattn/gdattn/graph"
)

// runKey is one run of the plan, with every setting that changes its
// result: the feature map (its spec: the cache entry it reads), the
// models' inputs (d, normalisation), the episodes, and the model with its
// training (a trained model: Train; linear probing: Probe).
type runKey struct {
	Features featureSpec `json:"features"`
	D        int         `json:"d"`
	Norm     string      `json:"norm"`
	L        int         `json:"L"`
	M        int         `json:"M"`
	DataSeed uint64      `json:"data_seed"`
	Model    string      `json:"model"`
	Train    *trainKey   `json:"train,omitempty"`
	Probe    *probeKey   `json:"probe,omitempty"`
}

// trainKey is the training of a GD model or Trained TF, and its seed
// (initialisation and minibatch order).
type trainKey struct {
	Epochs     int     `json:"epochs"`
	Batch      int     `json:"batch"`
	LR         float64 `json:"lr"`
	EvalPoints int     `json:"eval_points"`
	DPrime     int     `json:"dprime"`
	Kernel     string  `json:"kernel"`
	Layers     int     `json:"layers,omitempty"` // Trained TF
	Dtype      string  `json:"dtype"`
	Seed       uint64  `json:"seed"`
}

// probeKey is the fit of linear probing.
type probeKey struct {
	Steps int     `json:"steps"`
	L2    float64 `json:"l2"`
}

func (k runKey) label() string {
	s := fmt.Sprintf("%s d=%d %s", k.Features.Kind, k.D, k.Model)
	if k.Train != nil {
		s += fmt.Sprintf(" seed %d", k.Train.Seed)
	}
	return s
}

// spec returns the feature spec of kind under o.
func (o Options) spec(kind string) featureSpec {
	spec := featureSpec{Kind: kind, TestClasses: o.TestClasses, SplitSeed: o.SplitSeed, Dim: o.CNNDim}
	if kind == "cnn" {
		spec.Channels, spec.Epochs, spec.Seed, spec.Val = o.CNNChannels, o.CNNEpochs, o.CNNSeed, 10
	}
	return spec
}

// Experiment is a resolved few-shot experiment: its settings and its plan.
type Experiment struct {
	O     Options
	Plan  experiment.Plan
	kinds []string
	keys  []runKey
	// data holds each feature map's episodes once a run has needed them.
	data map[string]*kindData
}

// New checks o and lists its runs: feature map by feature map, model by
// model (in the order of o.Models), seed by seed; linear probing is one
// run per feature map.
func New(o Options) (*Experiment, error) {
	kinds, err := splitList(o.Features, "features")
	if err != nil {
		return nil, err
	}
	models, err := splitList(o.Models, "models")
	if err != nil {
		return nil, err
	}
	for _, k := range kinds {
		if k != "cnn" && k != "pca" {
			return nil, fmt.Errorf("unknown feature kind %q (want cnn or pca)", k)
		}
	}
	for _, m := range models {
		if _, err := blocksOf(m); err != nil && m != "tf" && m != "lp" {
			return nil, fmt.Errorf("-models: unknown model %q (want gd<K>, tf or lp)", m)
		}
	}
	if o.L <= 0 || o.M <= 0 || o.Epochs <= 0 || o.TFEpochs <= 0 || o.Batch <= 0 || o.Seeds <= 0 || o.D < 0 || o.EvalPoints <= 0 {
		return nil, fmt.Errorf("-L, -M, -epochs, -tf-epochs, -batch, -seeds and -eval-points must be positive (-d >= 0)")
	}
	if _, err := graph.ParseDtype(o.Dtype); err != nil {
		return nil, err
	}
	e := &Experiment{O: o, Plan: experiment.Plan{Name: "fewshot"}, kinds: kinds, data: map[string]*kindData{}}
	for _, kind := range kinds {
		spec := o.spec(kind)
		first := true
		for _, m := range models {
			base := runKey{Features: spec, D: o.D, Norm: o.Norm, L: o.L, M: o.M, DataSeed: o.DataSeed, Model: m}
			var ks []runKey
			switch {
			case m == "lp":
				base.Probe = &probeKey{Steps: o.ProbeSteps, L2: o.ProbeL2}
				ks = append(ks, base)
			default:
				for s := 0; s < o.Seeds; s++ {
					k := base
					t := trainKey{Epochs: o.Epochs, Batch: o.Batch, LR: o.LR, EvalPoints: o.EvalPoints, DPrime: o.DPrime,
						Kernel: o.Kernel, Dtype: o.Dtype, Seed: o.Seed + uint64(s)}
					if m == "tf" {
						t.Epochs, t.LR, t.Layers = o.TFEpochs, o.TFLR, o.TFLayers
					}
					k.Train = &t
					ks = append(ks, k)
				}
			}
			for _, k := range ks {
				est := runSeconds(k)
				if first {
					// The first run of a feature map builds it when the
					// cache lacks it (the runs after it read the cache).
					est += featureSeconds(spec)
					first = false
				}
				i, err := e.Plan.Add(k, k.label(), est, kind)
				if err != nil {
					return nil, err
				}
				if i != len(e.keys) {
					return nil, fmt.Errorf("-models lists %s twice", m)
				}
				e.keys = append(e.keys, k)
			}
		}
	}
	return e, nil
}

// splitList splits a comma-separated flag value, dropping empty items.
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

// blocksOf parses "gd<K>".
func blocksOf(name string) (int, error) {
	var k int
	if _, err := fmt.Sscanf(name, "gd%d", &k); err != nil || k <= 0 || fmt.Sprintf("gd%d", k) != name {
		return 0, fmt.Errorf("not gd<K>: %q", name)
	}
	return k, nil
}
