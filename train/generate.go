package train

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/kvcache"
	G "gorgonia.org/gorgonia"
)

// Generator continues token sequences with an [LM] generation graph (built
// with Next, e.g. gd.LoadLM(dir, gd.LMOptions{Batch: 1, Next: true}) or
// m.Rebuild of a trained model): greedy decoding, sampling (temperature,
// top-k) and beam search, as data.Generate does them. Contexts longer than
// the model's window are cropped to their last ContextLen ids.
//
// Models with an incremental decoder (gd.LM and tf.GPT: a NewDecoder
// method, see package kvcache) decode on a cache: NewGenerator snapshots
// the parameter values, and [Generator.Next] keeps, for every context it
// answered, a row caching what its positions contribute. A context that
// extends a cached one by one id (what greedy, sampled and beam decoding
// ask at every step) costs that one position; a beam that branches copies
// its parent's row; any other context is computed from its ids, all of
// them in one batch. When a context outgrows the window, the crop moves
// every position: the GD LM with one step (or MeanE) drops its oldest
// cached value, others (the GPT, the GD LM with Steps > 1) recompute the
// window, one forward pass over ContextLen positions per new id. The
// logits are those of the full recompute within rounding (1e-12 relative
// in float64). The snapshot does not follow later training: make a new
// Generator after training further. Other models, and
// [GeneratorOptions].Recompute, run the generation graph BatchSize
// contexts at a time for every new id, holding the model's scope lock.
//
// Several goroutines may each use their own Generator over one model. A
// Generator serves one call at a time: a call made while another is in
// progress returns an error.
type Generator struct {
	m   LM
	pad int
	// busy is set while a call runs: a concurrent call is refused.
	busy atomic.Bool

	// The cached path.
	dec   kvcache.Decoder
	cache map[uint64][]cachedRow

	// The full recompute.
	next *G.Node
	mc   *graph.Machine
}

// cachedRow is a decoder row and the whole context (uncropped) it answers.
type cachedRow struct {
	ctx []int
	row kvcache.Row
}

// GeneratorOptions are the options of [NewGeneratorOptions].
type GeneratorOptions struct {
	// Recompute runs the generation graph over the whole (cropped) context
	// for every new id instead of the model's incremental decoder: the
	// reference the cache is tested against.
	Recompute bool
}

// NewGenerator returns a generator over m, a generation graph, decoding
// on a cache when the model has an incremental decoder (see [Generator]).
func NewGenerator(m LM) (*Generator, error) { return NewGeneratorOptions(m, GeneratorOptions{}) }

// NewGeneratorOptions is [NewGenerator] with options.
func NewGeneratorOptions(m LM, opts GeneratorOptions) (*Generator, error) {
	if m == nil {
		return nil, errors.New("train: generate: model is nil")
	}
	if !m.Generates() {
		return nil, errors.New("train: generate: the model is a training graph; build a generation graph (gd.LMOptions.Next, tf.GPTOptions.Next, or the model's Rebuild)")
	}
	_, _, next := m.LMOutputs()
	if m.Scope() == nil || next == nil {
		return nil, errors.New("train: generate: the model has no scope or next-token logits")
	}
	g := &Generator{m: m, next: next}
	if c := m.TextCodec(); c != nil && c.Vocab != nil {
		g.pad = c.Vocab.Pad
	}
	if d, ok := m.(interface {
		NewDecoder() (kvcache.Decoder, error)
	}); ok && !opts.Recompute {
		dec, err := d.NewDecoder()
		if err != nil {
			return nil, fmt.Errorf("train: generate: %w", err)
		}
		g.dec, g.cache = dec, map[uint64][]cachedRow{}
		return g, nil
	}
	s := m.Scope()
	s.Lock()
	defer s.Unlock()
	mc, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{next}})
	if err != nil {
		return nil, fmt.Errorf("train: generate: %w", err)
	}
	g.mc = mc
	return g, nil
}

// Cached reports whether g decodes on a cache (see [Generator]).
func (g *Generator) Cached() bool { return g.dec != nil }

// Close releases the machine and the cache.
func (g *Generator) Close() error {
	if !g.busy.CompareAndSwap(false, true) {
		return errInUse
	}
	defer g.busy.Store(false)
	g.cache = map[uint64][]cachedRow{}
	if g.mc == nil {
		return nil
	}
	return g.mc.Close()
}

var errInUse = errors.New("train: generate: the Generator is in use by another goroutine (a Generator serves one call at a time: give each goroutine its own)")

// Next returns the logits of the token after each context (a
// data.NextFunc); see [Generator] for how contexts are cropped, cached and
// batched.
func (g *Generator) Next(contexts [][]int) ([][]float64, error) {
	if !g.busy.CompareAndSwap(false, true) {
		return nil, errInUse
	}
	defer g.busy.Store(false)
	V := g.m.VocabSize()
	for i, c := range contexts {
		if len(c) == 0 {
			return nil, fmt.Errorf("train: generate: context %d is empty", i)
		}
		for _, id := range c {
			if id < 0 || id >= V {
				return nil, fmt.Errorf("train: generate: id %d of context %d is outside [0, %d)", id, i, V)
			}
		}
	}
	if g.dec != nil {
		return g.nextCached(contexts)
	}
	return g.nextFull(contexts)
}

