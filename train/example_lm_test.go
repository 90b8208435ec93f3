package train_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/train"
)

// tinyCorpus is a few KB of story text (in practice, data.ReadCorpus of a
// file such as TinyStories).
func tinyCorpus() []string {
	names := []string{"Lily", "Tom", "Mia", "Ben"}
	things := []string{"ball", "kite", "cat", "boat", "tree"}
	var stories []string
	for i := 0; i < 40; i++ {
		n, t := names[i%4], things[(i*3)%5]
		stories = append(stories, fmt.Sprintf("Once upon a time, there was a girl named %s. %s had a red %s. "+
			"One day, %s went to the park with the %s. %s was very happy.", n, n, t, n, t, n))
	}
	return stories
}

// A GD language model trained on a few KB of text through the library:
// the loop (train.LMTrainer: windows and targets, AdamW with warmup and
// cosine, clipping, validation perplexity, checkpoints), then the
// checkpoint, which holds the tokeniser's vocabulary, loaded as a
// generation graph and sampled from text.
func Example_languageModel() {
	tok, err := data.NewGPT2Tokenizer()
	if err != nil {
		panic(err)
	}
	ds, err := data.NewTextData(tinyCorpus(), tok, data.TextDataConfig{Seed: 1, ValidFrac: 0.1, TestFrac: 0.1, Restrict: true})
	if err != nil {
		panic(err)
	}
	s, err := graph.NewScope(graph.Float32, 1)
	if err != nil {
		panic(err)
	}
	m, err := gd.NewLM(s.Sub("gd"), gd.LMConfig{Vocab: ds.Codec.Vocab.Size(), DPrime: 16, Context: 16, Heads: 2}, gd.LMOptions{Batch: 8})
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "gdattn-lm")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ckpt := filepath.Join(dir, "ckpt")
	t, err := train.NewLMTrainer(m, train.LMConfig{Steps: 60, Warmup: 5, LR: 1e-2, MinLR: 1e-3, ClipNorm: 1, Seed: 1, Dir: ckpt})
	if err != nil {
		panic(err)
	}
	defer t.Close()
	before, err := t.Loss(ds.ValidStream, 0)
	if err != nil {
		panic(err)
	}
	if err := t.FitText(ds); err != nil { // 60 steps; the checkpoint is written at the end
		panic(err)
	}
	after, err := t.Loss(ds.ValidStream, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println("validation loss went down:", after < before)

	g, err := gd.LoadLM(ckpt, gd.LMOptions{Batch: 1, Next: true}) // the generation graph, with the codec
	if err != nil {
		panic(err)
	}
	out, err := train.GenerateText(g, "Once upon a time, there was a girl named", data.DecodeConfig{
		Strategy: data.DecodeSample, TopK: 5, Temperature: 0.8, MaxNew: 20, Seed: 1,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("generated text:", len(strings.TrimSpace(out.Text)) > 0, "ended by:", out.Reason == data.StoppedAtStop || out.Reason == data.StoppedMaxNew)
	// Output:
	// validation loss went down: true
	// generated text: true ended by: true
}
