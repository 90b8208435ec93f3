package data

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/tiktoken-go/tokenizer"
)

// GPT-2 token ids. The r50k_base vocabulary (GPT-2's byte-level BPE) has
// 50,257 ids, the last of which, 50256, is end-of-text; gdattn adds a pad id
// after it, for a model vocabulary of 50,258 ids (the paper's C = 50,257
// tokens plus padding).
const (
	GPT2EOT       = 50256
	GPT2Pad       = 50257
	GPT2VocabSize = 50258
)

// Text shown by Decode for the special ids.
const (
	UnkText = "<|unk|>"
	PadText = ""
)

// GPT2Tokenizer is GPT-2's r50k_base byte-level BPE tokeniser (the
// vocabulary is compiled into the binary; it works offline). Encode never
// produces the special ids: text is split on EOTText by the corpus reader,
// and NewTextData appends GPT2EOT after every story itself.
// Nothing is lost: every byte of a text reaches a token, so
// Decode(Encode(s)) == s for every valid UTF-8 s, and
// DecodeBytes(Encode(s)) == s for every string, valid UTF-8 or not.
// A GPT2Tokenizer is safe for concurrent use.
type GPT2Tokenizer struct {
	codec tokenizer.Codec // decodes, replacing invalid UTF-8 as Python does
	bpe   *bpeTables      // encodes (text_bpe.go)
}

// NewGPT2Tokenizer returns the r50k_base tokeniser.
func NewGPT2Tokenizer() (*GPT2Tokenizer, error) {
	c, err := tokenizer.Get(tokenizer.R50kBase)
	if err != nil {
		return nil, fmt.Errorf("data: GPT-2 tokenizer: %w", err)
	}
	c.SetErrorMode(tokenizer.ErrorModeReplace)
	bpe, err := loadR50k()
	if err != nil {
		return nil, err
	}
	return &GPT2Tokenizer{codec: c, bpe: bpe}, nil
}

// Encode returns the GPT-2 ids of text (EOTText in text is encoded as plain
// characters, not as GPT2EOT). Every byte is encoded, control characters
// such as U+007F and bytes that are not valid UTF-8 included; for valid
// UTF-8 the ids are those of GPT-2's own encoder (tiktoken's r50k_base).
func (t *GPT2Tokenizer) Encode(text string) ([]int, error) {
	if t == nil || t.bpe == nil {
		return nil, errors.New("data: GPT-2 tokenizer: not initialised (use NewGPT2Tokenizer)")
	}
	return t.bpe.encode(text, make([]int, 0, len(text)/4+1)), nil
}

// DecodeBytes returns the exact bytes of GPT-2 ids, without replacing
// invalid UTF-8 (a character cut between ids stays cut): GPT2EOT gives
// EOTText and GPT2Pad nothing. An id outside [0, GPT2VocabSize) is an error.
func (t *GPT2Tokenizer) DecodeBytes(ids []int) ([]byte, error) {
	if t == nil || t.bpe == nil {
		return nil, errors.New("data: GPT-2 tokenizer: not initialised (use NewGPT2Tokenizer)")
	}
	var out []byte
	for i, id := range ids {
		switch {
		case id < 0 || id >= GPT2VocabSize:
			return nil, fmt.Errorf("data: GPT-2 tokenizer: id %d at position %d is outside [0, %d)", id, i, GPT2VocabSize)
		case id == GPT2EOT:
			out = append(out, EOTText...)
		case id == GPT2Pad:
		default:
			out = append(out, t.bpe.pieces[id]...)
		}
	}
	return out, nil
}

