package layers

import (
	"fmt"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/bounds"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// EmbeddingConfig configures a learned lookup table of Vocab vectors of width
// Dim: the token (category) embeddings w_{e,c} of the paper (Sections 2.2 and
// 5, C = Vocab, d' = Dim) or the positional embeddings p_i.
type EmbeddingConfig struct {
	Vocab int // number of rows (categories, tokens or positions); required, > 0
	Dim   int // embedding width d'; required, > 0
	// WInit initialises the table; nil means graph.Normal(0.02) (nanoGPT).
	WInit graph.Initializer
}

// DefaultEmbeddingConfig returns the configuration for a vocab x dim table
// with every default spelled out.
func DefaultEmbeddingConfig(vocab, dim int) EmbeddingConfig {
	return EmbeddingConfig{Vocab: vocab, Dim: dim, WInit: graph.Normal(0.02)}
}

// Embedding is a learned table w (Vocab, Dim) whose row c is the embedding of
// id c. Row-major (Vocab, Dim) is the nanoGPT layout (wte); the paper's
// W_e (d' x C), whose columns are the embeddings, is its transpose (see
// [Embedding.We]).
//
// Ids are fed through an int input node made by [NewIDs] and written with
// [Embedding.SetIDs] before each run, so a graph is compiled once and reused
// across minibatches.
//
// The lookup is Gorgonia's ByIndices, whose gradient is a dense (Vocab, Dim)
// tensor with the rows of unused ids left at zero. That costs O(Vocab·Dim)
// per step, the same order as the optimiser's update of w, so it is cheap
// for small tables; a sparse-rows gradient (with a matching sparse optimiser)
// is future work for Vocab = 50k.
type Embedding struct {
	cfg EmbeddingConfig
	s   *graph.Scope
	w   *G.Node
	we  *G.Node // lazily built transpose, shared by every caller of We
}

var _ Layer = (*Embedding)(nil)

// NewEmbedding validates cfg and creates the parameter "w" (Vocab, Dim) in s.
func NewEmbedding(s *graph.Scope, cfg EmbeddingConfig) (*Embedding, error) {
	if s == nil {
		return nil, fmt.Errorf("layers: embedding: scope is nil")
	}
	fail := func(format string, a ...any) (*Embedding, error) {
		return nil, fmt.Errorf("layers: embedding %q: %s", s.Path(), fmt.Sprintf(format, a...))
	}
	if cfg.Vocab <= 0 {
		return fail("Vocab = %d, want > 0", cfg.Vocab)
	}
	if cfg.Dim <= 0 {
		return fail("Dim = %d, want > 0", cfg.Dim)
	}
	if err := bounds.Elements(bounds.Term{What: "Vocab·Dim (w)", Dims: []int{cfg.Vocab, cfg.Dim}}); err != nil {
		return fail("%v", err)
	}
	if cfg.WInit == nil {
		cfg.WInit = graph.Normal(0.02)
	}
	w, err := s.Param("w", tensor.Shape{cfg.Vocab, cfg.Dim}, cfg.WInit)
	if err != nil {
		return fail("%v", err)
	}
	return &Embedding{cfg: cfg, s: s, w: w}, nil
}

// Config returns the configuration with defaults filled in.
func (e *Embedding) Config() EmbeddingConfig { return e.cfg }

// Params returns [w].
func (e *Embedding) Params() G.Nodes { return G.Nodes{e.w} }

// Weight returns the table w (Vocab, Dim).
func (e *Embedding) Weight() *G.Node { return e.w }

// We returns the paper's W_e = wᵀ (Dim, Vocab), whose column c is the
// embedding of category c: the matrix the cross-attention layer and the
// softmax head take. The transpose node is built on the first call and
// returned by every later call, so tied uses share one node.
func (e *Embedding) We() (out *G.Node, err error) {
	defer graph.Recover(&err)
	if e.we == nil {
		e.we = G.Must(G.Transpose(e.w)) // (Dim, Vocab)
	}
	return e.we, nil
}

// Forward is [Embedding.Lookup], so that an Embedding is a [Layer].
func (e *Embedding) Forward(ids *G.Node) (*G.Node, error) { return e.Lookup(ids) }

// Lookup returns the embeddings of ids, an int node (dtype tensor.Int, as
// made by [NewIDs]) of shape (N) or (B, T): the result is (N, Dim) or
// (B, T, Dim). The ids' values are read when the machine runs; write them
// with [Embedding.SetIDs], which checks their range: Gorgonia's ByIndices
// does not (measured: an id past the table yields garbage rows and no error).
func (e *Embedding) Lookup(ids *G.Node) (out *G.Node, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("layers: embedding %q: %w", e.s.Path(), err)
		}
	}()
	defer graph.Recover(&err)
	if ids == nil {
		return nil, fmt.Errorf("ids node is nil")
	}
	if ids.Dtype() != tensor.Int {
		return nil, fmt.Errorf("ids %q have dtype %v, want int", ids.Name(), ids.Dtype())
	}
	if ids.Graph() != e.s.Graph() {
		return nil, fmt.Errorf("ids %q belong to another graph", ids.Name())
	}
	sh := ids.Shape()
	switch len(sh) {
	case 1:
		return G.Must(G.ByIndices(e.w, ids, 0)), nil // (N, Dim)
	case 2:
		b, t := sh[0], sh[1]
		// ops.Reshape copies floats only; G.Reshape aliases the ids, which is
		// harmless here because ByIndices never writes into its inputs.
		flat := G.Must(G.Reshape(ids, tensor.Shape{b * t}))                  // (B*T)
		rows := G.Must(G.ByIndices(e.w, flat, 0))                            // (B*T, Dim)
		return G.Must(ops.Reshape(rows, tensor.Shape{b, t, e.cfg.Dim})), nil // (B, T, Dim)
	}
	return nil, fmt.Errorf("ids %q have shape %v, want (N) or (B, T)", ids.Name(), sh)
}