// hashIDs is FNV-1a over ids.
func hashIDs(ids []int) uint64 {
	h := uint64(14695981039346656037)
	for _, id := range ids {
		for x := uint64(id); ; x >>= 8 {
			h ^= x & 0xff
			h *= 1099511628211
			if x < 0x100 {
				break
			}
		}
		h ^= 0xff
		h *= 1099511628211
	}
	return h
}

// nextCached extends, for each context, the cached row of the context
// minus its last id (copying it when another context already took it), or
// starts a row; all rows run in one Append, and the new rows replace the
// cache.
func (g *Generator) nextCached(contexts [][]int) ([][]float64, error) {
	n, V := len(contexts), g.dec.VocabSize()
	rows := make([]kvcache.Row, n)
	chunks := make([][]int, n)
	logits := make([][]float64, n)
	taken := map[kvcache.Row]bool{}
	for i, c := range contexts {
		logits[i] = make([]float64, V)
		parent := c[:len(c)-1]
		var found kvcache.Row
		for _, e := range g.cache[hashIDs(parent)] {
			if slices.Equal(e.ctx, parent) {
				found = e.row
				break
			}
		}
		switch {
		case found == nil:
			rows[i], chunks[i] = g.dec.NewRow(), c
			if T := g.dec.ContextLen(); len(c) > T {
				chunks[i] = c[len(c)-T:]
			}
		case taken[found]:
			rows[i], chunks[i] = found.Clone(), c[len(c)-1:]
		default:
			taken[found] = true
			rows[i], chunks[i] = found, c[len(c)-1:]
		}
	}
	g.cache = map[uint64][]cachedRow{} // on error nothing stays cached
	if err := g.dec.Append(rows, chunks, logits); err != nil {
		return nil, fmt.Errorf("train: generate: %w", err)
	}
	for i, c := range contexts {
		h := hashIDs(c)
		g.cache[h] = append(g.cache[h], cachedRow{ctx: append([]int(nil), c...), row: rows[i]})
	}
	return logits, nil
}

// nextFull runs the generation graph on the cropped, left-aligned, padded
// contexts, BatchSize at a time, with the model's scope locked.
func (g *Generator) nextFull(contexts [][]int) ([][]float64, error) {
	if g.mc == nil {
		return nil, errors.New("train: generate: the Generator is closed")
	}
	s := g.m.Scope()
	s.Lock()
	defer s.Unlock()
	T, B, V := g.m.ContextLen(), g.m.BatchSize(), g.m.VocabSize()
	out := make([][]float64, 0, len(contexts))
	for lo := 0; lo < len(contexts); lo += B {
		ids := make([]int, B*T)
		lengths := make([]int, B)
		for i := range ids {
			ids[i] = g.pad
		}
		for b := 0; b < B; b++ {
			lengths[b] = 1
			if lo+b >= len(contexts) {
				continue
			}
			c := contexts[lo+b]
			if len(c) > T {
				c = c[len(c)-T:]
			}
			copy(ids[b*T:], c)
			lengths[b] = len(c)
		}
		if err := g.m.FeedNext(ids, lengths); err != nil {
			return nil, err
		}
		if err := g.mc.Run(); err != nil {
			return nil, fmt.Errorf("train: generate: %w", err)
		}
		vals, err := graph.Values(g.next)
		if err != nil {
			return nil, err
		}
		if len(vals) != B*V {
			return nil, fmt.Errorf("train: generate: %d logits, want %d×%d", len(vals), B, V)
		}
		for b := 0; b < B && lo+b < len(contexts); b++ {
			out = append(out, vals[b*V:(b+1)*V])
		}
	}
	return out, nil
}

// Generate continues every prompt (model ids) with up to cfg.MaxNew ids and
// returns the generated ids only; see data.Generate for cfg (strategy,
// temperature, top-k, beams, seed, stop, forbidden ids) and
// [Generator.Decode] for why each generation ended. The zero cfg.Stop is
// the model's end-of-text when it has a text codec (no stop id otherwise);
// data.StopNever() generates exactly MaxNew ids, data.StopAt(id) stops
// after id.
func (g *Generator) Generate(prompts [][]int, cfg data.DecodeConfig) ([][]int, error) {
	return data.Generate(g.Next, prompts, g.withStop(cfg))
}

// Decode is [Generator.Generate] that also says, per prompt, why generation
// ended (data.Generation.Reason: the stop id, or MaxNew ids).
func (g *Generator) Decode(prompts [][]int, cfg data.DecodeConfig) ([]data.Generation, error) {
	return data.Decode(g.Next, prompts, g.withStop(cfg))
}