// Decode returns the text of GPT-2 ids: GPT2EOT decodes to EOTText and
// GPT2Pad to PadText (nothing); byte sequences that are not valid UTF-8 (a
// character cut between tokens) become U+FFFD. An id outside
// [0, GPT2VocabSize) is an error.
func (t *GPT2Tokenizer) Decode(ids []int) (string, error) {
	if t == nil || t.codec == nil {
		return "", errors.New("data: GPT-2 tokenizer: not initialised (use NewGPT2Tokenizer)")
	}
	var b strings.Builder
	var run []uint
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		s, err := t.codec.Decode(run)
		if err != nil {
			return fmt.Errorf("data: GPT-2 tokenizer: %w", err)
		}
		b.WriteString(s)
		run = run[:0]
		return nil
	}
	for i, id := range ids {
		switch {
		case id < 0 || id >= GPT2VocabSize:
			return "", fmt.Errorf("data: GPT-2 tokenizer: id %d at position %d is outside [0, %d)", id, i, GPT2VocabSize)
		case id == GPT2EOT || id == GPT2Pad:
			if err := flush(); err != nil {
				return "", err
			}
			if id == GPT2EOT {
				b.WriteString(EOTText)
			}
		default:
			run = append(run, uint(id))
		}
	}
	if err := flush(); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Vocab maps GPT-2 ids to a model's ids and back. The full vocabulary is the
// identity on [0, GPT2VocabSize) (end-of-text 50256, pad 50257, no unknown
// id). A restricted vocabulary (NewRestrictedVocab) keeps only the tokens of
// the training split, so that the softmax over the vocabulary is small enough
// for CPU runs: model ids 0..K-1 are the kept GPT-2 ids in increasing order
// (end-of-text always among them), then Unk = K stands for every other
// token, and Pad = K+1.
type Vocab struct {
	gpt   []int       // model id -> GPT-2 id (-1 for Unk)
	index map[int]int // GPT-2 id -> model id (restricted only)
	Unk   int         // model id of unknown tokens; -1 in the full vocabulary
	EOT   int         // model id of end-of-text
	Pad   int         // model id of padding (never a training target)
}

// FullVocab returns the full GPT-2 vocabulary of GPT2VocabSize ids.
func FullVocab() *Vocab {
	return &Vocab{Unk: -1, EOT: GPT2EOT, Pad: GPT2Pad}
}

