package train

import (
	"errors"
	"fmt"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph"
	G "gorgonia.org/gorgonia"
)

// Generator continues token sequences with an [LM] generation graph (built
// with Next, e.g. gd.LoadLM(dir, gd.LMOptions{Batch: 1, Next: true}) or
// m.Rebuild of a trained model): greedy decoding, sampling (temperature,
// top-k) and beam search, as data.Generate does them. Contexts longer than
// the model's window are cropped to their last ContextLen ids; they are run
// BatchSize at a time. A Generator is not safe for concurrent use.
type Generator struct {
	m    LM
	next *G.Node
	mc   *graph.Machine
	pad  int
}

// NewGenerator compiles m's forward-only machine. m must be a generation
// graph.
func NewGenerator(m LM) (*Generator, error) {
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
	mc, err := graph.NewMachine(m.Scope(), nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{next}})
	if err != nil {
		return nil, fmt.Errorf("train: generate: %w", err)
	}
	g := &Generator{m: m, next: next, mc: mc}
	if c := m.TextCodec(); c != nil && c.Vocab != nil {
		g.pad = c.Vocab.Pad
	}
	return g, nil
}

// Close releases the machine.
func (g *Generator) Close() error { return g.mc.Close() }

// Next returns the logits of the token after each context (a
// data.NextFunc): each context is cropped to its last ContextLen ids,
// left-aligned and padded, and the contexts run BatchSize at a time.
func (g *Generator) Next(contexts [][]int) ([][]float64, error) {
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
			if len(c) == 0 {
				return nil, fmt.Errorf("train: generate: context %d is empty", lo+b)
			}
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
