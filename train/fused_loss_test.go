package train_test

import (
	"math"
	"testing"

	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/ops"
	"github.com/gdattn/gdattn/train"
)

// TestRunnerCrossEntropyModel: the Runner trains a CrossEntropyModel on
// its own loss (gd.Model with FuseEncoder: one SoftmaxCrossEntropy op),
// and the epoch's mean loss equals the default model's within rounding.
func TestRunnerCrossEntropyModel(t *testing.T) {
	trainSet, _ := synthSets(t, 16, 1)
	var losses [2]float64
	for i, fuse := range []bool{false, true} {
		s, err := graph.NewScope(graph.Float64, 3)
		if err != nil {
			t.Fatal(err)
		}
		m, err := gd.NewModel(s, gd.Config{D: 10, DPrime: 5, C: 25, N: 10, Blocks: 1, FuseEncoder: fuse}, 8)
		if err != nil {
			t.Fatal(err)
		}
		var _ train.CrossEntropyModel = m
		r, err := train.NewRunner(m, train.RunnerConfig{Optim: train.Config{LR: 1e-2}})
		if err != nil {
			t.Fatal(err)
		}
		xent := 0
		for _, n := range s.Graph().AllNodes() {
			if _, ok := n.Op().(*ops.SoftmaxCrossEntropyOp); ok {
				xent++
			}
		}
		if want := map[bool]int{false: 0, true: 2}[fuse]; xent != want {
			t.Errorf("FuseEncoder %v: %d SoftmaxCrossEntropy nodes (loss and gradient), want %d", fuse, xent, want)
		}
		err = r.Fit(trainSet, train.FitConfig{Epochs: 1, Seed: 2, AfterEpoch: func(_ int, l float64) error {
			losses[i] = l
			return nil
		}})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if d := math.Abs(losses[1] - losses[0]); !(d <= 1e-12*math.Abs(losses[0])) {
		t.Errorf("mean loss %v with FuseEncoder, %v without", losses[1], losses[0])
	}
}
