package gd_test

import (
	"fmt"

	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
)

// A 2-block GD model (two exact functional-GD steps) on the synthetic task's
// sizes, and the parameters it learns: W_e, the step α and the kernel's g.
func ExampleNewModel() {
	s, err := graph.NewScope(graph.Float64, 1)
	if err != nil {
		panic(err)
	}
	m, err := gd.NewModel(s.Sub("gd"), gd.Config{D: 10, DPrime: 5, C: 25, N: 10, Blocks: 2, Kernel: layers.Softmax(1)}, 64)
	if err != nil {
		panic(err)
	}
	for _, p := range m.Params() {
		fmt.Println(p.Name(), p.Shape())
	}
	fmt.Println("logits", m.Logits.Shape())
	// Output:
	// gd/we (5, 25)
	// gd/log_alpha ()
	// gd/kernel/log_gamma ()
	// logits (64, 25)
}
