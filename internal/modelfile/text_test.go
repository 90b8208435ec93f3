package modelfile

import (
	"strings"
	"testing"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph/npy"
)

func TestDecodeTextAndRun(t *testing.T) {
	in := `{"dtype": "float32", "gd_lm": {}, "text": {"tokenizer": "gpt2", "vocab": "restricted", "vocab_size": 5}, "run": {"steps": 3}}`
	h, _, err := Decode([]byte(in), "gd_lm")
	if err != nil || h.Text == nil || h.Text.VocabSize != 5 || string(h.Run) != `{"steps": 3}` {
		t.Fatalf("Decode = %+v, %v", h, err)
	}
	fam, h2, err := Peek([]byte(in))
	if err != nil || fam != "gd_lm" || h2.Text.Vocab != "restricted" {
		t.Errorf("Peek = %q, %+v, %v", fam, h2, err)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"dtype": "float32", "gd_lm": {}, "text": {"tokenizer": "bpe", "vocab": "full", "vocab_size": 50258}}`, `unknown tokenizer "bpe"`},
		{`{"dtype": "float32", "gd_lm": {}, "text": {"tokenizer": "gpt2", "vocab": "some", "vocab_size": 9}}`, `vocab "some"`},
		{`{"dtype": "float32", "gd_lm": {}, "text": {"tokenizer": "gpt2", "vocab": "full", "vocab_size": 9}}`, "50258"},
		{`{"dtype": "float32", "gd_lm": {}, "text": {"tokenizer": "gpt2", "vocab": "restricted", "vocab_size": 1}}`, "at least 3"},
		{`{"dtype": "float32", "gd_lm": {}, "text": {"tokenizer": "gpt2", "vocab": "full", "vocab_size": 50258, "x": 1}}`, `unknown key "x"`},
		{`{"dtype": "float32", "gd_lm": {}, "text": []}`, `key "text"`},
	} {
		if _, _, err := Decode([]byte(tc.in), "gd_lm"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%s) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
	if _, _, err := Peek([]byte(`{"dtype": "float32"}`)); err == nil || !strings.Contains(err.Error(), "holds no model") {
		t.Errorf("Peek without a model: %v", err)
	}
}

// TestCodec rebuilds a restricted vocabulary from its array, and refuses an
// inconsistent one.
func TestCodec(t *testing.T) {
	v, err := data.VocabFromGPTIDs([]int{3, 7, data.GPT2EOT})
	if err != nil {
		t.Fatal(err)
	}
	codec := &data.TextCodec{Vocab: v}
	arrays := TextArrays(codec)
	text := TextOf(codec)
	if text.Vocab != "restricted" || text.VocabSize != 5 || arrays[VocabArray] == nil {
		t.Fatalf("TextOf = %+v, arrays %v", text, arrays)
	}
	saved := func(tx *Text, extra map[string]*npy.Array) *Saved {
		return &Saved{Header: Header{Text: tx}, Checkpoint: &checkpoint.Checkpoint{Extra: extra}, pkg: "gd", dir: "ckpt"}
	}
	c, err := saved(text, arrays).Codec(5)
	if err != nil || c.Vocab.Size() != 5 || c.Vocab.EOT != 2 || c.Tok == nil {
		t.Fatalf("Codec = %+v, %v", c, err)
	}
	if c, err := saved(nil, nil).Codec(5); c != nil || err != nil {
		t.Errorf("no text: %v, %v", c, err)
	}
	bad := &npy.Array{Shape: []int{3}, Dtype: npy.Int64, I64: []int64{7, 3, data.GPT2EOT}}
	for _, tc := range []struct {
		name  string
		sv    *Saved
		vocab int
		want  string
	}{
		{"model size", saved(text, arrays), 6, "the model's vocabulary has 6"},
		{"no array", saved(text, nil), 5, "no array"},
		{"full with an array", saved(&Text{Tokenizer: "gpt2", Vocab: "full", VocabSize: 5}, arrays), 5, "full vocabulary"},
		{"unsorted", saved(text, map[string]*npy.Array{VocabArray: bad}), 5, "strictly increasing"},
		{"size", saved(&Text{Tokenizer: "gpt2", Vocab: "restricted", VocabSize: 6}, arrays), 6, "has 5 ids"},
	} {
		if _, err := tc.sv.Codec(tc.vocab); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
}
