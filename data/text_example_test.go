package data_test

import (
	"fmt"

	"github.com/gdattn/gdattn/data"
)

// Stories from a plain-text corpus, GPT-2 tokens, and a vocabulary
// restricted to the training split.
func ExampleNewTextData() {
	corpus := "Once upon a time, there was a cat.\n\nThe cat liked milk.\n\n" +
		"Once upon a time, a dog ran.<|endoftext|>Once upon a time, a cat ran."
	stories, err := data.ParseStories(corpus, data.CorpusConfig{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d stories: %q\n", len(stories), stories)

	tok, err := data.NewGPT2Tokenizer()
	if err != nil {
		panic(err)
	}
	ds, err := data.NewTextData(stories, tok, data.TextDataConfig{Seed: 1, ValidFrac: -1, TestFrac: -1, Restrict: true})
	if err != nil {
		panic(err)
	}
	v := ds.Codec.Vocab
	fmt.Println("vocabulary", v.Size(), "ids; end-of-text", v.EOT, "unknown", v.Unk, "pad", v.Pad)
	ids, _ := ds.Codec.Encode("Once upon a time, a fox ran.")
	text, _ := ds.Codec.Decode(ids)
	fmt.Println(text)
	// Output:
	// 2 stories: ["Once upon a time, there was a cat.\n\nThe cat liked milk.\n\nOnce upon a time, a dog ran." "Once upon a time, a cat ran."]
	// vocabulary 18 ids; end-of-text 15 unknown 16 pad 17
	// Once upon a time, a<|unk|> ran.
}
