package train_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
)

// TestConcurrentPredictOneRealModel is TestConcurrentPredictOneModel for
// the real-valued models (a Gaussian GD model and a tf.Regressor, fed
// through FeedReal): goroutines calling Predict and Evaluate on one model,
// one-shot and through a Runner, get exactly the sequential numbers.
func TestConcurrentPredictOneRealModel(t *testing.T) {
	const d, dy, N, batch = 3, 2, 5, 4
	task, err := data.NewLinearRegression(data.LinearRegressionConfig{D: d, DY: dy, N: N, Noise: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	test, err := task.Sample(22, rand.New(rand.NewPCG(3, 1))) // several minibatches, the last one padded
	if err != nil {
		t.Fatal(err)
	}
	models := map[string]func(s *graph.Scope) (train.Model, error){
		"gd gaussian": func(s *graph.Scope) (train.Model, error) {
			return gd.NewModel(s, gd.Config{D: d, DPrime: dy, N: N, Blocks: 2, Kernel: layers.Softmax(0.7), Likelihood: gd.Gaussian()}, batch)
		},
		"tf regressor": func(s *graph.Scope) (train.Model, error) {
			return tf.NewRegressor(s, tf.RegressorConfig{D: d, DY: dy, N: N, Layers: 2, Kernel: layers.Softmax(0.7), WInit: graph.Normal(0.3)}, batch)
		},
	}
	for name, build := range models {
		t.Run(name, func(t *testing.T) {
			s, err := graph.NewScope(graph.Float64, 1)
			if err != nil {
				t.Fatal(err)
			}
			m, err := build(s)
			if err != nil {
				t.Fatal(err)
			}
			want, err := train.Predict(m, test)
			if err != nil {
				t.Fatal(err)
			}
			wantM, err := train.Evaluate(m, test)
			if err != nil {
				t.Fatal(err)
			}
			r, err := train.NewRunner(m, train.RunnerConfig{EvalOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			const workers = 6
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 3; i++ {
						got, err := train.Predict(m, test)
						if err == nil && !slices.Equal(got, want) {
							err = fmt.Errorf("worker %d: concurrent train.Predict differs from the sequential one", w)
						}
						if err == nil {
							if got, err = r.Predict(test); err == nil && !slices.Equal(got, want) {
								err = fmt.Errorf("worker %d: concurrent Runner.Predict differs from the sequential one", w)
							}
						}
						if err == nil {
							var gotM train.Metrics
							if gotM, err = train.Evaluate(m, test); err == nil && gotM.MSE != wantM.MSE {
								err = fmt.Errorf("worker %d: concurrent Evaluate MSE %v, sequential %v", w, gotM.MSE, wantM.MSE)
							}
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}
