package layers

import (
	"fmt"
	"math"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/bounds"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// KeyMode says which positions act as keys (and values) for which queries.
type KeyMode int

const (
	// ContextKeys: keys and values are the context positions 1..N (the first
	// T-1 of T = N+1 positions); every position 1..N+1 is a query. The query
	// position N+1 is never a key. This is the paper's update head.
	ContextKeys KeyMode = iota
	// AllKeys: every position is a key for every query (used by the erase
	// head, where each position must see itself).
	AllKeys
	// CausalKeys: position j sees the keys at positions i < j (strictly
	// earlier), as in next-token prediction where position j+1 queries p_1..p_j.
	// The first position sees no key and gets a zero output.
	CausalKeys
)

func (m KeyMode) String() string {
	switch m {
	case ContextKeys:
		return "context"
	case AllKeys:
		return "all"
	case CausalKeys:
		return "causal"
	}
	return fmt.Sprintf("KeyMode(%d)", int(m))
}

// AttentionConfig configures one kernel attention head
//
//	out_j = ( Σ_{i ∈ keys(j)} κ(z_j W_Q, z_i W_K) z_i W_V ) P,
//
// on tokens z (B, T, DIn). Any of W_Q (DIn×DK), W_K (DIn×DK), W_V (DIn×DV)
// and P (DV×DOut) may be given as nodes (fixed constructions, or expressions
// of other parameters as in the GD models); a nil one becomes a trainable
// parameter "wq", "wk", "wv" or "wo" initialised by WInit. The head adds no
// skip connection: callers add its output to the residual stream.
type AttentionConfig struct {
	DIn, DK, DV, DOut int // DK, DV, DOut default to DIn
	Kernel            Kernel
	// Builtin, instead of Kernel, is a kernel of NewBuiltinKernel. With a
	// dot-product kernel (linear, exp, softmax) and ContextKeys or AllKeys
	// the head then computes projections, weights and values in one fused
	// op with a hand-written backward pass (the same function, rearranged:
	// see ops.HeadOp), several times faster than the chain of graph nodes used
	// otherwise. Set Kernel or Builtin, not both.
	Builtin       *BuiltinKernel
	Keys          KeyMode
	WQ, WK, WV, P *G.Node
	// TieQK makes W_K the same node as W_Q (the GD constructions have
	// W_Q = W_K); with WQ nil a single parameter "wq" is created.
	TieQK bool
	// WInit initialises created matrices; nil means graph.GlorotUniform().
	WInit graph.Initializer
	// RegroupQuery makes ForwardQuery of a fused head with ContextKeys
	// compute the values as (Σ_i w_i z_i)·(W_V P) per sequence
	// (ops.AttentionHeadQueryRegrouped), O(B·T·DIn) instead of
	// O(B·T·DIn·DOut): the same function, rounded differently (the sums
	// run in another order), so its numbers are not the same bits as the
	// last row of Forward. It changes nothing else.
	RegroupQuery bool
}

// Attention is a kernel attention head; see AttentionConfig.
type Attention struct {
	cfg            AttentionConfig
	s              *graph.Scope
	wq, wk, wv, wo *G.Node
	params         G.Nodes
	masks          map[[2]int]*Mask // causal masks by (B, T), built once each
}

var _ Layer = (*Attention)(nil)

// NewAttention validates cfg and creates the head's parameters in s. The
// widths and the matrices they give are bounded: each matrix at most
// graph.MaxElements (2^31) elements.
func NewAttention(s *graph.Scope, cfg AttentionConfig) (*Attention, error) {
	if s == nil {
		return nil, fmt.Errorf("layers: attention: scope is nil")
	}
	fail := func(format string, a ...any) (*Attention, error) {
		return nil, fmt.Errorf("layers: attention %q: %s", s.Path(), fmt.Sprintf(format, a...))
	}
	if cfg.DIn <= 0 {
		return fail("DIn = %d, want > 0", cfg.DIn)
	}
	if cfg.DK == 0 {
		cfg.DK = cfg.DIn
	}
	if cfg.DV == 0 {
		cfg.DV = cfg.DIn
	}
	if cfg.DOut == 0 {
		cfg.DOut = cfg.DIn
	}
	if cfg.DK < 0 || cfg.DV < 0 || cfg.DOut < 0 {
		return fail("negative dimension in DK=%d DV=%d DOut=%d", cfg.DK, cfg.DV, cfg.DOut)
	}
	if err := bounds.Elements(
		bounds.Term{What: "2·DIn·DK (wq, wk)", Dims: []int{2, cfg.DIn, cfg.DK}, Tensor: "DIn·DK", TensorDims: []int{cfg.DIn, cfg.DK}},
		bounds.Term{What: "DIn·DV (wv)", Dims: []int{cfg.DIn, cfg.DV}},
		bounds.Term{What: "DV·DOut (wo)", Dims: []int{cfg.DV, cfg.DOut}},
	); err != nil {
		return fail("%v", err)
	}
	if cfg.Builtin != nil {
		if cfg.Kernel != nil {
			return fail("both Kernel and Builtin are set")
		}
		cfg.Kernel = cfg.Builtin.Kernel
	}
	if cfg.Kernel == nil {
		return fail("Kernel is nil")
	}
	if cfg.Keys < ContextKeys || cfg.Keys > CausalKeys {
		return fail("unknown key mode %d", int(cfg.Keys))
	}
	if cfg.WInit == nil {
		cfg.WInit = graph.GlorotUniform()
	}
	a := &Attention{cfg: cfg, s: s}
	var err error
	mk := func(given *G.Node, name string, r, c int) (*G.Node, error) {
		if given != nil {
			if err := checkMatrix(name, given, r, c); err != nil {
				return nil, err
			}
			return given, nil
		}
		p, err := s.Param(name, tensor.Shape{r, c}, cfg.WInit)
		if err != nil {
			return nil, err
		}
		a.params = append(a.params, p)
		return p, nil
	}
	if a.wq, err = mk(cfg.WQ, "wq", cfg.DIn, cfg.DK); err != nil {
		return fail("%v", err)
	}
	if cfg.TieQK {
		if cfg.WK != nil && cfg.WK != a.wq {
			return fail("TieQK with a WK different from WQ")
		}
		a.wk = a.wq
	} else if a.wk, err = mk(cfg.WK, "wk", cfg.DIn, cfg.DK); err != nil {
		return fail("%v", err)
	}
	if a.wv, err = mk(cfg.WV, "wv", cfg.DIn, cfg.DV); err != nil {
		return fail("%v", err)
	}
	if a.wo, err = mk(cfg.P, "wo", cfg.DV, cfg.DOut); err != nil {
		return fail("%v", err)
	}
	return a, nil
}

// Params lists the parameters the head created (not the given matrices).
func (a *Attention) Params() G.Nodes { return a.params }

// Matrices returns the nodes used as W_Q, W_K, W_V and P.
func (a *Attention) Matrices() (wq, wk, wv, p *G.Node) { return a.wq, a.wk, a.wv, a.wo }

// ForwardQuery maps tokens z (B, T, DIn) to the head output at the last
// position only, (B, 1, DOut): the same numbers as the last row of
// Forward's output, for a model whose loss reads the query alone. With a
// fused head (Builtin, a dot-product kernel) and ContextKeys it computes one
// row of scores per sequence (ops.AttentionHeadQuery), and its gradients
// are the same bits as Forward's when the loss reads the last row only
// (with RegroupQuery, ops.AttentionHeadQueryRegrouped: the same function,
// other rounding); otherwise it is Forward's output sliced.
func (a *Attention) ForwardQuery(z *G.Node) (out *G.Node, err error) {
	if bk := a.cfg.Builtin; bk != nil && bk.dotProduct() && a.cfg.Keys == ContextKeys {
		defer graph.Recover(&err)
		defer func() {
			if err != nil {
				err = fmt.Errorf("layers: attention %q: %w", a.s.Path(), err)
			}
		}()
		_, t, _, err := checkRank3("tokens", z, a.cfg.DIn)
		if err != nil {
			return nil, err
		}
		if t < 2 {
			return nil, fmt.Errorf("tokens have T = %d positions; need at least one context position and the query", t)
		}
		if a.cfg.RegroupQuery {
			return ops.AttentionHeadQueryRegrouped(bk.kind, bk.g, bk.gFixed, z, a.wq, a.wk, a.wv, a.wo) // (B, 1, DOut)
		}
		return ops.AttentionHeadQuery(bk.kind, bk.g, bk.gFixed, z, a.wq, a.wk, a.wv, a.wo) // (B, 1, DOut)
	}
	full, err := a.Forward(z)
	if err != nil {
		return nil, err
	}
	defer graph.Recover(&err)
	t := full.Shape()[1]
	return ops.Slice(full, 1, t-1, t) // (B, 1, DOut)
}

// Forward maps tokens z (B, T, DIn) to the head output (B, T, DOut). With
// ContextKeys, T must be at least 2 (one context position and the query).
func (a *Attention) Forward(z *G.Node) (out *G.Node, err error) {
	defer graph.Recover(&err)
	defer func() {
		if err != nil {
			err = fmt.Errorf("layers: attention %q: %w", a.s.Path(), err)
		}
	}()
	b, t, _, err := checkRank3("tokens", z, a.cfg.DIn)
	if err != nil {
		return nil, err
	}
	if a.cfg.Keys == ContextKeys && t < 2 {
		return nil, fmt.Errorf("tokens have T = %d positions; need at least one context position and the query", t)
	}
	if bk := a.cfg.Builtin; bk != nil && bk.dotProduct() && a.cfg.Keys != CausalKeys {
		return ops.AttentionHead(bk.kind, bk.g, bk.gFixed, a.cfg.Keys == ContextKeys, z, a.wq, a.wk, a.wv, a.wo) // (B, T, DOut)
	}
	z2 := G.Must(ops.Reshape(z, tensor.Shape{b * t, a.cfg.DIn}))                    // (B*T, DIn)
	q := G.Must(ops.Reshape(G.Must(G.Mul(z2, a.wq)), tensor.Shape{b, t, a.cfg.DK})) // (B, T, DK)
	k := q
	if a.wk != a.wq {
		k = G.Must(ops.Reshape(G.Must(G.Mul(z2, a.wk)), tensor.Shape{b, t, a.cfg.DK})) // (B, T, DK)
	}
	v := G.Must(ops.Reshape(G.Must(G.Mul(z2, a.wv)), tensor.Shape{b, t, a.cfg.DV})) // (B, T, DV)
	var mask *Mask
	switch a.cfg.Keys {
	case ContextKeys:
		k = G.Must(ops.Slice(k, 1, 0, t-1)) // (B, N, DK)
		v = G.Must(ops.Slice(v, 1, 0, t-1)) // (B, N, DV)
	case CausalKeys:
		if mask, err = a.causalMask(b, t); err != nil {
			return nil, err
		}
	}
	w, err := a.cfg.Kernel(q, k, mask) // (B, T, Tk)
	if err != nil {
		return nil, err
	}
	h := G.Must(ops.BatchedMatMul(w, v, false, false))                 // (B, T, DV)
	h2 := G.Must(ops.Reshape(h, tensor.Shape{b * t, a.cfg.DV}))        // (B*T, DV)
	o := G.Must(G.Mul(h2, a.wo))                                       // (B*T, DOut)
	return G.Must(ops.Reshape(o, tensor.Shape{b, t, a.cfg.DOut})), nil // (B, T, DOut)
}

// causalMask returns the (B, T, T) mask of CausalKeys, created in the head's
// scope on first use for each (B, T), so that Forward may run more than once
// (a second NewMask with the same name would fail).
func (a *Attention) causalMask(b, t int) (*Mask, error) {
	key := [2]int{b, t}
	if m, ok := a.masks[key]; ok {
		return m, nil
	}
	name := fmt.Sprintf("causal_mask_%dx%d", b, t)
	m, err := NewMask(a.s, name, b, t, t, func(j, i int) bool { return i < j })
	if err != nil {
		return nil, err
	}
	if a.masks == nil {
		a.masks = map[[2]int]*Mask{}
	}
	a.masks[key] = m
	return m, nil
}

// Matrix is a dense row-major matrix value: element (r, c) at
// Data[r*Cols+c]. It carries matrices between packages without a graph, such
// as the GD construction (package gd) that starts an unconstrained model
// (package tf).
type Matrix struct {
	Rows, Cols int
	Data       []float64
}

// At returns element (r, c), or NaN when (r, c) lies outside the matrix or
// the matrix does not hold its Rows·Cols values: a wrong index shows up as
// NaN in what is computed from it (and every function taking a Matrix
// refuses a matrix without its data), never as a crash.
func (m Matrix) At(r, c int) float64 {
	i, ok := m.index(r, c)
	if !ok {
		return math.NaN()
	}
	return m.Data[i]
}

// NewMatrix returns a zero rows×cols matrix. A negative size, or more than
// graph.MaxElements elements, is an error.
func NewMatrix(rows, cols int) (Matrix, error) {
	n, ok := bounds.Product(rows, cols)
	if rows < 0 || cols < 0 || !ok || n > bounds.MaxElements {
		return Matrix{}, fmt.Errorf("layers: NewMatrix(%d, %d): want sizes >= 0 with at most %d elements (graph.MaxElements)", rows, cols, int64(bounds.MaxElements))
	}
	return Matrix{Rows: rows, Cols: cols, Data: make([]float64, n)}, nil
}

// Set sets element (r, c) to v; it returns an error, and changes nothing,
// when (r, c) lies outside the matrix or the matrix does not hold its
// Rows·Cols values.
func (m Matrix) Set(r, c int, v float64) error {
	i, ok := m.index(r, c)
	if !ok {
		return fmt.Errorf("layers: Matrix.Set(%d, %d) of a %dx%d matrix with %d values", r, c, m.Rows, m.Cols, len(m.Data))
	}
	m.Data[i] = v
	return nil
}

// index returns the position of (r, c) in Data, checked.
func (m Matrix) index(r, c int) (int, bool) {
	if r < 0 || c < 0 || r >= m.Rows || c >= m.Cols {
		return 0, false
	}
	n, ok := bounds.Product(m.Rows, m.Cols)
	if !ok || len(m.Data) != n {
		return 0, false
	}
	return r*m.Cols + c, true
}

// check reports a matrix whose Data does not hold Rows·Cols values.
func (m Matrix) check(what string) error {
	if n, ok := bounds.Product(m.Rows, m.Cols); m.Rows <= 0 || m.Cols <= 0 || !ok || len(m.Data) != n {
		return fmt.Errorf("%s is %dx%d with %d values", what, m.Rows, m.Cols, len(m.Data))
	}
	return nil
}

// HeadMatrices are the W_Q, W_K (D×DK), W_V (D×DV) and P (DV×D) of one
// attention head as values, in gdattn's row-vector convention: a head maps
// tokens z (rows) to Σ_i κ(z_j W_Q, z_i W_K) z_i W_V P. They are the
// transposes of the paper's column-convention matrices (Appendices C and D).
type HeadMatrices struct {
	WQ, WK, WV, P Matrix
}

// BlockMatrices are the matrices of one transformer block built of
// self-attention heads and, optionally, a cross-attention layer against W_e.
type BlockMatrices struct {
	// Heads[h] are the matrices of self-attention head h.
	Heads []HeadMatrices
	// Cross are the cross-attention matrices; nil when the block has none.
	Cross *CrossMatrices
}

// Construction is a starting point for the matrices of an unconstrained
// model on the GD tokens (package tf): the matrices of the GD construction
// (package gd builds them) handed over as values.
type Construction struct {
	// Blocks[l] holds the matrices of layer l.
	Blocks []BlockMatrices
	// Readout is the readout R (D×d') that reads f from the last token; a
	// zero Matrix leaves the model's own initial R.
	Readout Matrix
}

// Validate checks that every matrix holds Rows·Cols values.
func (c *Construction) Validate() error {
	for l, b := range c.Blocks {
		for h, hm := range b.Heads {
			for _, m := range []struct {
				name string
				m    Matrix
			}{{"WQ", hm.WQ}, {"WK", hm.WK}, {"WV", hm.WV}, {"P", hm.P}} {
				if err := m.m.check(fmt.Sprintf("Blocks[%d].Heads[%d].%s", l, h, m.name)); err != nil {
					return fmt.Errorf("layers: construction: %w", err)
				}
			}
		}
		if x := b.Cross; x != nil {
			for _, m := range []struct {
				name string
				m    Matrix
			}{{"WQ", x.WQ}, {"WK", x.WK}, {"WV", x.WV}, {"P", x.P}} {
				if err := m.m.check(fmt.Sprintf("Blocks[%d].Cross.%s", l, m.name)); err != nil {
					return fmt.Errorf("layers: construction: %w", err)
				}
			}
		}
	}
	if c.Readout.Rows != 0 || c.Readout.Cols != 0 || c.Readout.Data != nil {
		if err := c.Readout.check("Readout"); err != nil {
			return fmt.Errorf("layers: construction: %w", err)
		}
	}
	return nil
}
