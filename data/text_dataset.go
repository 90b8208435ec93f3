package data

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// TextDataConfig configures [NewTextData]. Zero fields mean the defaults.
type TextDataConfig struct {
	// Seed shuffles the stories before they are split.
	Seed uint64
	// ValidFrac and TestFrac are the fractions of stories held out for
	// validation and test (defaults 0.1 each; set a negative value for none).
	ValidFrac, TestFrac float64
	// Restrict builds a vocabulary of the tokens of the training split
	// (NewRestrictedVocab) instead of the full GPT-2 vocabulary.
	Restrict bool
	// MinCount, with Restrict, keeps only tokens seen at least MinCount times
	// in the training split (default 1); rarer tokens become Unk.
	MinCount int
}

// TextStory is one story: its text and its model ids, followed by the
// vocabulary's end-of-text id.
type TextStory struct {
	Text string
	IDs  []int
}

// TextData is a tokenised corpus split by story into training, validation
// and test sets, in model ids of Codec.Vocab.
type TextData struct {
	Codec               *TextCodec
	Train, Valid, Test  []TextStory
	TrainStream         []int // the training stories concatenated (each ends with EOT)
	ValidStream         []int
	TestStream          []int
	UnkTrain, UnkHeld   int // tokens mapped to Unk in the training / held-out splits
	Config              TextDataConfig
	NumStories, NumToks int // stories and tokens (EOTs included) in the corpus
}

// NewTextData tokenises stories with tok, splits them by story (a seeded
// shuffle; the split sizes are rounded, and every split of positive fraction
// gets at least one story when there are at least three stories), builds the
// vocabulary from the training split (cfg.Restrict) or takes the full one,
// and maps every story to model ids, appending end-of-text. Errors: no
// stories, invalid fractions, a negative MinCount, a MinCount no token
// reaches, more than MaxElements tokens, and fewer stories than non-empty
// splits.
func NewTextData(stories []string, tok *GPT2Tokenizer, cfg TextDataConfig) (*TextData, error) {
	if tok == nil {
		return nil, errors.New("data: text: tokenizer is nil")
	}
	if cfg.ValidFrac == 0 {
		cfg.ValidFrac = 0.1
	}
	if cfg.TestFrac == 0 {
		cfg.TestFrac = 0.1
	}
	cfg.ValidFrac, cfg.TestFrac = max(cfg.ValidFrac, 0), max(cfg.TestFrac, 0)
	if cfg.MinCount == 0 {
		cfg.MinCount = 1
	}
	if cfg.MinCount < 0 {
		return nil, fmt.Errorf("data: text: TextDataConfig.MinCount = %d, want >= 0 (0 means 1)", cfg.MinCount)
	}
	if math.IsNaN(cfg.ValidFrac+cfg.TestFrac) || cfg.ValidFrac+cfg.TestFrac >= 1 {
		return nil, fmt.Errorf("data: text: ValidFrac %v + TestFrac %v must be < 1", cfg.ValidFrac, cfg.TestFrac)
	}
	if len(stories) == 0 {
		return nil, errors.New("data: text: no stories")
	}
	tr, va, te, err := SplitIndices(len(stories), cfg.ValidFrac, cfg.TestFrac, cfg.Seed)
	if err != nil {
		return nil, err
	}
	gpt := make([][]int, len(stories))
	d := &TextData{Config: cfg, NumStories: len(stories)}
	for i, s := range stories {
		if gpt[i], err = tok.Encode(s); err != nil {
			return nil, fmt.Errorf("data: text: story %d: %w", i, err)
		}
		// The streams hold every token and an end-of-text per story.
		if d.NumToks, err = checkedSum("tokens of the stories (with end-of-text)", d.NumToks, len(gpt[i])+1); err != nil {
			return nil, fmt.Errorf("data: text: story %d: %w", i, err)
		}
	}
	vocab := FullVocab()
	if cfg.Restrict {
		train := make([][]int, len(tr))
		for i, j := range tr {
			train[i] = gpt[j]
		}
		if vocab, err = NewRestrictedVocab(train, cfg.MinCount); err != nil {
			return nil, fmt.Errorf("%w (TextDataConfig.MinCount = %d)", err, cfg.MinCount)
		}
	}
	d.Codec = &TextCodec{Tok: tok, Vocab: vocab}
	build := func(idx []int, unk *int) ([]TextStory, []int) {
		out := make([]TextStory, len(idx))
		var stream []int
		for k, j := range idx {
			ids, u := vocab.Encode(gpt[j])
			*unk += u
			ids = append(ids, vocab.EOT)
			out[k] = TextStory{Text: stories[j], IDs: ids}
			stream = append(stream, ids...)
		}
		return out, stream
	}
	d.Train, d.TrainStream = build(tr, &d.UnkTrain)
	d.Valid, d.ValidStream = build(va, &d.UnkHeld)
	d.Test, d.TestStream = build(te, &d.UnkHeld)
	return d, nil
}

