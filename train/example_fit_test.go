package train_test

import (
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/train"
)

// Train a one-block GD model (softmax kernel) on 1024 contexts of the
// synthetic task of Appendix D and evaluate it on 512 fresh ones, before and
// after training.
func ExampleRunner_Fit() {
	task, err := data.NewSynthetic(data.DefaultSyntheticConfig(), 1) // C = 25, d' = 5, d = 10, N = 10
	if err != nil {
		log.Fatal(err)
	}
	trainSet, err := task.Sample(1024, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		log.Fatal(err)
	}
	testSet, err := task.Sample(512, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		log.Fatal(err)
	}
	s, err := graph.NewScope(graph.Float64, 1)
	if err != nil {
		log.Fatal(err)
	}
	c := task.Config
	m, err := gd.NewModel(s, gd.Config{D: c.D, DPrime: c.DPrime, C: c.C, N: c.N}, 64)
	if err != nil {
		log.Fatal(err)
	}
	r, err := train.NewRunner(m, train.RunnerConfig{Optim: train.Config{LR: 1e-2}})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	before, err := r.Evaluate(testSet)
	if err != nil {
		log.Fatal(err)
	}
	if err := r.Fit(trainSet, train.FitConfig{Epochs: 10, Seed: 1}); err != nil {
		log.Fatal(err)
	}
	after, err := r.Evaluate(testSet)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d steps\n", r.Trainer().StepCount())
	fmt.Printf("before: top-1 %.2f  NLL %.2f\n", before.Top1, before.NLL)
	fmt.Printf("after:  top-1 %.2f  NLL %.2f  (oracle %.2f)\n", after.Top1, after.NLL, after.Oracle)
	// Output:
	// 160 steps
	// before: top-1 0.33  NLL 2.72
	// after:  top-1 0.53  NLL 1.75  (oracle 0.77)
}

// Train a GD model with the package function Fit, save it, rebuild it from
// the checkpoint alone and evaluate the rebuilt model.
func ExampleFit() {
	task, err := data.NewSynthetic(data.DefaultSyntheticConfig(), 1)
	if err != nil {
		log.Fatal(err)
	}
	trainSet, err := task.Sample(256, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		log.Fatal(err)
	}
	testSet, err := task.Sample(256, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		log.Fatal(err)
	}
	s, err := graph.NewScope(graph.Float64, 1)
	if err != nil {
		log.Fatal(err)
	}
	m, err := gd.NewModel(s, gd.Config{D: 10, DPrime: 5, C: 25, N: 10, Blocks: 2}, 64)
	if err != nil {
		log.Fatal(err)
	}
	rc := train.RunnerConfig{Optim: train.Config{LR: 1e-2}}
	if err := train.Fit(m, trainSet, rc, train.FitConfig{Epochs: 5, Seed: 1}); err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := m.Save(filepath.Join(dir, "gd")); err != nil {
		log.Fatal(err)
	}
	loaded, err := gd.Load(filepath.Join(dir, "gd"), 64)
	if err != nil {
		log.Fatal(err)
	}
	want, err := train.Predict(m, testSet)
	if err != nil {
		log.Fatal(err)
	}
	got, err := train.Predict(loaded, testSet)
	if err != nil {
		log.Fatal(err)
	}
	met, err := train.Evaluate(loaded, testSet)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(loaded.Scope().ParamNames(), "same predictions:", slices.Equal(got, want))
	fmt.Printf("reloaded: top-1 %.2f  NLL %.2f\n", met.Top1, met.NLL)
	// Output:
	// [we log_alpha kernel/log_gamma] same predictions: true
	// reloaded: top-1 0.51  NLL 2.11
}