// withStop resolves the default cfg.Stop to the model's end-of-text.
func (g *Generator) withStop(cfg data.DecodeConfig) data.DecodeConfig {
	if c := g.m.TextCodec(); c != nil && c.Vocab != nil {
		cfg.Stop = cfg.Stop.Or(data.StopAt(c.Vocab.EOT))
	}
	return cfg
}

// TextGeneration is the result of [Generator.GenerateText]: the
// continuation's text and why generation ended. It prints as its Text.
type TextGeneration struct {
	// Text is the continuation, without the prompt and without an
	// end-of-text that ended it (so it is "" when the model ends the text
	// at once: Reason then says so).
	Text string
	// Tokens is the number of ids generated, an end-of-text that ended the
	// generation included.
	Tokens int
	// Reason is why generation ended: data.StoppedAtStop (the stop id, by
	// default end-of-text) or data.StoppedMaxNew (MaxNew ids).
	Reason data.StopReason
	// Unknown is the number of prompt pieces outside the model's vocabulary
	// that DecodeConfig.Unknown skipped or mapped to the unknown id (0 under
	// the default, which refuses them).
	Unknown int
}

// String returns t.Text.
func (t TextGeneration) String() string { return t.Text }

// GenerateText encodes prompt with the model's text codec, continues it as
// [Generator.Generate] does (the pad and unknown ids forbidden; Stop by
// default end-of-text, which data.StopNever() turns off to generate exactly
// MaxNew ids) and returns the continuation's text with why it ended. A
// prompt piece outside a restricted vocabulary is an error unless
// cfg.Unknown is data.UnknownSkip (drop it) or data.UnknownMap (the
// unknown id).
func (g *Generator) GenerateText(prompt string, cfg data.DecodeConfig) (TextGeneration, error) {
	c := g.m.TextCodec()
	if c == nil {
		return TextGeneration{}, errors.New("train: generate: the model has no text codec (SetTextCodec, or load a checkpoint that holds one)")
	}
	ids, unknown, err := c.EncodePrompt(prompt, cfg.Unknown)
	if err != nil {
		if cfg.Unknown == "" || cfg.Unknown == data.UnknownRefuse {
			return TextGeneration{}, fmt.Errorf("train: generate: %w (DecodeConfig.Unknown: data.UnknownSkip drops them, data.UnknownMap maps them to the unknown id)", err)
		}
		return TextGeneration{}, fmt.Errorf("train: generate: %w", err)
	}
	if len(ids) == 0 {
		if unknown > 0 {
			return TextGeneration{}, fmt.Errorf("train: generate: the prompt is empty once its %d unknown piece(s) are skipped", unknown)
		}
		return TextGeneration{}, errors.New("train: generate: the prompt is empty")
	}
	out, err := g.Decode([][]int{ids}, TextDecodeConfig(c, cfg))
	if err != nil {
		return TextGeneration{}, err
	}
	o := out[0]
	res := TextGeneration{Tokens: len(o.IDs), Reason: o.Reason, Unknown: unknown}
	gen := o.IDs
	if o.Reason == data.StoppedAtStop && len(gen) > 0 && gen[len(gen)-1] == c.Vocab.EOT {
		gen = gen[:len(gen)-1]
	}
	if res.Text, err = c.Decode(gen); err != nil {
		return TextGeneration{}, err
	}
	return res, nil
}

// TextDecodeConfig returns cfg with the default Stop resolved to c's
// end-of-text id (an explicit Stop, data.StopNever() included, is kept)
// and c's pad and unknown ids added to Forbid: what generating text needs.
func TextDecodeConfig(c *data.TextCodec, cfg data.DecodeConfig) data.DecodeConfig {
	v := c.Vocab
	cfg.Stop = cfg.Stop.Or(data.StopAt(v.EOT))
	cfg.Forbid = append(append([]int(nil), cfg.Forbid...), v.Pad)
	if v.Unk >= 0 {
		cfg.Forbid = append(cfg.Forbid, v.Unk)
	}
	return cfg
}

// Generate continues prompts with m (a generation graph) as
// [Generator.Generate] does, compiling a machine for the call.
func Generate(m LM, prompts [][]int, cfg data.DecodeConfig) (_ [][]int, err error) {
	g, err := NewGenerator(m)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, g.Close()) }()
	return g.Generate(prompts, cfg)
}

// GenerateText continues prompt with m (a generation graph with a text
// codec) as [Generator.GenerateText] does, compiling a machine for the call.
func GenerateText(m LM, prompt string, cfg data.DecodeConfig) (_ TextGeneration, err error) {
	g, err := NewGenerator(m)
	if err != nil {
		return TextGeneration{}, err
	}
	defer func() { err = errors.Join(err, g.Close()) }()
	return g.GenerateText(prompt, cfg)
}
