package train_test

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/train"
)

// synthSets returns n training and m test contexts of the synthetic task.
func synthSets(t *testing.T, n, m int) (trainSet, testSet *data.Batch) {
	t.Helper()
	task, err := data.NewSynthetic(data.DefaultSyntheticConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if trainSet, err = task.Sample(n, rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Fatal(err)
	}
	if testSet, err = task.Sample(m, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	return trainSet, testSet
}

func newGD(t *testing.T, batch int) *gd.Model {
	t.Helper()
	s, err := graph.NewScope(graph.Float64, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := gd.NewModel(s, gd.Config{D: 10, DPrime: 5, C: 25, N: 10, Blocks: 2}, batch)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOneShotMatchesRunner: the package functions Fit, Predict and Evaluate
// give, bit for bit, the parameters, probabilities and metrics of a Runner
// doing the same, on two GD models built alike.
func TestOneShotMatchesRunner(t *testing.T) {
	trainSet, testSet := synthSets(t, 20, 13) // 20 = 2 full minibatches of 8 and a partial one
	rc := train.RunnerConfig{Optim: train.Config{LR: 1e-2}}
	fc := train.FitConfig{Epochs: 2, Seed: 5}

	viaRunner := newGD(t, 8)
	r, err := train.NewRunner(viaRunner, rc)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Fit(trainSet, fc); err != nil {
		t.Fatal(err)
	}
	wantProbs, err := r.Predict(testSet)
	if err != nil {
		t.Fatal(err)
	}
	wantMet, err := r.Evaluate(testSet)
	if err != nil {
		t.Fatal(err)
	}

	oneShot := newGD(t, 8)
	before, _ := graph.Values(oneShot.We)
	if err := train.Fit(oneShot, trainSet, rc, fc); err != nil {
		t.Fatal(err)
	}
	if after, _ := graph.Values(oneShot.We); slices.Equal(before, after) {
		t.Fatal("train.Fit left W_e unchanged")
	}
	for i, p := range viaRunner.Params() {
		want, _ := graph.Values(p)
		got, _ := graph.Values(oneShot.Params()[i])
		if !slices.Equal(got, want) {
			t.Errorf("parameter %s after train.Fit differs from Runner.Fit's", p.Name())
		}
	}
	probs, err := train.Predict(oneShot, testSet)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(probs, wantProbs) {
		t.Errorf("train.Predict differs from Runner.Predict")
	}
	met, err := train.Evaluate(oneShot, testSet)
	if err != nil {
		t.Fatal(err)
	}
	if met.Top1 != wantMet.Top1 || met.NLL != wantMet.NLL || met.Oracle != wantMet.Oracle || met.N != 13 {
		t.Errorf("train.Evaluate = %v, Runner.Evaluate = %v", met, wantMet)
	}
}

// TestOneShotSaveLoad: a model trained by train.Fit and saved with its
// optimiser state through the Trainer, with the config SavedConfig returns
// (as the package documentation shows), is rebuilt by gd.Load, and
// train.Predict gives the same probabilities for both.
func TestOneShotSaveLoad(t *testing.T) {
	trainSet, testSet := synthSets(t, 16, 5)
	m := newGD(t, 8)
	r, err := train.NewRunner(m, train.RunnerConfig{Optim: train.Config{LR: 1e-2}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Fit(trainSet, train.FitConfig{Epochs: 1}); err != nil {
		t.Fatal(err)
	}
	cfg, err := m.SavedConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ckpt")
	if err := r.Trainer().Save(dir, cfg, nil); err != nil {
		t.Fatal(err)
	}
	l, err := gd.Load(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	want, err := train.Predict(m, testSet)
	if err != nil {
		t.Fatal(err)
	}
	got, err := train.Predict(l, testSet) // batch 3: a padded last minibatch
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("probabilities of the reloaded model (-trained +reloaded):\n%s", diff)
	}
}

func TestOneShotErrors(t *testing.T) {
	trainSet, _ := synthSets(t, 4, 1)
	m := newGD(t, 4)
	unlabelled := *trainSet
	unlabelled.Y = slices.Clone(trainSet.Y)
	unlabelled.Y[unlabelled.T-1] = -1
	fc := train.FitConfig{Epochs: 1}
	lr1 := train.RunnerConfig{Optim: train.Config{LR: 1}}
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"fit nil model", func() error { return train.Fit(nil, trainSet, lr1, fc) }, "model is nil"},
		{"fit eval-only", func() error { return train.Fit(m, trainSet, train.RunnerConfig{EvalOnly: true}, fc) }, "EvalOnly"},
		{"fit no learning rate", func() error { return train.Fit(m, trainSet, train.RunnerConfig{}, fc) }, "LR 0"},
		{"fit no epochs", func() error { return train.Fit(m, trainSet, lr1, train.FitConfig{}) }, "Epochs = 0"},
		{"fit nil set", func() error { return train.Fit(m, nil, lr1, fc) }, "nil"},
		{"predict nil model", func() error { _, err := train.Predict(nil, trainSet); return err }, "model is nil"},
		{"predict nil set", func() error { _, err := train.Predict(m, nil); return err }, "nil"},
		{"evaluate nil model", func() error { _, err := train.Evaluate(nil, trainSet); return err }, "model is nil"},
		{"evaluate unknown label", func() error { _, err := train.Evaluate(m, &unlabelled); return err }, "context 0 has no query label"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	if _, err := train.Predict(m, &unlabelled); err != nil {
		t.Errorf("Predict with an unknown query label: %v", err)
	}
}
