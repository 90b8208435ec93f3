package gd_test

import (
	"fmt"

	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
)

// A GD language model at the paper's sizes (d' = 512, 8 heads, a context of
// 256 tokens; a 1,000-token vocabulary here to keep the example small): one
// step of functional GD with positional covariates predicts every next token
// of a window in one pass. Its attention parameters are each head's diagonal
// Λ_m and its d'×d' merge P_m (with LMConfig.DiagP, a diagonal P_m: the
// paper's "8K").
func ExampleNewLM() {
	s, err := graph.NewScope(graph.Float32, 1)
	if err != nil {
		panic(err)
	}
	m, err := gd.NewLM(s.Sub("gd"), gd.LMConfig{Vocab: 1000, DPrime: 512, Context: 256, Heads: 8}, gd.LMOptions{Batch: 2})
	if err != nil {
		panic(err)
	}
	for _, p := range m.Params()[:5] {
		fmt.Println(p.Name(), p.Shape())
	}
	attn, rest := m.NumParams()
	fmt.Println("attention", attn, "rest", rest)
	fmt.Println("logits", m.Logits.Shape())
	// Output:
	// gd/wte/w (1000, 512)
	// gd/wpe (257, 512)
	// gd/head0/lambda (512)
	// gd/head1/lambda (512)
	// gd/head2/lambda (512)
	// attention 2101248 rest 644608
	// logits (512, 1000)
}
