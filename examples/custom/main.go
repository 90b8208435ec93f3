package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/cli"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
)

func main() { cli.Main("custom", func() error { return command(os.Args[1:]) }) }

// command parses and checks the flags, then runs the example at its default sizes.
func command(args []string) error {
	fs := cli.NewFlagSet("custom")
	out := fs.String("out", filepath.Join("results", "custom"), "directory for the two checkpoints (gd and tf)")
	seed := fs.Uint64("seed", 1, "seed of the task, the contexts, the models and the minibatch order")
	if err := cli.Parse(fs, args, func(w io.Writer) {
		fmt.Fprintln(w, "Usage: custom [-out DIR] [-seed S]\n\nFlags:")
		cli.PrintDefaults(fs, w)
	}); err != nil {
		return err
	}
	if err := cli.Validate(fs, cli.Rules{"out": cli.NonEmpty, "seed": cli.Any}); err != nil {
		return err
	}
	if err := cli.First(cli.OutDir("out", *out), cli.OutCheckpoints("out", filepath.Join(*out, "gd"), filepath.Join(*out, "tf"))); err != nil {
		return err
	}
	if err := run(os.Stdout, *out, *seed, 2048, 2048, 30); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "checkpoints: %s and %s\n", filepath.Join(*out, "gd"), filepath.Join(*out, "tf"))
	return nil
}

// run trains both models on L contexts, saves, reloads and evaluates them on M others.
func run(w io.Writer, out string, seed uint64, L, M, epochs int) error {
	task, err := data.NewSynthetic(data.DefaultSyntheticConfig(), seed) // C = 25, d' = 5, d = 10, N = 10
	if err != nil {
		return err
	}
	trainSet, err1 := task.Sample(L, rand.New(rand.NewPCG(seed, 1)))
	testSet, err2 := task.Sample(M, rand.New(rand.NewPCG(seed, 2)))
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	sg, err1 := graph.NewScope(graph.Float64, seed) // one scope (graph) per trained model
	st, err2 := graph.NewScope(graph.Float64, seed)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	c, fit := task.Config, train.FitConfig{Epochs: epochs, Seed: seed}
	kernel := layers.Sum(layers.RBF(1), layers.Scaled(0.1, layers.Linear())) // κ = rbf + β·linear, g and β learned
	gdModel, err1 := gd.NewModel(sg, gd.Config{D: c.D, DPrime: c.DPrime, C: c.C, N: c.N, Blocks: 2, Kernel: kernel}, 64)
	tfModel, err2 := tf.NewModel(st, tf.Config{D: c.D, DPrime: c.DPrime, C: c.C, N: c.N, Layers: 1}, 64) // 64 contexts a minibatch
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	gdMet, err := fitSaveLoad(gdModel, gd.Load, trainSet, testSet, fit, filepath.Join(out, "gd"))
	if err != nil {
		return err
	}
	tfMet, err := fitSaveLoad(tfModel, tf.Load, trainSet, testSet, fit, filepath.Join(out, "tf"))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "GD, 2 blocks, κ = rbf + β·linear: %v\nTrained TF, 1 layer:              %v\n", gdMet, tfMet)
	return err
}

// fitSaveLoad trains m, saves it in dir and reloads it with load; the reloaded model
// must predict exactly what m predicts. It returns the reloaded model's test metrics.
func fitSaveLoad[M interface {
	train.Model
	Save(dir string) error
}](m M, load func(dir string, batch int) (M, error), trainSet, testSet *data.Batch, fit train.FitConfig, dir string) (train.Metrics, error) {
	if err := train.Fit(m, trainSet, train.RunnerConfig{Optim: train.Config{LR: 1e-2}}, fit); err != nil {
		return train.Metrics{}, err
	}
	if err := m.Save(dir); err != nil {
		return train.Metrics{}, err
	}
	loaded, err := load(dir, m.BatchSize())
	if err != nil {
		return train.Metrics{}, err
	}
	want, err1 := train.Predict(m, testSet)
	got, err2 := train.Predict(loaded, testSet)
	if err := errors.Join(err1, err2); err != nil {
		return train.Metrics{}, err
	}
	if !slices.Equal(got, want) {
		return train.Metrics{}, fmt.Errorf("%s: the reloaded model's predictions differ from the trained model's", dir)
	}
	return train.Evaluate(loaded, testSet)
}
