package layers

import (
	"fmt"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/bounds"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// CrossAttentionConfig configures the cross-attention layer against the
// embedding matrix W_e (Section 3.3): the query at each position is f = z W_Q,
// the C keys and values are the columns of W_e (through W_K and W_V, identity
// in the paper), and softmax attention returns
//
//	E(w_e | f) = Σ_c w_{e,c} softmax_c(w_{e,c}·f),
//
// exactly, placed into the output by P.
type CrossAttentionConfig struct {
	DIn, DPrime, DOut int // DOut defaults to DIn
	// We is the (d', C) embedding matrix shared with the model (required).
	We *G.Node
	// WQ (DIn×d') selects or maps the query; nil makes a trainable "wq".
	WQ *G.Node
	// WK and WV (d'×d') act on the columns of W_e; nil means the identity
	// unless LearnKV, which makes them trainable "wk" and "wv".
	WK, WV  *G.Node
	LearnKV bool
	// P (d'×DOut) places the result; nil makes a trainable "wo".
	P *G.Node
	// WInit initialises created matrices; nil means graph.GlorotUniform().
	WInit graph.Initializer
}

// CrossAttention is the cross-attention layer against W_e; see
// CrossAttentionConfig.
type CrossAttention struct {
	cfg            CrossAttentionConfig
	s              *graph.Scope
	wq, wk, wv, wo *G.Node
	params         G.Nodes
	c              int
}

var _ Layer = (*CrossAttention)(nil)

// NewCrossAttention validates cfg and creates the layer's parameters in s.
func NewCrossAttention(s *graph.Scope, cfg CrossAttentionConfig) (*CrossAttention, error) {
	if s == nil {
		return nil, fmt.Errorf("layers: cross-attention: scope is nil")
	}
	fail := func(format string, a ...any) (*CrossAttention, error) {
		return nil, fmt.Errorf("layers: cross-attention %q: %s", s.Path(), fmt.Sprintf(format, a...))
	}
	if cfg.DIn <= 0 || cfg.DPrime <= 0 {
		return fail("DIn = %d, DPrime = %d, want both > 0", cfg.DIn, cfg.DPrime)
	}
	if cfg.DOut == 0 {
		cfg.DOut = cfg.DIn
	}
	if cfg.DOut < 0 {
		return fail("DOut = %d, want > 0", cfg.DOut)
	}
	if err := bounds.Elements(
		bounds.Term{What: "DIn·DPrime (wq)", Dims: []int{cfg.DIn, cfg.DPrime}},
		bounds.Term{What: "2·DPrime·DPrime (wk, wv)", Dims: []int{2, cfg.DPrime, cfg.DPrime}, Tensor: "DPrime·DPrime", TensorDims: []int{cfg.DPrime, cfg.DPrime}},
		bounds.Term{What: "DPrime·DOut (wo)", Dims: []int{cfg.DPrime, cfg.DOut}},
	); err != nil {
		return fail("%v", err)
	}
	if cfg.We == nil {
		return fail("We is nil")
	}
	ws := cfg.We.Shape()
	if len(ws) != 2 || ws[0] != cfg.DPrime {
		return fail("We has shape %v, want (%d, C)", ws, cfg.DPrime)
	}
	if cfg.WInit == nil {
		cfg.WInit = graph.GlorotUniform()
	}
	l := &CrossAttention{cfg: cfg, s: s, c: ws[1]}
	mk := func(given *G.Node, name string, r, c int, create bool) (*G.Node, error) {
		if given != nil {
			return given, checkMatrix(name, given, r, c)
		}
		if !create {
			return nil, nil
		}
		p, err := s.Param(name, tensor.Shape{r, c}, cfg.WInit)
		if err != nil {
			return nil, err
		}
		l.params = append(l.params, p)
		return p, nil
	}
	var err error
	if l.wq, err = mk(cfg.WQ, "wq", cfg.DIn, cfg.DPrime, true); err != nil {
		return fail("%v", err)
	}
	if l.wk, err = mk(cfg.WK, "wk", cfg.DPrime, cfg.DPrime, cfg.LearnKV); err != nil {
		return fail("%v", err)
	}
	if l.wv, err = mk(cfg.WV, "wv", cfg.DPrime, cfg.DPrime, cfg.LearnKV); err != nil {
		return fail("%v", err)
	}
	if l.wo, err = mk(cfg.P, "wo", cfg.DPrime, cfg.DOut, true); err != nil {
		return fail("%v", err)
	}
	return l, nil
}

// Params lists the parameters the layer created (W_e is not among them: it
// belongs to the model).
func (l *CrossAttention) Params() G.Nodes { return l.params }

// Forward maps tokens z (B, T, DIn) to (B, T, DOut): E(w_e|f) placed by P.
func (l *CrossAttention) Forward(z *G.Node) (out *G.Node, err error) {
	defer graph.Recover(&err)
	defer func() {
		if err != nil {
			err = fmt.Errorf("layers: cross-attention %q: %w", l.s.Path(), err)
		}
	}()
	_, _, _, err = checkRank3("tokens", z, l.cfg.DIn)
	if err != nil {
		return nil, err
	}
	f := G.Must(ops.MatMul(z, l.wq, false, false)) // (B, T, d')
	e, err := Expectation(f, l.cfg.We, l.wk, l.wv)
	if err != nil {
		return nil, err
	}
	return ops.MatMul(e, l.wo, false, false) // (B, T, DOut)
}

// Expectation returns E(w_e|f) = softmax(f W_K^T W_e) W_e^T W_V for f (M, d')
// and W_e (d', C), shape (M, d'); wk and wv may be nil (identity). f may
// also be a tensor (…, d') of rows f, such as (B, T, d'); E then has its
// shape.
func Expectation(f, we, wk, wv *G.Node) (out *G.Node, err error) {
	defer graph.Recover(&err)
	if f == nil || we == nil || len(f.Shape()) < 2 || len(we.Shape()) != 2 || f.Shape()[len(f.Shape())-1] != we.Shape()[0] {
		return nil, fmt.Errorf("layers: expectation: f and W_e must be (M, d') and (d', C)")
	}
	if f.Dtype() != we.Dtype() {
		return nil, fmt.Errorf("layers: expectation: f has dtype %v, W_e %v", f.Dtype(), we.Dtype())
	}
	keys := we // (d', C)
	if wk != nil {
		keys = G.Must(ops.MatMul(wk, we, true, false)) // (d', C): W_Kᵀ W_e
	}
	vals := we // (d', C)
	if wv != nil {
		vals = G.Must(ops.MatMul(wv, we, true, false)) // (d', C): W_Vᵀ W_e
	}
	// softmax(f keys) valsᵀ (M, d') in one op (ops.ExpectationOp).
	return ops.Expectation(f, keys, vals)
}

// CrossMatrices are the matrices of a cross-attention layer as values (row
// convention): W_Q (DIn×d') reads the query f from the token, W_K and W_V
// (d'×d') act on the columns of W_e, and P (d'×DOut) places the result.
type CrossMatrices struct {
	WQ, WK, WV, P Matrix
}
