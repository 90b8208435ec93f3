package tf_test

import (
	"fmt"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/tf"
)

// The one-layer GPT-2-style baseline at the paper's sizes (d' = 512, 8
// heads, context 256; a 1,000-token vocabulary here): W_Q, W_K, W_V and P
// hold 4·512² attention parameters.
func ExampleNewGPT() {
	s, err := graph.NewScope(graph.Float32, 1)
	if err != nil {
		panic(err)
	}
	m, err := tf.NewGPT(s.Sub("gpt"), tf.GPTConfig{Vocab: 1000, Context: 256, DModel: 512, Heads: 8}, tf.GPTOptions{Batch: 2})
	if err != nil {
		panic(err)
	}
	for _, p := range m.Params()[:7] {
		fmt.Println(p.Name(), p.Shape())
	}
	attn, rest := m.NumParams()
	fmt.Println("attention", attn, "rest", rest)
	fmt.Println("logits", m.Logits.Shape())
	// Output:
	// gpt/wte/w (1000, 512)
	// gpt/wpe (256, 512)
	// gpt/h0/ln_1/scale (512)
	// gpt/h0/ln_1/bias (512)
	// gpt/h0/attn/head0/wo (64, 512)
	// gpt/h0/attn/head0/wq (512, 64)
	// gpt/h0/attn/head0/wk (512, 64)
	// attention 1048576 rest 2745856
	// logits (512, 1000)
}
