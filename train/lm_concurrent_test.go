package train

import (
	"path/filepath"
	"sync"
	"testing"
)

// TestLMConcurrentSaveDuringFit saves the model and scores text from other
// goroutines while LMTrainer.Fit trains it (run under -race): the training
// step, the scoring and the save each hold the model's lock.
func TestLMConcurrentSaveDuringFit(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: training")
	}
	ds := storyData(t)
	f := lmFamilies[0]
	tr, err := NewLMTrainer(newLM(t, f, ds, 4, false), LMConfig{Steps: 12, Warmup: 2, LR: 3e-3, Seed: 5, Pad: ds.Codec.Vocab.Pad, Run: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Model().SetTextCodec(ds.Codec); err != nil { // FitText's setup, before the goroutines
		t.Fatal(err)
	}
	dir := t.TempDir()
	done := make(chan error, 1)
	go func() { done <- tr.Fit(ds.TrainStream, ds.ValidStream) }()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for _, job := range []func() error{
		func() error { return tr.Save(filepath.Join(dir, "ckpt")) },
		func() error { _, err := tr.Loss(ds.ValidStream, 1); return err },
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				if err := job(); err != nil {
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
	var run map[string]any
	if _, step, err := ReadRun(filepath.Join(dir, "ckpt"), &run); err != nil || step < 0 || step > 12 {
		t.Errorf("ReadRun: step %d, %v", step, err)
	}
}
