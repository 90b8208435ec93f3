package train_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
)

// TestConcurrentSaveDuringFit saves, evaluates and predicts one model from
// other goroutines while Runner.Fit trains it (run under -race): every
// entry point holds the model's lock, so each save is a complete
// checkpoint with the optimiser state of a step the training reached.
func TestConcurrentSaveDuringFit(t *testing.T) {
	trainSet, test := synthSets(t, 64, 8)
	m := newGD(t, 4)
	cfg := train.DefaultConfig()
	cfg.LR = 1e-3
	r, err := train.NewRunner(m, train.RunnerConfig{Optim: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dir := t.TempDir()
	done := make(chan error, 1)
	go func() { done <- r.Fit(trainSet, train.FitConfig{Epochs: 3, Seed: 1}) }()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for _, job := range []func(i int) error{
		func(i int) error { return r.Trainer().Save(filepath.Join(dir, "trainer"), map[string]int{"i": i}, nil) },
		func(i int) error { return m.Save(filepath.Join(dir, "model")) },
		func(i int) error { _, err := train.Evaluate(m, test); return err },
		func(i int) error { _, err := r.Predict(test); return err },
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 4 {
				if err := job(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	c, err := checkpoint.Read(filepath.Join(dir, "trainer"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Optim == nil || c.Optim.Step < 0 || c.Optim.Step > r.Trainer().StepCount() {
		t.Errorf("the trainer's checkpoint holds optimiser step %v, training made %d", c.Optim, r.Trainer().StepCount())
	}
	if _, err := checkpoint.Read(filepath.Join(dir, "model")); err != nil {
		t.Error(err)
	}
}

// TestConcurrentAnalyzeDuringFit reads a Trained TF model's matrices
// (tf.Analyze) while Fit trains it (run under -race): Analyze holds the
// model's lock.
func TestConcurrentAnalyzeDuringFit(t *testing.T) {
	trainSet, _ := synthSets(t, 64, 8)
	s, err := graph.NewScope(graph.Float64, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tf.NewModel(s, tf.Config{D: 10, DPrime: 5, C: 25, N: 10, Layers: 1}, 4)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- train.Fit(m, trainSet, train.RunnerConfig{Optim: train.Config{LR: 1e-3}}, train.FitConfig{Epochs: 2, Seed: 1})
	}()
	for range 20 {
		if _, err := tf.Analyze(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
