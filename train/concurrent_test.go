package train_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/gdattn/gdattn/train"
)

// TestConcurrentPredictOneModel: goroutines calling Predict and Evaluate
// (one-shot and through Runners) on one model get exactly the sequential
// results (run under -race too): the model's graph is used by one of them
// at a time. Separate models in separate goroutines keep running in
// parallel (TestConcurrentSeparateModels).
func TestConcurrentPredictOneModel(t *testing.T) {
	_, test := synthSets(t, 1, 24)
	m := newGD(t, 4)
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
	errs := make(chan error, 3*workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 3; i++ {
				got, err := train.Predict(m, test)
				if err != nil {
					errs <- err
					return
				}
				if !slices.Equal(got, want) {
					errs <- fmt.Errorf("worker %d: concurrent train.Predict differs from the sequential one", w)
					return
				}
				gotR, err := r.Predict(test)
				if err != nil {
					errs <- err
					return
				}
				if !slices.Equal(gotR, want) {
					errs <- fmt.Errorf("worker %d: concurrent Runner.Predict differs from the sequential one", w)
					return
				}
				gotM, err := train.Evaluate(m, test)
				if err != nil {
					errs <- err
					return
				}
				if gotM.Top1 != wantM.Top1 || gotM.NLL != wantM.NLL {
					errs <- fmt.Errorf("worker %d: concurrent Evaluate %v, sequential %v", w, gotM, wantM)
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
}

// TestConcurrentSeparateModels: separate models predict correctly in
// separate goroutines.
func TestConcurrentSeparateModels(t *testing.T) {
	_, test := synthSets(t, 1, 8)
	want, err := train.Predict(newGD(t, 4), test)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		m := newGD(t, 4)
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := train.Predict(m, test)
			if err == nil && !slices.Equal(got, want) {
				err = fmt.Errorf("model %d: differs", w)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
