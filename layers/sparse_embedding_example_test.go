package layers_test

import (
	"fmt"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/losses"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
)

// A token embedding for the GPT-2 vocabulary whose lookup gradient is
// scattered into a reused buffer (no (50258, 64) allocation per step), and
// the sparse-label cross-entropy of a language model's logits.
func ExampleNewSparseEmbedding() {
	s, err := graph.NewScope(graph.Float32, 1)
	if err != nil {
		panic(err)
	}
	e, err := layers.NewSparseEmbedding(s.Sub("wte"), layers.EmbeddingConfig{Vocab: 50258, Dim: 64})
	if err != nil {
		panic(err)
	}
	ids, _ := layers.NewIDs(s, "ids", 2, 8) // (B, T)
	x, err := e.Lookup(ids)                 // (B, T, 64)
	if err != nil {
		panic(err)
	}
	we, _ := e.We()                               // (64, 50258), tied output
	h := G.Must(ops.Reshape(x, []int{16, 64}))    // (B*T, 64)
	logits := G.Must(G.Mul(h, we))                // (B*T, 50258)
	targets, _ := layers.NewIDs(s, "targets", 16) // -1: not scored
	loss, err := losses.SparseSoftmaxCrossEntropy(logits, targets)
	if err != nil {
		panic(err)
	}
	fmt.Println(e.Weight().Name(), e.Weight().Shape())
	fmt.Println("lookup", x.Shape(), "logits", logits.Shape(), "loss", loss.Shape())
	// Output:
	// wte/w (50258, 64)
	// lookup (2, 8, 64) logits (16, 50258) loss ()
}