// NewIDs creates an int input node s.Path()/name of the given shape ((N) or
// (B, T)), filled with zeros, to feed ids to [Embedding.Lookup]. The node is
// not a parameter and not registered in the Scope; NewIDs fails if the graph
// already holds a node of that name.
func NewIDs(s *graph.Scope, name string, shape ...int) (*G.Node, error) {
	if s == nil {
		return nil, fmt.Errorf("layers: ids %q: scope is nil", name)
	}
	full := s.Name(name)
	if len(shape) != 1 && len(shape) != 2 {
		return nil, fmt.Errorf("layers: ids %q: shape %v, want (N) or (B, T)", full, shape)
	}
	for _, d := range shape {
		if d <= 0 {
			return nil, fmt.Errorf("layers: ids %q: shape %v, want positive dimensions", full, shape)
		}
	}
	n, err := graph.CheckShape(tensor.Shape(shape))
	if err != nil {
		return nil, fmt.Errorf("layers: ids %q: %w", full, err)
	}
	if len(s.Graph().ByName(full)) > 0 {
		return nil, fmt.Errorf("layers: ids %q: the graph already has a node of that name", full)
	}
	t := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(make([]int, n)))
	return G.NewTensor(s.Graph(), tensor.Int, len(shape), G.WithShape(shape...), G.WithName(full), G.WithValue(t)), nil
}

// SetIDs writes vals (row-major, one per element of ids) into the int node
// ids in place, so a compiled machine reads them on its next run. It returns
// an error, and writes nothing, if ids is not an int node of len(vals)
// elements or if some id is outside [0, Vocab); the error names the first
// offending position.
func (e *Embedding) SetIDs(ids *G.Node, vals []int) error {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("layers: embedding %q: %s", e.s.Path(), fmt.Sprintf(format, a...))
	}
	if ids == nil {
		return fail("ids node is nil")
	}
	var dst []int
	if v := ids.Value(); v != nil {
		dst, _ = v.Data().([]int)
	}
	if dst == nil {
		return fail("ids %q: not an int tensor node with a value (make it with NewIDs)", ids.Name())
	}
	if len(dst) != len(vals) {
		return fail("ids %q has %d elements (shape %v), got %d ids", ids.Name(), len(dst), ids.Shape(), len(vals))
	}
	for i, id := range vals {
		if id < 0 || id >= e.cfg.Vocab {
			pos := fmt.Sprintf("position %d", i)
			if sh := ids.Shape(); len(sh) == 2 {
				pos = fmt.Sprintf("position %d (row %d, column %d)", i, i/sh[1], i%sh[1])
			}
			return fail("id %d at %s of %q is out of range [0, %d)", id, pos, ids.Name(), e.cfg.Vocab)
		}
	}
	copy(dst, vals)
	return nil
}
