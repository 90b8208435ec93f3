package layers

import (
	"fmt"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// SparseEmbedding is [Embedding] with gdattn's own lookup op ([ops.Gather])
// in place of Gorgonia's ByIndices, for vocabularies of tens of thousands of
// tokens (the language models of Section 5.3, C = 50,258).
//
// ByIndices allocates a fresh zero (Vocab, Dim) gradient tensor at every
// backward pass and scatters into it. The gather op scatters the output
// gradient into a (Vocab, Dim) buffer that it owns and reuses across runs,
// accumulating only the rows of the ids used (repeated ids add up); the
// buffer is cleared with one memclr per run rather than reallocated, so a
// training step makes no Vocab-sized allocation for the lookup. With the
// output layer tied ([SparseEmbedding.Logits]), graph's host executor
// makes no scatter buffer at all: it adds the lookup's rows into the
// output layer's (Vocab, Dim) gradient in place, on the rows of the ids
// only (ops.ScatterOp.AddTo), the same bits as the sum of the two.
//
// The buffer is cleared whole, not row by row: Gorgonia may reuse the op's
// output register for a later in-place op (the sum of the lookup gradient and
// a tied output layer's, say), which can leave any row dirty. The gradient
// Gorgonia hands the optimiser is still a dense (Vocab, Dim) tensor: the tape
// machine adds every gradient node into the parameter's dual value, and a
// softmax over the whole vocabulary (the tied output layer of both language
// models) touches every row anyway. A row-sparse optimiser update would
// therefore save nothing for these models, and it would change Adam's
// semantics (moments of untouched rows would not decay), so gdattn's trainer
// keeps the dense update.
type SparseEmbedding struct {
	cfg EmbeddingConfig
	s   *graph.Scope
	w   *G.Node
	we  *G.Node
}

var _ Layer = (*SparseEmbedding)(nil)

// NewSparseEmbedding validates cfg and creates the parameter "w" (Vocab,
// Dim) in s, exactly as [NewEmbedding] does (same name, shape and default
// initialiser), so the two are interchangeable in checkpoints.
func NewSparseEmbedding(s *graph.Scope, cfg EmbeddingConfig) (*SparseEmbedding, error) {
	e, err := NewEmbedding(s, cfg)
	if err != nil {
		return nil, err
	}
	return &SparseEmbedding{cfg: e.cfg, s: s, w: e.w}, nil
}

// Config returns the configuration with defaults filled in.
func (e *SparseEmbedding) Config() EmbeddingConfig { return e.cfg }

// Params returns [w].
func (e *SparseEmbedding) Params() G.Nodes { return G.Nodes{e.w} }

// Weight returns the table w (Vocab, Dim).
func (e *SparseEmbedding) Weight() *G.Node { return e.w }

// We returns W_e = wᵀ (Dim, Vocab), built once and shared; see
// [Embedding.We].
func (e *SparseEmbedding) We() (out *G.Node, err error) {
	defer graph.Recover(&err)
	if e.we == nil {
		e.we = G.Must(G.Transpose(e.w)) // (Dim, Vocab)
	}
	return e.we, nil
}

// Forward is [SparseEmbedding.Lookup].
func (e *SparseEmbedding) Forward(ids *G.Node) (*G.Node, error) { return e.Lookup(ids) }

// Lookup returns the rows of w for ids, an int node of any rank made by
// [NewIDs] ((N) or (B, T)): the result has shape ids.Shape() + (Dim). Ids
// are checked when the machine runs (an id outside [0, Vocab) fails the run
// with an error); [SparseEmbedding.SetIDs] checks them when they are written.
func (e *SparseEmbedding) Lookup(ids *G.Node) (out *G.Node, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("layers: sparse embedding %q: %w", e.s.Path(), err)
		}
	}()
	if ids == nil {
		return nil, fmt.Errorf("ids node is nil")
	}
	if ids.Dtype() != tensor.Int {
		return nil, fmt.Errorf("ids %q have dtype %v, want int", ids.Name(), ids.Dtype())
	}
	if ids.Graph() != e.s.Graph() {
		return nil, fmt.Errorf("ids %q belong to another graph", ids.Name())
	}
	if ids.Shape().Dims() == 0 {
		return nil, fmt.Errorf("ids %q are a scalar, want (N) or (B, T)", ids.Name())
	}
	return ops.Gather(e.w, ids)
}

// LookupCentered returns w[ids] − w̄ with w̄ = (1/Vocab) Σ_c w_c, the mean
// row of the table: the values w_{e,t} − E(w_e|f=0) of the GD language
// model. It is Lookup minus the mean computed in the same op, and its
// gradient w.r.t. w is the gather's scatter-add with −(1/Vocab) Σ_i g_i
// added to every row in the same pass that clears the buffer, instead of a
// separate (1, Vocab) × (Vocab, Dim) product, its (Vocab, Dim) gradient and
// the sum of the two gradients.
func (e *SparseEmbedding) LookupCentered(ids *G.Node) (out *G.Node, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("layers: sparse embedding %q: %w", e.s.Path(), err)
		}
	}()
	if ids == nil || ids.Dtype() != tensor.Int || ids.Shape().Dims() == 0 {
		return nil, fmt.Errorf("ids must be an int node of rank >= 1")
	}
	if ids.Graph() != e.s.Graph() {
		return nil, fmt.Errorf("ids %q belong to another graph", ids.Name())
	}
	return ops.GatherCentered(e.w, ids)
}

// SetIDs writes vals into the int node ids after checking their range; see
// [Embedding.SetIDs].
func (e *SparseEmbedding) SetIDs(ids *G.Node, vals []int) error {
	return (&Embedding{cfg: e.cfg, s: e.s, w: e.w}).SetIDs(ids, vals)
}

// Logits returns the tied output layer h wᵀ for h (N, Dim): the logits
// (N, Vocab) of a language model whose output matrix W_e = wᵀ is the token
// embedding table (see [ops.TiedLogits]).
func (e *SparseEmbedding) Logits(h *G.Node) (*G.Node, error) {
	out, err := ops.TiedLogits(h, e.w)
	if err != nil {
		return nil, fmt.Errorf("layers: sparse embedding %q: %w", e.s.Path(), err)
	}
	return out, nil
}
