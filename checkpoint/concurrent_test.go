package checkpoint

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/gdattn/gdattn/graph"
)

// TestSaveDuringTraining saves a model while another goroutine changes all
// its parameters step by step under the scope's lock, as train.Runner.Fit
// does: every checkpoint must hold the parameters of one step (all values
// equal to that step's number), and -race must stay silent.
func TestSaveDuringTraining(t *testing.T) {
	s, _ := killScope(t, 256, 1)
	params := s.Params()
	setStep := func(k int) {
		for _, p := range params {
			vals := make([]float64, p.Shape().TotalSize())
			for i := range vals {
				vals[i] = float64(k)
			}
			if err := graph.SetValue(p, vals); err != nil {
				t.Error(err)
			}
		}
	}
	setStep(0)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the trainer
		defer wg.Done()
		for k := 1; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			s.Lock()
			setStep(k)
			s.Unlock()
		}
	}()
	dir := filepath.Join(t.TempDir(), "ckpt")
	for i := range 20 {
		if err := Save(dir, s, modelConfig{D: i}, SaveOptions{}); err != nil {
			t.Fatal(err)
		}
		c, err := Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		step := -1.0
		for name, a := range c.Params {
			for j, v := range a.Float64s() {
				if step < 0 {
					step = v
				}
				if v != step {
					t.Fatalf("save %d: %s[%d] = %v, another parameter holds step %v: a mix of steps", i, name, j, v, step)
				}
			}
		}
	}
	close(stop)
	wg.Wait()
}
