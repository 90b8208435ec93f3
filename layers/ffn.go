package layers

import (
	"fmt"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/bounds"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Activation names accepted by FeedForwardConfig.Activation.
const (
	ActivationReLU     = "relu"
	ActivationGELU     = "gelu" // tanh approximation, see FeedForward
	ActivationIdentity = "identity"
)

// FeedForwardConfig configures a two-layer perceptron applied to each token.
type FeedForwardConfig struct {
	DIn    int // input width; required, > 0
	Hidden int // hidden width; 0 means 4*DIn (nanoGPT)
	DOut   int // output width; 0 means DIn
	// Activation is "relu", "gelu" or "identity"; "" means "gelu".
	Activation string
	// WInit initialises w1 and w2; nil means graph.GlorotUniform().
	WInit graph.Initializer
	// BInit initialises b1 and b2; nil means zeros.
	BInit graph.Initializer
}

// DefaultFeedForwardConfig returns the nanoGPT-shaped configuration for width
// dIn (hidden 4*dIn, output dIn, GELU) with every default spelled out.
func DefaultFeedForwardConfig(dIn int) FeedForwardConfig {
	return FeedForwardConfig{
		DIn: dIn, Hidden: 4 * dIn, DOut: dIn, Activation: ActivationGELU,
		WInit: graph.GlorotUniform(), BInit: graph.Zeros(),
	}
}

// FeedForward is the position-wise MLP of a transformer block,
//
//	y = act(x W1 + b1) W2 + b2,
//
// with parameters "w1" (DIn, Hidden), "b1" (Hidden), "w2" (Hidden, DOut) and
// "b2" (DOut). GELU is the tanh approximation used by GPT-2 and nanoGPT
// (torch's approximate="tanh"),
//
//	gelu(x) = x/2 (1 + tanh(√(2/π) (x + 0.044715 x³))) = x σ(2√(2/π) (x + 0.044715 x³)),
//
// computed in the sigmoid form by one fused op (ops.GELU); it differs from
// the exact erf GELU by less than 1e-3.
type FeedForward struct {
	cfg            FeedForwardConfig
	s              *graph.Scope
	w1, b1, w2, b2 *G.Node
}

var _ Layer = (*FeedForward)(nil)

// NewFeedForward validates cfg and creates the parameters in s.
func NewFeedForward(s *graph.Scope, cfg FeedForwardConfig) (*FeedForward, error) {
	if s == nil {
		return nil, fmt.Errorf("layers: feed-forward: scope is nil")
	}
	fail := func(format string, a ...any) (*FeedForward, error) {
		return nil, fmt.Errorf("layers: feed-forward %q: %s", s.Path(), fmt.Sprintf(format, a...))
	}
	if cfg.DIn <= 0 {
		return fail("DIn = %d, want > 0", cfg.DIn)
	}
	if cfg.Hidden == 0 {
		cfg.Hidden = 4 * cfg.DIn
	}
	if cfg.Hidden < 0 {
		return fail("Hidden = %d, want > 0 (0 means 4*DIn)", cfg.Hidden)
	}
	if cfg.DOut == 0 {
		cfg.DOut = cfg.DIn
	}
	if cfg.DOut < 0 {
		return fail("DOut = %d, want > 0 (0 means DIn)", cfg.DOut)
	}
	if err := bounds.Elements(bounds.Term{What: "DIn·Hidden (w1)", Dims: []int{cfg.DIn, cfg.Hidden}},
		bounds.Term{What: "Hidden·DOut (w2)", Dims: []int{cfg.Hidden, cfg.DOut}}); err != nil {
		return fail("%v", err)
	}
	if cfg.Activation == "" {
		cfg.Activation = ActivationGELU
	}
	switch cfg.Activation {
	case ActivationReLU, ActivationGELU, ActivationIdentity:
	default:
		return fail("Activation = %q, want %q, %q or %q", cfg.Activation, ActivationReLU, ActivationGELU, ActivationIdentity)
	}
	if cfg.WInit == nil {
		cfg.WInit = graph.GlorotUniform()
	}
	if cfg.BInit == nil {
		cfg.BInit = graph.Zeros()
	}
	f := &FeedForward{cfg: cfg, s: s}
	var err error
	if f.w1, err = s.Param("w1", tensor.Shape{cfg.DIn, cfg.Hidden}, cfg.WInit); err != nil {
		return fail("%v", err)
	}
	if f.b1, err = s.Param("b1", tensor.Shape{cfg.Hidden}, cfg.BInit); err != nil {
		return fail("%v", err)
	}
	if f.w2, err = s.Param("w2", tensor.Shape{cfg.Hidden, cfg.DOut}, cfg.WInit); err != nil {
		return fail("%v", err)
	}
	if f.b2, err = s.Param("b2", tensor.Shape{cfg.DOut}, cfg.BInit); err != nil {
		return fail("%v", err)
	}
	return f, nil
}

// Config returns the configuration with defaults filled in.
func (f *FeedForward) Config() FeedForwardConfig { return f.cfg }

// Params returns [w1, b1, w2, b2].
func (f *FeedForward) Params() G.Nodes { return G.Nodes{f.w1, f.b1, f.w2, f.b2} }

// Forward maps x of shape (..., DIn) — typically (B, T, DIn) or (B*T, DIn);
// rank >= 2 — to (..., DOut).
func (f *FeedForward) Forward(x *G.Node) (y *G.Node, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("layers: feed-forward %q: %w", f.s.Path(), err)
		}
	}()
	defer graph.Recover(&err)
	if err := checkLastDim(x, f.cfg.DIn, f.s.Dtype()); err != nil {
		return nil, err
	}
	shape := x.Shape().Clone()
	n := shape.TotalSize() / f.cfg.DIn
	x2 := x
	if len(shape) != 2 {
		x2 = G.Must(ops.Reshape(x, tensor.Shape{n, f.cfg.DIn})) // (N, DIn)
	}
	b1 := G.Must(ops.Reshape(f.b1, tensor.Shape{1, f.cfg.Hidden}))           // (1, H)
	h := G.Must(G.BroadcastAdd(G.Must(G.Mul(x2, f.w1)), b1, nil, []byte{0})) // (N, H)
	h = f.activate(h)                                                        // (N, H)
	b2 := G.Must(ops.Reshape(f.b2, tensor.Shape{1, f.cfg.DOut}))             // (1, DOut)
	y = G.Must(G.BroadcastAdd(G.Must(G.Mul(h, f.w2)), b2, nil, []byte{0}))   // (N, DOut)
	if len(shape) != 2 {
		out := shape.Clone()
		out[len(out)-1] = f.cfg.DOut
		y = G.Must(ops.Reshape(y, out)) // (..., DOut)
	}
	return y, nil
}

// activate applies the configured activation elementwise (panics with an
// error on graph failures; called under graph.Recover).
func (f *FeedForward) activate(h *G.Node) *G.Node {
	switch f.cfg.Activation {
	case ActivationReLU:
		return G.Must(G.Rectify(h))
	case ActivationGELU:
		// x σ(k (x + c x³)), k = 2√(2/π), c = 0.044715: one fused op,
		// the values of Gorgonia's chain of ops bit for bit.
		return G.Must(ops.GELU(h))
	}
	return h // identity
}
