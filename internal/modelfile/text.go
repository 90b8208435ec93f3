package modelfile

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/npy"
	"github.com/gdattn/gdattn/internal/strictjson"
)

// A language model's checkpoint may hold, besides the model's config, the
// text codec that turns text into its ids and back, under the key "text":
//
//	"text": {"tokenizer": "gpt2", "vocab": "restricted", "vocab_size": 3237}
//
// "tokenizer" names the tokeniser ("gpt2": GPT-2's r50k_base byte-level BPE,
// data.NewGPT2Tokenizer, the only one so far); "vocab" is "full" (the GPT-2
// ids themselves, data.FullVocab, 50,258 ids with the pad) or "restricted"
// (data.VocabFromGPTIDs of the kept GPT-2 ids, which the checkpoint holds as
// the extra int64 array [VocabArray]); "vocab_size" is the number of model
// ids, which must equal the model's vocabulary.
//
// A training program may store its own settings under "run" (any JSON
// value; the Load functions ignore it): examples/language keeps its data and
// training settings there, so that a checkpoint can be resumed.

// Tokenizer names.
const TokenizerGPT2 = "gpt2"

// VocabArray is the name of the extra array of a restricted vocabulary's
// kept GPT-2 ids (int64, strictly increasing).
const VocabArray = "vocab/gpt_ids"

// Text is the "text" object of a language model's config.
type Text struct {
	Tokenizer string `json:"tokenizer"`
	Vocab     string `json:"vocab"` // "full" or "restricted"
	VocabSize int    `json:"vocab_size"`
}

// TextOf describes codec c; nil for nil.
func TextOf(c *data.TextCodec) *Text {
	if c == nil || c.Vocab == nil {
		return nil
	}
	t := &Text{Tokenizer: TokenizerGPT2, Vocab: "full", VocabSize: c.Vocab.Size()}
	if c.Vocab.Restricted() {
		t.Vocab = "restricted"
	}
	return t
}

// TextArrays returns the extra arrays that hold codec c's vocabulary: the
// kept GPT-2 ids of a restricted vocabulary, none for the full one or nil.
func TextArrays(c *data.TextCodec) map[string]*npy.Array {
	if c == nil || c.Vocab == nil || !c.Vocab.Restricted() {
		return nil
	}
	ids := c.Vocab.GPTIDs()
	a := &npy.Array{Shape: []int{len(ids)}, Dtype: npy.Int64, I64: make([]int64, len(ids))}
	for i, id := range ids {
		a.I64[i] = int64(id)
	}
	return map[string]*npy.Array{VocabArray: a}
}

// MarshalLM is [Marshal] for a language model that may carry a text codec:
// the config object holds its "text" object when c is not nil.
func MarshalLM(pkg, family string, s *graph.Scope, cfg any, c *data.TextCodec) (json.RawMessage, error) {
	body, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: save: %w", pkg, err)
	}
	return Encode(family, Header{Dtype: s.Dtype().String(), Scope: s.Path(), Text: TextOf(c)}, body)
}

// WithRun returns the config object cfg with run stored under "run"
// (replacing any), for a training program's checkpoints.
func WithRun(cfg json.RawMessage, run any) (json.RawMessage, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(cfg, &keys); err != nil || keys == nil {
		return nil, fmt.Errorf("config: want an object, got %s", clip(cfg))
	}
	r, err := json.Marshal(run)
	if err != nil {
		return nil, fmt.Errorf("config: run: %w", err)
	}
	keys["run"] = r
	return json.Marshal(keys)
}

// checkText checks a decoded "text" object.
func checkText(t *Text) error {
	switch {
	case t.Tokenizer != TokenizerGPT2:
		return fmt.Errorf("config: key \"text\": unknown tokenizer %q (want %q)", t.Tokenizer, TokenizerGPT2)
	case t.Vocab != "full" && t.Vocab != "restricted":
		return fmt.Errorf("config: key \"text\": vocab %q, want \"full\" or \"restricted\"", t.Vocab)
	case t.Vocab == "full" && t.VocabSize != data.GPT2VocabSize:
		return fmt.Errorf("config: key \"text\": a full GPT-2 vocabulary has %d ids, not %d", data.GPT2VocabSize, t.VocabSize)
	case t.VocabSize < 3:
		return fmt.Errorf("config: key \"text\": vocab_size %d, want at least 3", t.VocabSize)
	}
	return nil
}

// Codec rebuilds the text codec the checkpoint holds (nil, nil if it holds
// none) and checks that its vocabulary has vocab ids, the model's.
func (sv *Saved) Codec(vocab int) (*data.TextCodec, error) {
	t := sv.Header.Text
	if t == nil {
		return nil, nil
	}
	if t.VocabSize != vocab {
		return nil, sv.Errorf(fmt.Errorf("config: key \"text\": vocab_size %d, the model's vocabulary has %d ids", t.VocabSize, vocab))
	}
	v := data.FullVocab()
	a, ok := sv.Checkpoint.Extra[VocabArray]
	switch {
	case t.Vocab == "restricted" && !ok:
		return nil, sv.Errorf(fmt.Errorf("config: key \"text\": a restricted vocabulary, but the checkpoint has no array %q", VocabArray))
	case t.Vocab == "full" && ok:
		return nil, sv.Errorf(fmt.Errorf("config: key \"text\": a full vocabulary, but the checkpoint has an array %q", VocabArray))
	case ok:
		if a.Dtype != npy.Int64 || len(a.Shape) != 1 {
			return nil, sv.Errorf(fmt.Errorf("array %q: %s of shape %v, want a vector of int64", VocabArray, a.Dtype, a.Shape))
		}
		ids := make([]int, len(a.I64))
		for i, x := range a.I64 {
			if x < 0 || x >= data.GPT2VocabSize {
				return nil, sv.Errorf(fmt.Errorf("array %q: GPT-2 id %d at %d is outside [0, %d)", VocabArray, x, i, data.GPT2VocabSize))
			}
			ids[i] = int(x)
		}
		var err error
		if v, err = data.VocabFromGPTIDs(ids); err != nil {
			return nil, sv.Errorf(fmt.Errorf("array %q: %w", VocabArray, err))
		}
	}
	if v.Size() != t.VocabSize {
		return nil, sv.Errorf(fmt.Errorf("config: key \"text\": vocab_size %d, the vocabulary in the checkpoint has %d ids", t.VocabSize, v.Size()))
	}
	tok, err := data.NewGPT2Tokenizer()
	if err != nil {
		return nil, err
	}
	return &data.TextCodec{Tok: tok, Vocab: v}, nil
}

// Peek decodes the config object data of a checkpoint holding a model of
// any family and returns that family's key and the header.
func Peek(data []byte) (string, Header, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil || keys == nil {
		return "", Header{}, fmt.Errorf("config: want an object {\"dtype\": ..., \"<family>\": {...}}, got %s", clip(data))
	}
	for k := range keys {
		if _, ok := Families[k]; ok {
			h, _, err := Decode(data, k)
			return k, h, err
		}
	}
	return "", Header{}, fmt.Errorf("config: holds no model (none of the keys %s)", familyKeys())
}

func familyKeys() string {
	var ks []string
	for k := range Families {
		ks = append(ks, fmt.Sprintf("%q", k))
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// DecodeRun decodes a "run" object strictly into v.
func DecodeRun(raw json.RawMessage, v any) error { return strictjson.Decode(raw, v) }
