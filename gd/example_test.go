package gd_test

import (
	"fmt"
	"os"
	"path/filepath"

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

// Save a GD model with a combined kernel and rebuild it from the checkpoint
// alone.
func ExampleLoad() {
	s, err := graph.NewScope(graph.Float64, 1)
	if err != nil {
		panic(err)
	}
	kern := layers.Sum(layers.RBF(0.5), layers.Scaled(0.3, layers.Linear()))
	m, err := gd.NewModel(s, gd.Config{D: 2, DPrime: 3, C: 4, N: 5, Blocks: 2, Kernel: kern}, 8)
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "gd-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if err := m.Save(filepath.Join(dir, "ckpt")); err != nil {
		panic(err)
	}
	l, err := gd.Load(filepath.Join(dir, "ckpt"), 16)
	if err != nil {
		panic(err)
	}
	fmt.Println(l.Scope().ParamNames(), l.Batch, l.Cfg.Kernel.Name())
	// Output:
	// [we log_alpha kernel/term0/log_gamma kernel/term1/beta] 16 sum
}
