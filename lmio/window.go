package lmio

import (
	"fmt"
	"strings"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/losses"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Window is the input and output plumbing of a causal language model built
// for minibatches of B windows of T ids over a vocabulary of C ids.
type Window struct {
	who            string // error prefix, "gd: lm" or "tf: gpt"
	s              *graph.Scope
	batch, context int
	vocab          int
	next           bool
	ids, targets   *G.Node
	sel            *G.Node
	logits, nextL  *G.Node
	emb            *layers.SparseEmbedding
	codec          *data.TextCodec
}

// New creates, in s, the ids input (B, T) named "ids" and the token
// embedding "wte" (C, d) initialised by winit. who prefixes errors. (The
// functions that build a model are package functions, not methods, so that
// a model embedding a *Window exports only the methods its users need.)
func New(s *graph.Scope, who string, batch, context, vocab, d int, winit graph.Initializer, next bool) (*Window, *layers.SparseEmbedding, error) {
	ids, err := layers.NewIDs(s, "ids", batch, context)
	if err != nil {
		return nil, nil, err
	}
	emb, err := layers.NewSparseEmbedding(s.Sub("wte"), layers.EmbeddingConfig{Vocab: vocab, Dim: d, WInit: winit})
	if err != nil {
		return nil, nil, err
	}
	return &Window{who: who, s: s, batch: batch, context: context, vocab: vocab, next: next, ids: ids, emb: emb}, emb, nil
}

// Rows returns the rows of x (B, T, d) whose logits the graph computes:
// every position, (B·T, d), for a training graph; the selected one,
// (B, d), for a generation graph (it creates the input "select").
func Rows(w *Window, x *G.Node, d int) (*G.Node, error) {
	B, T := w.batch, w.context
	if !w.next {
		return ops.Reshape(x, tensor.Shape{B * T, d}) // (B*T, d)
	}
	var err error
	if w.sel, err = w.s.Input("select", tensor.Shape{B, T}); err != nil {
		return nil, err
	}
	sel, err := ops.Reshape(w.sel, tensor.Shape{B, 1, T}) // (B, 1, T)
	if err != nil {
		return nil, err
	}
	h, err := G.BatchedMatMul(sel, x, false, false) // (B, 1, d)
	if err != nil {
		return nil, err
	}
	return ops.Reshape(h, tensor.Shape{B, d}) // (B, d)
}

// SetLogits records the graph's logits (rows of [Rows], C) and, for
// a training graph, creates the targets input (B·T), named "targets".
func SetLogits(w *Window, logits *G.Node) (err error) {
	if w.next {
		w.nextL = logits
		return nil
	}
	w.logits = logits
	w.targets, err = layers.NewIDs(w.s, "targets", w.batch*w.context)
	return err
}

// Nodes returns the ids, targets, selection, logits and next-token logits
// (nil where the graph has none).
func Nodes(w *Window) (ids, targets, sel, logits, next *G.Node) {
	return w.ids, w.targets, w.sel, w.logits, w.nextL
}

// Feed writes one training minibatch: ids (B·T) and targets (B·T, -1: not
// scored). On error nothing is written.
func (w *Window) Feed(ids, targets []int) error {
	if w.next {
		return fmt.Errorf("%s: Feed on a generation graph (use FeedNext)", w.who)
	}
	if err := losses.SetLabels(w.targets, targets, w.vocab); err != nil {
		return fmt.Errorf("%s: targets: %w", w.who, err)
	}
	if err := w.emb.SetIDs(w.ids, ids); err != nil {
		return fmt.Errorf("%s: ids: %w", w.who, err)
	}
	return nil
}

// FeedNext writes a generation minibatch: ids (B·T), each window's context
// left-aligned and padded with any valid id, and lengths (B) in [1, T].
func (w *Window) FeedNext(ids, lengths []int) error {
	if !w.next {
		return fmt.Errorf("%s: FeedNext on a training graph (build it with Next)", w.who)
	}
	B, T := w.batch, w.context
	if len(lengths) != B {
		return fmt.Errorf("%s: %d lengths for a batch of %d", w.who, len(lengths), B)
	}
	sel := make([]float64, B*T)
	for b, l := range lengths {
		if l < 1 || l > T {
			return fmt.Errorf("%s: length %d of sequence %d is outside [1, %d]", w.who, l, b, T)
		}
		sel[b*T+l-1] = 1
	}
	if err := w.emb.SetIDs(w.ids, ids); err != nil {
		return fmt.Errorf("%s: ids: %w", w.who, err)
	}
	return graph.SetValue(w.sel, sel)
}

// BatchSize is the number B of windows of a minibatch.
func (w *Window) BatchSize() int { return w.batch }

// ContextLen is the context window T, the most ids the model sees.
func (w *Window) ContextLen() int { return w.context }

// VocabSize is the number C of token ids.
func (w *Window) VocabSize() int { return w.vocab }

// Generates reports whether the graph is a generation graph (built with
// Next: FeedNext and the next-token logits) rather than a training graph.
func (w *Window) Generates() bool { return w.next }

// LMOutputs returns the logits (B·T, C) and targets (B·T) of a training
// graph and the next-token logits (B, C) of a generation graph (nil where
// the graph has none). The loss of a training graph is
// losses.SparseSoftmaxCrossEntropy(logits, targets).
func (w *Window) LMOutputs() (logits, targets, next *G.Node) { return w.logits, w.targets, w.nextL }

// TextCodec is the codec that turns text into the model's ids and back:
// the one the checkpoint it was loaded from holds, or the one given to
// [Window.SetTextCodec]; nil if none.
func (w *Window) TextCodec() *data.TextCodec { return w.codec }

// SetTextCodec sets the model's text codec, which its checkpoints then hold
// (tokeniser and vocabulary); the vocabulary must have the model's C ids.
// nil removes it.
func (w *Window) SetTextCodec(c *data.TextCodec) error {
	if c == nil {
		w.codec = nil
		return nil
	}
	if c.Tok == nil || c.Vocab == nil {
		return fmt.Errorf("%s: text codec without a tokenizer or a vocabulary", w.who)
	}
	if n := c.Vocab.Size(); n != w.vocab {
		return fmt.Errorf("%s: the text codec's vocabulary has %d ids, the model %d", w.who, n, w.vocab)
	}
	w.codec = c
	return nil
}

// Rebuild builds a model with build in a new scope of src's dtype, under
// src's path, and copies the values of src's parameters into the parameters
// of the same names: the same model as another graph (e.g. a generation
// graph of a trained training graph). It reads the host values: after
// training on a device, sync the parameters first.
func Rebuild[M any](src *graph.Scope, build func(*graph.Scope) (M, error)) (M, error) {
	var zero M
	root, err := graph.NewScope(src.Dtype(), 0)
	if err != nil {
		return zero, err
	}
	s := root
	if p := src.Path(); p != "" {
		for _, seg := range strings.Split(p, "/") {
			s = s.Sub(seg)
		}
	}
	m, err := build(s)
	if err != nil {
		return zero, err
	}
	dst := s.Params()
	if len(dst) != len(src.Params()) {
		return zero, fmt.Errorf("lmio: rebuild: %d parameters, the source has %d", len(dst), len(src.Params()))
	}
	for _, p := range src.Params() {
		q, ok := s.Lookup(p.Name())
		if !ok {
			return zero, fmt.Errorf("lmio: rebuild: parameter %q missing from the new graph", p.Name())
		}
		v, err := graph.Values(p)
		if err != nil {
			return zero, err
		}
		if err := graph.SetValue(q, v); err != nil {
			return zero, err
		}
	}
	return m, nil
}

// Build validates cfg (its Validate fills the defaults), checks the sizes
// it implies with sizes, and builds the model with build in s; an error of
// build is prefixed with who and s's path. gd.NewLM and tf.NewGPT are
// written with it.
func Build[C interface{ Validate() (C, error) }, M any](who string, s *graph.Scope, cfg C, sizes func(C) error, build func(C) (M, error)) (M, error) {
	var zero M
	if s == nil {
		return zero, fmt.Errorf("%s: scope is nil", who)
	}
	cfg, err := cfg.Validate()
	if err != nil {
		return zero, err
	}
	if err := sizes(cfg); err != nil {
		return zero, err
	}
	m, err := build(cfg)
	if err != nil {
		return zero, fmt.Errorf("%s %q: %w", who, s.Path(), err)
	}
	return m, nil
}

// Head builds the output of both families on the rows h (rows, d) of
// [Rows] (after the body): the final layer norm "ln_f", then the logits
// ln_f(h) W_e tied to the token embedding (ops.TiedLogits: the transpose
// handed to BLAS, no (d, C) copy, output and gradients in buffers reused
// from run to run), recorded as by [SetLogits].
func Head(w *Window, h *G.Node, d int) error {
	lnf, err := layers.NewLayerNorm(w.s.Sub("ln_f"), layers.LayerNormConfig{Dim: d})
	if err != nil {
		return err
	}
	x, err := lnf.Forward(h)
	if err != nil {
		return err
	}
	logits, err := w.emb.Logits(x) // (rows, C)
	if err != nil {
		return err
	}
	return SetLogits(w, logits)
}

// IDs returns w's ids input (B, T).
func IDs(w *Window) *G.Node { return w.ids }

// WithCodec gives m the text codec c and returns m, or the zero M and the
// error.
func WithCodec[M interface{ SetTextCodec(*data.TextCodec) error }](m M, c *data.TextCodec) (M, error) {
	if err := m.SetTextCodec(c); err != nil {
		var zero M
		return zero, err
	}
	return m, nil
}
