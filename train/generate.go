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
// temperature, top-k, beams, seed, stop id, forbidden ids). Note that
// cfg.Stop's zero value stops after id 0: set it to the end-of-text id, or
// to -1 to always generate MaxNew ids.
func (g *Generator) Generate(prompts [][]int, cfg data.DecodeConfig) ([][]int, error) {
	return data.Generate(g.Next, prompts, cfg)
}

// GenerateText encodes prompt with the model's text codec (a token outside
// a restricted vocabulary is an error), continues it as [Generator.Generate]
// does, with cfg.Stop set to end-of-text and the pad and unknown ids
// forbidden, and returns the continuation's text (without the prompt; an
// end-of-text that ends it is dropped).
func (g *Generator) GenerateText(prompt string, cfg data.DecodeConfig) (string, error) {
	c := g.m.TextCodec()
	if c == nil {
		return "", errors.New("train: generate: the model has no text codec (SetTextCodec, or load a checkpoint that holds one)")
	}
	ids, err := c.EncodeStrict(prompt)
	if err != nil {
		return "", err
	}
	if len(ids) == 0 {
		return "", errors.New("train: generate: the prompt is empty")
	}
	out, err := g.Generate([][]int{ids}, TextDecodeConfig(c, cfg))
	if err != nil {
		return "", err
	}
	o := out[0]
	if len(o) > 0 && o[len(o)-1] == c.Vocab.EOT {
		o = o[:len(o)-1]
	}
	return c.Decode(o)
}

// TextDecodeConfig returns cfg with Stop set to c's end-of-text id and c's
// pad and unknown ids added to Forbid: what generating text needs.
func TextDecodeConfig(c *data.TextCodec, cfg data.DecodeConfig) data.DecodeConfig {
	v := c.Vocab
	cfg.Stop = v.EOT
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
func GenerateText(m LM, prompt string, cfg data.DecodeConfig) (_ string, err error) {
	g, err := NewGenerator(m)
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, g.Close()) }()
	return g.GenerateText(prompt, cfg)
}
