package tf_test

import (
	"fmt"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/tf"
)

// A single-layer Trained TF on the low-dimensional task of Appendix F
// (d = 2, d' = 5, C = 20): every attention matrix, the kernel parameter,
// the readout R and W_e are trained.
func ExampleNewModel() {
	s, err := graph.NewScope(graph.Float64, 1)
	if err != nil {
		panic(err)
	}
	m, err := tf.NewModel(s.Sub("tf"), tf.Config{D: 2, DPrime: 5, C: 20, N: 100, Kernel: layers.Softmax(1)}, 64)
	if err != nil {
		panic(err)
	}
	for _, p := range m.Params() {
		fmt.Println(p.Name(), p.Shape())
	}
	n := m.NumParams()
	fmt.Println("attention", n.Attention, "other", n.Other)
	fmt.Println("logits", m.Logits.Shape())
	// Output:
	// tf/we (5, 20)
	// tf/layer0/head0/log_gamma ()
	// tf/layer0/head0/wq (12, 12)
	// tf/layer0/head0/wk (12, 12)
	// tf/layer0/head0/wv (12, 12)
	// tf/layer0/head0/wo (12, 12)
	// tf/readout/r (12, 5)
	// attention 577 other 160
	// logits (64, 20)
}
