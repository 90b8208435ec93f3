package gd_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/train"
)

// One functional GD step with the Gaussian likelihood (Appendix G) and the
// linear kernel is one linear self-attention layer (von Oswald et al.):
// trained on linear-regression contexts, the model learns the step α; its
// prediction at the query is f_1 = (α/N) Σ_i y_i x_iᵀx_q. (The optimal
// one-step rate over the task distribution is 1.52, examples/regression;
// 1024 training contexts put the learned one a little above it.)
func ExampleGaussian() {
	task, err := data.NewLinearRegression(data.LinearRegressionConfig{D: 10, DY: 1, N: 10})
	if err != nil {
		panic(err)
	}
	trainSet, _ := task.Sample(1024, rand.New(rand.NewPCG(1, 1)))
	testSet, _ := task.Sample(1024, rand.New(rand.NewPCG(1, 2)))

	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := gd.NewModel(s, gd.Config{D: 10, DPrime: 1, N: 10, Kernel: layers.Linear(), Likelihood: gd.Gaussian()}, 64)
	if err != nil {
		panic(err)
	}
	r, err := train.NewRunner(m, train.RunnerConfig{Optim: train.Config{LR: 1e-2}})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	if err := r.Fit(trainSet, train.FitConfig{Epochs: 20, Seed: 1}); err != nil {
		panic(err)
	}
	met, err := r.Evaluate(testSet)
	if err != nil {
		panic(err)
	}
	alpha, err := m.StepSize() // the learned α = exp(log_alpha)
	if err != nil {
		panic(err)
	}
	fmt.Println("parameters:", s.ParamNames())
	fmt.Printf("learned α %.1f, test MSE %.1f, Bayes error %.1f\n", alpha, met.MSE, met.Oracle)
	// Output:
	// parameters: [log_alpha]
	// learned α 1.6, test MSE 1.7, Bayes error 0.0
}