// NewRestrictedVocab returns the vocabulary of the GPT-2 ids that occur at
// least minCount times (minCount 0 or 1: at least once; negative is an
// error) in streams, plus
// end-of-text, unknown and pad.
func NewRestrictedVocab(streams [][]int, minCount int) (*Vocab, error) {
	if minCount < 0 {
		return nil, fmt.Errorf("data: restricted vocab: minCount = %d, want >= 0", minCount)
	}
	counts := map[int]int{}
	for _, s := range streams {
		for _, id := range s {
			// Text ids: the pad is not one, and never a kept id
			// (VocabFromGPTIDs takes the same range).
			if id < 0 || id >= GPT2Pad {
				return nil, fmt.Errorf("data: restricted vocab: GPT-2 id %d outside [0, %d)", id, GPT2Pad)
			}
			counts[id]++
		}
	}
	var kept []int
	for id, c := range counts {
		if id != GPT2EOT && c >= max(1, minCount) {
			kept = append(kept, id)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("data: restricted vocab: no token occurs minCount = %d times or more", minCount)
	}
	kept = append(kept, GPT2EOT)
	sort.Ints(kept)
	return VocabFromGPTIDs(kept)
}

// VocabFromGPTIDs rebuilds a restricted vocabulary from its kept GPT-2 ids
// ([Vocab.GPTIDs], as saved in a checkpoint): strictly increasing, within
// [0, GPT2Pad), including GPT2EOT.
func VocabFromGPTIDs(ids []int) (*Vocab, error) {
	v := &Vocab{index: make(map[int]int, len(ids))}
	hasEOT := false
	for i, id := range ids {
		if id < 0 || id >= GPT2Pad || (i > 0 && id <= ids[i-1]) {
			return nil, fmt.Errorf("data: vocab: GPT-2 ids must be strictly increasing in [0, %d); got %d at %d", GPT2Pad, id, i)
		}
		v.index[id] = i
		v.gpt = append(v.gpt, id)
		hasEOT = hasEOT || id == GPT2EOT
	}
	if !hasEOT {
		return nil, errors.New("data: vocab: the GPT-2 ids lack end-of-text (50256)")
	}
	v.EOT = v.index[GPT2EOT]
	v.Unk = len(ids)
	v.Pad = len(ids) + 1
	v.gpt = append(v.gpt, -1, GPT2Pad)
	return v, nil
}

// Restricted reports whether v is a restricted vocabulary.
func (v *Vocab) Restricted() bool { return v.index != nil }

// Size is the number of model ids (the C of the softmax).
func (v *Vocab) Size() int {
	if !v.Restricted() {
		return GPT2VocabSize
	}
	return len(v.gpt)
}

// GPTIDs returns the kept GPT-2 ids of a restricted vocabulary (nil for the
// full one), the list VocabFromGPTIDs takes.
func (v *Vocab) GPTIDs() []int {
	if !v.Restricted() {
		return nil
	}
	return append([]int(nil), v.gpt[:v.Unk]...)
}

// Encode maps GPT-2 ids to model ids; ids outside a restricted vocabulary
// become Unk. It returns the number of such unknown tokens.
func (v *Vocab) Encode(gpt []int) ([]int, int) {
	out := make([]int, len(gpt))
	unk := 0
	for i, id := range gpt {
		out[i] = id
		if v.Restricted() {
			m, ok := v.index[id]
			if !ok {
				m = v.Unk
				unk++
			}
			if id == GPT2Pad {
				m = v.Pad
			}
			out[i] = m
		}
	}
	return out, unk
}

// ToGPT maps model ids back to GPT-2 ids; Unk maps to -1. An id outside
// [0, Size()) is an error.
func (v *Vocab) ToGPT(ids []int) ([]int, error) {
	out := make([]int, len(ids))
	for i, id := range ids {
		if id < 0 || id >= v.Size() {
			return nil, fmt.Errorf("data: vocab: model id %d at position %d is outside [0, %d)", id, i, v.Size())
		}
		out[i] = id
		if v.Restricted() {
			out[i] = v.gpt[id]
		}
	}
	return out, nil
}

// TextCodec turns text into model ids and back: the GPT-2 tokeniser
// followed by a vocabulary.
type TextCodec struct {
	Tok   *GPT2Tokenizer
	Vocab *Vocab
}

// check returns an error unless c has a tokeniser and a vocabulary.
func (c *TextCodec) check() error {
	if c == nil || c.Tok == nil || c.Vocab == nil {
		return errors.New("data: TextCodec needs a Tok and a Vocab (see NewTextData)")
	}
	return nil
}

// Encode returns the model ids of text; tokens outside a restricted
// vocabulary become Vocab.Unk.
func (c *TextCodec) Encode(text string) ([]int, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	g, err := c.Tok.Encode(text)
	if err != nil {
		return nil, err
	}
	ids, _ := c.Vocab.Encode(g)
	return ids, nil
}

// EncodeStrict is Encode, but a token outside the vocabulary is an error
// that lists the unknown tokens (for prompts: a restricted vocabulary cannot
// represent them, and generating from <|unk|> is rarely what a user wants).
func (c *TextCodec) EncodeStrict(text string) ([]int, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	g, err := c.Tok.Encode(text)
	if err != nil {
		return nil, err
	}
	ids, unk := c.Vocab.Encode(g)
	if unk == 0 {
		return ids, nil
	}
	var bad []string
	for i, id := range ids {
		if id == c.Vocab.Unk {
			s, _ := c.Tok.Decode(g[i : i+1])
			bad = append(bad, fmt.Sprintf("%q", s))
		}
	}
	return nil, fmt.Errorf("data: %d token(s) of the text are not in the model's vocabulary of %d ids (restricted to the training split): %s",
		unk, c.Vocab.Size(), strings.Join(bad, " "))
}

// Decode returns the text of model ids: Unk decodes to UnkText, EOT to
// EOTText and Pad to nothing.
func (c *TextCodec) Decode(ids []int) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	g, err := c.Vocab.ToGPT(ids)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	start := 0
	for i := 0; i <= len(g); i++ {
		if i < len(g) && g[i] >= 0 {
			continue
		}
		s, err := c.Tok.Decode(g[start:i])
		if err != nil {
			return "", err
		}
		b.WriteString(s)
		if i < len(g) {
			b.WriteString(UnkText)
		}
		start = i + 1
	}
	return b.String(), nil
}
