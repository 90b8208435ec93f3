package tf

import (
	"fmt"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/bounds"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RegressorConfig describes a Trained TF for real-valued targets (the
// regression setting of Appendix G and of von Oswald et al., ICML 2023).
// Zero fields take the documented defaults.
//
// Configs are saved as JSON with the keys of the field tags ("kernel" in
// its layers JSON form); WInit is not saved.
type RegressorConfig struct {
	D  int `json:"d"`   // covariate dimension d (required)
	DY int `json:"d_y"` // target dimension d_y (required)
	N  int `json:"n"`   // context size; sequences have T = N+1 positions (required)
	// Layers is the number of self-attention layers (default 1); Heads the
	// heads per layer (default 1).
	Layers int `json:"layers"`
	Heads  int `json:"heads"`
	// Kernel is every head's kernel; nil means layers.Linear(): linear
	// self-attention, κ(q, k) = q·k, unnormalised, as in von Oswald et al.
	// layers.Softmax(1) gives softmax attention over the context keys.
	Kernel layers.KernelSpec `json:"kernel"`
	// WInit initialises W_Q, W_K, W_V, P and the readout R; nil means
	// graph.GlorotUniform() from the scope's seeded generator. For linear
	// attention with several layers a small initialisation such as
	// graph.Normal(0.02) trains far more reliably (the output is cubic in
	// the weights per layer).
	WInit graph.Initializer `json:"-"`
}

// Validate fills defaults and checks cfg, returning the completed config.
func (cfg RegressorConfig) Validate() (RegressorConfig, error) {
	fail := func(format string, a ...any) (RegressorConfig, error) {
		return cfg, fmt.Errorf("tf: regressor config: %s", fmt.Sprintf(format, a...))
	}
	switch {
	case cfg.D <= 0:
		return fail("D = %d, want > 0", cfg.D)
	case cfg.DY <= 0:
		return fail("DY = %d, want > 0", cfg.DY)
	case cfg.N <= 0:
		return fail("N = %d, want at least one context example", cfg.N)
	case cfg.Layers < 0:
		return fail("Layers = %d, want > 0", cfg.Layers)
	case cfg.Heads < 0:
		return fail("Heads = %d, want > 0", cfg.Heads)
	}
	if err := bounds.Each(bounds.Term{What: "D", Dims: []int{cfg.D}}, bounds.Term{What: "DY", Dims: []int{cfg.DY}},
		bounds.Term{What: "N", Dims: []int{cfg.N}}); err != nil {
		return fail("%v", err)
	}
	cfg.Layers, cfg.Heads = max(cfg.Layers, 1), max(cfg.Heads, 1)
	if err := bounds.Units("Layers·Heads", cfg.Layers, cfg.Heads); err != nil {
		return fail("%v", err)
	}
	if cfg.Kernel == nil {
		cfg.Kernel = layers.Linear()
	}
	if err := layers.CheckKernel(cfg.Kernel); err != nil {
		return fail("Kernel: %v", err)
	}
	if cfg.WInit == nil {
		cfg.WInit = graph.GlorotUniform()
	}
	return cfg, nil
}

// TokenDim is the token width d + 2d_y: e_i = (x_i, y_i, 0), the layout of
// the Gaussian GD model's tokens (x, y, f).
func (cfg RegressorConfig) TokenDim() int { return cfg.D + 2*cfg.DY }

// Regressor is an unconstrained attention model on the tokens
// e_i = (x_i, y_i, 0) (the query's y is 0): Layers residual layers
// z ← z + Σ_h head_h(z), each head a kernel attention with learned W_Q, W_K,
// W_V (D×D) and P (D×D) over the N context keys, then a learned readout R
// (D×d_y) of the query's token: ŷ = z_{N+1} R. A Gaussian GD model with
// K steps is one such model with K layers (its construction's matrices).
// Parameters: "layer<l>/head<h>/{wq,wk,wv,wo}" (and the kernel's, e.g.
// "layer<l>/head<h>/log_gamma"), "readout".
//
// *Regressor is a train.RealValuedModel: train.Runner trains it by the
// mean squared error of ŷ.
type Regressor struct {
	Cfg   RegressorConfig
	Batch int
	s     *graph.Scope
	// X (B, T, d), Y (B, T, d_y) (query row zero) and Target (B, d_y) are
	// the inputs FeedReal fills; Pred is ŷ (B, d_y).
	X, Y, Target, Pred *G.Node
	// Tokens[l] is the token tensor (B, T, D) entering layer l+1; the last
	// is the output of the last layer.
	Tokens []*G.Node
}

// NewRegressor builds the model's graph in s for minibatches of batch
// contexts.
func NewRegressor(s *graph.Scope, cfg RegressorConfig, batch int) (m *Regressor, err error) {
	if s == nil {
		return nil, fmt.Errorf("tf: regressor: scope is nil")
	}
	if cfg, err = cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.checkSizes(batch); err != nil {
		return nil, err
	}
	defer graph.Recover(&err)
	m = &Regressor{Cfg: cfg, Batch: batch, s: s}
	if err := m.build(); err != nil {
		return nil, fmt.Errorf("tf: regressor %q: %w", s.Path(), err)
	}
	return m, nil
}

// checkSizes bounds what a model of the validated cfg allocates for
// minibatches of batch contexts.
func (cfg RegressorConfig) checkSizes(batch int) error {
	if batch <= 0 {
		return fmt.Errorf("tf: regressor: batch = %d, want > 0", batch)
	}
	T, D := cfg.N+1, cfg.TokenDim()
	if err := bounds.Elements(bounds.Term{What: "(Layers+1)·batch·(N+1)·D (tokens)", Dims: []int{cfg.Layers + 1, batch, T, D},
		Tensor: "batch·(N+1)·D", TensorDims: []int{batch, T, D}},
		bounds.Term{What: "Layers·Heads·batch·(N+1)·N (kernel weights)", Dims: []int{cfg.Layers, cfg.Heads, batch, T, cfg.N},
			Tensor: "batch·(N+1)·N", TensorDims: []int{batch, T, cfg.N}},
		bounds.Term{What: "Layers·Heads·4·D·D (attention matrices)", Dims: []int{cfg.Layers, cfg.Heads, 4, D, D},
			Tensor: "D·D", TensorDims: []int{D, D}}); err != nil {
		return fmt.Errorf("tf: regressor: %w", err)
	}
	return nil
}

func (m *Regressor) build() (err error) {
	cfg, s := m.Cfg, m.s
	B, T, d, dy, D := m.Batch, cfg.N+1, cfg.D, cfg.DY, cfg.TokenDim()
	var f0 *G.Node
	if m.X, m.Y, m.Target, f0, err = layers.RealInputs(s, B, T, d, dy); err != nil {
		return err
	}
	z := G.Must(ops.ConcatLast(m.X, m.Y, f0)) // (B, T, d+2d_y)
	m.Tokens = append(m.Tokens, z)
	for l := 0; l < cfg.Layers; l++ {
		var sum *G.Node
		for h := 0; h < cfg.Heads; h++ {
			hs := s.Sub(fmt.Sprintf("layer%d", l)).Sub(fmt.Sprintf("head%d", h))
			kern, bk, err := layers.InstantiateKernel(hs, cfg.Kernel)
			if err != nil {
				return err
			}
			ac := layers.AttentionConfig{DIn: D, DK: D, DV: D, DOut: D, Keys: layers.ContextKeys, WInit: cfg.WInit}
			if bk != nil {
				ac.Builtin = bk
			} else {
				ac.Kernel = kern
			}
			att, err := layers.NewAttention(hs, ac)
			if err != nil {
				return err
			}
			o, err := att.Forward(z) // (B, T, D)
			if err != nil {
				return err
			}
			if sum == nil {
				sum = o
			} else {
				sum = G.Must(G.Add(sum, o))
			}
		}
		z = G.Must(G.Add(z, sum))
		m.Tokens = append(m.Tokens, z)
	}
	R, err := s.Param("readout", tensor.Shape{D, dy}, cfg.WInit)
	if err != nil {
		return err
	}
	q := G.Must(ops.Reshape(G.Must(ops.Slice(z, 1, T-1, T)), tensor.Shape{B, D})) // (B, D)
	m.Pred = G.Must(ops.MatMul(q, R, false, false))                               // (B, d_y)
	return nil
}

// Scope is the scope holding the model's parameters.
func (m *Regressor) Scope() *graph.Scope { return m.s }

// Params lists the trainable parameters in creation order.
func (m *Regressor) Params() G.Nodes { return m.s.Params() }

// BatchSize is the number of contexts B of a minibatch.
func (m *Regressor) BatchSize() int { return m.Batch }

// QueryLogits is the prediction ŷ (B, d_y).
func (m *Regressor) QueryLogits() *G.Node { return m.Pred }

// QueryTarget is the query's target (B, d_y).
func (m *Regressor) QueryTarget() *G.Node { return m.Target }

// QueryLoss is nil: the runner trains the mean squared error.
func (m *Regressor) QueryLoss() *G.Node { return nil }

// RealValued reports true: the model predicts real-valued targets.
func (m *Regressor) RealValued() bool { return true }

// Feed returns an error: a regressor takes real-valued targets (FeedReal).
func (m *Regressor) Feed([]float64, []int) error {
	return fmt.Errorf("tf: regressor: Feed: the model predicts real-valued targets; use FeedReal")
}

// FeedReal copies one minibatch into the inputs: x (B, T, d), y (B, T, d_y)
// row-major with the query's target in the last row (NaN unknown; never
// shown to the model). Errors name the argument on a length mismatch or a
// NaN/±Inf in x or a context y.
func (m *Regressor) FeedReal(x, y []float64) error {
	B, T, d, dy := m.Batch, m.Cfg.N+1, m.Cfg.D, m.Cfg.DY
	if len(x) != B*T*d {
		return fmt.Errorf("tf: regressor: FeedReal: x has %d values, want B*T*d = %d", len(x), B*T*d)
	}
	if len(y) != B*T*dy {
		return fmt.Errorf("tf: regressor: FeedReal: y has %d values, want B*T*d_y = %d", len(y), B*T*dy)
	}
	return layers.FeedReal("tf: regressor: FeedReal", m.X, m.Y, m.Target, x, y, B, T, d, dy)
}
