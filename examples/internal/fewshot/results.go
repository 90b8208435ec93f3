package fewshot

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// Results is what results.json holds.
type Results struct {
	Command  string          `json:"command"`
	Options  Options         `json:"options"`
	Features []FeatureResult `json:"features"`
	Seconds  float64         `json:"seconds"`
}

// FeatureResult holds the models of one feature map.
type FeatureResult struct {
	Kind      string        `json:"kind"`
	Cache     string        `json:"cache"`
	Spec      featureSpec   `json:"spec"`
	CNNValAcc []float64     `json:"cnn_val_acc,omitempty"`
	InputDim  int           `json:"input_dim"` // d seen by the models
	Train     []string      `json:"train_categories_sample"`
	Test      []string      `json:"test_categories"`
	Models    []ModelResult `json:"models"`
}

// ModelResult is a model's numbers on the held-out episodes: mean and
// standard deviation over its seeds (linear probing, which has no seed:
// the standard errors over the test episodes).
type ModelResult struct {
	Name    string       `json:"name"`
	Top1    float64      `json:"top1_mean"`
	Top1Std float64      `json:"top1_std"`
	NLL     float64      `json:"nll_mean"`
	NLLStd  float64      `json:"nll_std"`
	Seeds   []SeedResult `json:"seeds"`
}

// SeedResult is one seed of a model.
type SeedResult struct {
	Seed    uint64       `json:"seed"`
	Top1    float64      `json:"top1"`
	NLL     float64      `json:"nll"`
	Seconds float64      `json:"seconds"`
	Curve   []CurvePoint `json:"curve,omitempty"`
	Params  int          `json:"params,omitempty"`
}

// CurvePoint is an evaluation on the test episodes along training.
type CurvePoint struct {
	Epoch     int     `json:"epoch"`
	TrainLoss float64 `json:"train_loss"`
	Top1      float64 `json:"top1"`
	NLL       float64 `json:"nll"`
}

// writeResults writes results.json and fewshot.png to dir.
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