// SplitIndices shuffles 0..n-1 with seed and cuts them into training,
// validation and test indices of about (1-v-t)·n, v·n and t·n stories
// (rounded; a positive fraction gets at least one story). The split is a
// function of (n, v, t, seed) only. Errors: n < 1 or above MaxElements,
// negative or NaN fractions, v + t >= 1, or too few stories for every
// non-empty split plus training.
func SplitIndices(n int, v, t float64, seed uint64) (train, valid, test []int, err error) {
	if n < 1 {
		return nil, nil, nil, fmt.Errorf("data: split: %d stories, want >= 1", n)
	}
	if err := checkedSize("n (stories)", n); err != nil {
		return nil, nil, nil, fmt.Errorf("data: split: %w", err)
	}
	if !(v >= 0) || !(t >= 0) || v+t >= 1 {
		return nil, nil, nil, fmt.Errorf("data: split: fractions valid %v, test %v: want >= 0 with sum < 1", v, t)
	}
	nv, nt := int(math.Round(v*float64(n))), int(math.Round(t*float64(n)))
	if v > 0 && nv == 0 {
		nv = 1
	}
	if t > 0 && nt == 0 {
		nt = 1
	}
	if nv+nt >= n {
		return nil, nil, nil, fmt.Errorf("data: split: %d stories cannot fill %d validation and %d test stories and leave training ones", n, nv, nt)
	}
	perm := rand.New(rand.NewPCG(seed, 0x5eed5b1175)).Perm(n)
	return perm[nv+nt:], perm[:nv], perm[nv : nv+nt], nil
}

// SampleWindows returns batch windows of length consecutive ids drawn from
// stream at uniformly random offsets, row-major (batch, length). The draw
// depends only on (seed, step), so training can resume at any step and see
// the same minibatches as an uninterrupted run. For a language model with
// context T, length is T+1: inputs are a window's first T ids and targets
// its last T. batch*length must not exceed MaxElements.
func SampleWindows(stream []int, batch, length int, seed uint64, step int) ([]int, error) {
	if batch < 1 || length < 1 {
		return nil, fmt.Errorf("data: windows: batch %d, length %d: want both >= 1", batch, length)
	}
	if step < 0 {
		return nil, fmt.Errorf("data: windows: step %d, want >= 0", step)
	}
	n, err := checkedProduct("batch*length", batch, length)
	if err != nil {
		return nil, fmt.Errorf("data: windows: %w", err)
	}
	if len(stream) < length {
		return nil, fmt.Errorf("data: windows: the stream has %d tokens, fewer than a window of %d (use a smaller context or a bigger corpus)", len(stream), length)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(step)))
	out := make([]int, 0, n)
	for b := 0; b < batch; b++ {
		o := rng.IntN(len(stream) - length + 1)
		out = append(out, stream[o:o+length]...)
	}
	return out, nil
}

// Window is one row of an evaluation pass: Inputs (T ids, padded with pad)
// and Targets (T ids, -1 where nothing is scored). Targets[j] is the id that
// follows Inputs[0..j].
type Window struct {
	Inputs, Targets []int
}

// StreamWindows cuts stream into consecutive windows for perplexity: every
// id after the first is scored exactly once, as the target of the window
// that holds it, with the context from its window's start (non-overlapping
// windows of T inputs, as nanoGPT's validation loss). The last window is
// padded with pad. The windows, 2T ids each, must not hold more than
// MaxElements ids in all.
func StreamWindows(stream []int, T, pad int) ([]Window, error) {
	if T < 1 {
		return nil, fmt.Errorf("data: windows: context %d, want >= 1", T)
	}
	if len(stream) < 2 {
		return nil, fmt.Errorf("data: windows: the stream has %d tokens, need at least 2", len(stream))
	}
	// ceil((len(stream)-1)/T) windows of 2T ids (inputs and targets).
	nw := (len(stream)-2)/T + 1
	if _, err := checkedProduct("windows*2*T", nw, 2, T); err != nil {
		return nil, fmt.Errorf("data: windows: %w", err)
	}
	out := make([]Window, 0, nw)
	for a := 0; a+1 < len(stream); a += T {
		w := newWindow(T, pad)
		for j := 0; j < T && a+j+1 < len(stream); j++ {
			w.Inputs[j] = stream[a+j]
			w.Targets[j] = stream[a+j+1]
		}
		out = append(out, w)
	}
	return out, nil
}

// ContinuationWindows returns the windows that score ids[from:] given
// everything before them, for a model of context T: each target is scored
// exactly once, with the whole prefix as context when it fits in T and
// otherwise with at least T/2 preceding ids (sliding windows, stride about
// T/2). from must be in [1, len(ids)), and the windows, 2T ids each, must
// not hold more than MaxElements ids in all.
func ContinuationWindows(ids []int, from, T, pad int) ([]Window, error) {
	if T < 2 {
		return nil, fmt.Errorf("data: windows: context %d, want >= 2", T)
	}
	if from < 1 || from >= len(ids) {
		return nil, fmt.Errorf("data: windows: first scored id %d outside [1, %d)", from, len(ids))
	}
	// The first window scores up to T targets and every later one at least
	// ceil(T/2), so there are at most 1 + ceil((len(ids)-from)/ceil(T/2))
	// windows of 2T ids.
	half := T - T/2
	nw := 1 + (len(ids)-from+half-1)/half
	if _, err := checkedProduct("windows*2*T", nw, 2, T); err != nil {
		return nil, fmt.Errorf("data: windows: %w", err)
	}
	var out []Window
	for next := from; next < len(ids); {
		// Window a holds inputs ids[a:a+T] and scores targets a+1..a+T.
		a := max(0, next-T/2-1)
		if next <= T {
			a = 0
		}
		w := newWindow(T, pad)
		for j := 0; j < T && a+j < len(ids); j++ {
			w.Inputs[j] = ids[a+j]
			if k := a + j + 1; k >= next && k < len(ids) {
				w.Targets[j] = ids[k]
			}
		}
		out = append(out, w)
		next = a + T + 1
	}
	return out, nil
}

func newWindow(T, pad int) Window {
	w := Window{Inputs: make([]int, T), Targets: make([]int, T)}
	for j := range w.Inputs {
		w.Inputs[j] = pad
		w.Targets[j] = -1
	}
	return w
}
