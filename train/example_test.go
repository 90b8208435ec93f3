package train_test

import (
	"fmt"
	"os"
	"path/filepath"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/train"
)

// Fit w to minimise sum((x·w - y)^2) over one fixed minibatch, then
// checkpoint the result with the optimiser state.
func ExampleTrainer() {
	s, _ := graph.NewScope(graph.Float64, 1)
	w, _ := s.Sub("lin").Param("w", tensor.Shape{2, 1}, graph.Zeros())
	x, _ := s.Input("x", tensor.Shape{3, 2}) // (B, D)
	y, _ := s.Input("y", tensor.Shape{3, 1})
	loss := G.Must(G.Sum(G.Must(G.Square(G.Must(G.Sub(G.Must(G.Mul(x, w)), y))))))

	m, err := graph.NewMachine(s, loss, graph.MachineOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	tr, err := train.NewTrainer(m, train.Config{LR: 0.1, Schedule: train.StepDecay(0.1, 100, 0.5)})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The minibatch: y = x·(2, -1).
	_ = graph.SetValue(x, []float64{1, 0, 0, 1, 1, 1})
	_ = graph.SetValue(y, []float64{2, -1, 1})
	var l float64
	for i := 0; i < 500; i++ {
		if l, err = tr.Step(); err != nil {
			fmt.Println(err)
			return
		}
	}
	wv, _ := graph.Values(w)
	fmt.Printf("%s after %d steps: loss < 1e-12: %v, w = (%.3f, %.3f)\n", w.Name(), tr.StepCount(), l < 1e-12, wv[0], wv[1])

	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	// Parameters, optimiser state and the model config, in one checkpoint.
	if err := tr.Save(filepath.Join(dir, "ckpt"), map[string]int{"d": 2}, nil); err != nil {
		fmt.Println(err)
		return
	}
	c, err := checkpoint.Read(filepath.Join(dir, "ckpt"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Manifest.Params[0].File, c.Manifest.Optim.Moments[0].M, c.Optim.Step)
	// Output:
	// lin/w after 500 steps: loss < 1e-12: true, w = (2.000, -1.000)
	// lin__w.npy optim/m/lin__w.npy 500
}
