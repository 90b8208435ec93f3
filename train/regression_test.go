package train_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/train"
)

// TestRunnerRegression: the same Runner evaluates a Gaussian GD model
// exactly as the plain-Go reference predicts (MSE of ReferenceReal's
// predictions), trains it (the MSE falls), and refuses a classification
// batch.
func TestRunnerRegression(t *testing.T) {
	const d, N, B = 4, 6, 8
	task, err := data.NewLinearRegression(data.LinearRegressionConfig{D: d, N: N, DY: 2, Noise: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	trainSet, _ := task.Sample(64, rand.New(rand.NewPCG(1, 1)))
	testSet, _ := task.Sample(21, rand.New(rand.NewPCG(1, 2))) // not a multiple of B: padding
	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := gd.NewModel(s, gd.Config{D: d, DPrime: 2, N: N, Kernel: layers.Linear(), Alpha: 0.3, Likelihood: gd.Gaussian()}, B)
	if err != nil {
		t.Fatal(err)
	}
	r, err := train.NewRunner(m, train.RunnerConfig{Optim: train.Config{LR: 0.05}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	before, err := r.Evaluate(testSet)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := gd.ReferenceReal(testSet.X, testSet.R, testSet.B, testSet.T, d, 2, nil, gd.ReferenceConfig{Steps: 1, Alpha: 0.3, Kernel: "linear"})
	if err != nil {
		t.Fatal(err)
	}
	y := testSet.QueryTargets()
	want := 0.0
	for i, p := range ref.Pred {
		want += (p - y[i]) * (p - y[i]) / float64(len(y))
	}
	if math.Abs(before.MSE-want) > 1e-12 || !before.Regression || !math.IsNaN(before.Top1) {
		t.Errorf("Evaluate = %+v, want MSE %v (the reference's)", before, want)
	}
	if math.Abs(before.Oracle-testSet.Oracle()) > 0 {
		t.Errorf("oracle %v, want %v", before.Oracle, testSet.Oracle())
	}
	if err := r.Fit(trainSet, train.FitConfig{Epochs: 20, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	after, err := r.Evaluate(testSet)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("MSE %.4f -> %.4f (oracle %.4f)", before.MSE, after.MSE, after.Oracle)
	if !(after.MSE < before.MSE) {
		t.Errorf("training did not lower the test MSE: %.4f -> %.4f", before.MSE, after.MSE)
	}
	p, err := r.Predict(testSet)
	if err != nil || len(p) != testSet.B*2 {
		t.Fatalf("Predict: %d values, %v", len(p), err)
	}
	// JSON round trip of regression metrics, and the categorical keys absent.
	js, _ := json.Marshal(after)
	if strings.Contains(string(js), "top1") || !strings.Contains(string(js), `"mse"`) {
		t.Errorf("JSON %s", js)
	}
	var back train.Metrics
	if err := json.Unmarshal(js, &back); err != nil || back.MSE != after.MSE || !back.Regression {
		t.Errorf("round trip %+v, %v", back, err)
	}
	// A classification batch, a missing query target, a wrong d_y.
	syn, _ := data.NewSynthetic(data.SyntheticConfig{D: d, N: N}, 1)
	cls, _ := syn.Sample(4, rand.New(rand.NewPCG(2, 2)))
	if _, err := r.Evaluate(cls); err == nil || !strings.Contains(err.Error(), "class labels") {
		t.Errorf("classification batch: %v", err)
	}
	miss, _ := testSet.Slice(0, 3)
	miss.R = append([]float64(nil), miss.R...)
	miss.R[(miss.T-1)*2] = math.NaN()
	if err := r.Fit(miss, train.FitConfig{Epochs: 1}); err == nil || !strings.Contains(err.Error(), "no query target") {
		t.Errorf("missing target: %v", err)
	}
	other, _ := data.NewLinearRegression(data.LinearRegressionConfig{D: d, N: N, DY: 3})
	wrong, _ := other.Sample(4, rand.New(rand.NewPCG(3, 3)))
	if _, err := r.Predict(wrong); err == nil || !strings.Contains(err.Error(), "DY = 3") {
		t.Errorf("wrong DY: %v", err)
	}
}

// TestFitCurveRegression: FitCurve evaluates a real-valued model after
// every epoch; its epoch metrics carry the MSE and survive JSON.
func TestFitCurveRegression(t *testing.T) {
	task, _ := data.NewLinearRegression(data.LinearRegressionConfig{D: 3, N: 4})
	trainSet, _ := task.Sample(32, rand.New(rand.NewPCG(1, 1)))
	testSet, _ := task.Sample(16, rand.New(rand.NewPCG(1, 2)))
	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := gd.NewModel(s, gd.Config{D: 3, DPrime: 1, N: 4, Blocks: 2, Kernel: layers.RBF(0.5), Likelihood: gd.Gaussian()}, 8)
	if err != nil {
		t.Fatal(err)
	}
	r, err := train.NewRunner(m, train.RunnerConfig{Optim: train.Config{LR: 0.05}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	curve, err := r.FitCurve(trainSet, testSet, train.FitConfig{Epochs: 3, Seed: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(curve) != 3 || !curve[2].Regression || !(curve[2].MSE > 0) {
		t.Fatalf("curve %+v", curve)
	}
	js, err := json.Marshal(curve[2])
	if err != nil {
		t.Fatal(err)
	}
	var back train.EpochMetrics
	if err := json.Unmarshal(js, &back); err != nil || back.Epoch != 3 || back.MSE != curve[2].MSE || !back.Regression || back.TrainLoss != curve[2].TrainLoss {
		t.Errorf("epoch metrics %s round trip: %+v, %v", js, back, err)
	}
	if strings.Contains(string(js), "top1") {
		t.Errorf("regression epoch metrics carry top1: %s", js)
	}
}
