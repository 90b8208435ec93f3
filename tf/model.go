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

// Config describes a Trained TF (Section 4). Zero fields take the documented
// defaults; [Config.Validate] fills them in. Configs are saved as JSON with
// the keys of the field tags (see "Config schema" in the package
// documentation); [Config.UnmarshalJSON] refuses unknown keys.
type Config struct {
	D      int `json:"d"`       // covariate dimension d (required)
	DPrime int `json:"d_prime"` // latent/embedding dimension d' (required)
	C      int `json:"c"`       // number of categories (required)
	N      int `json:"n"`       // context size; every sequence has T = N+1 positions (required)

	// Layers is the number of attention layers (default len(Init.Blocks)
	// with Init, else 1).
	Layers int `json:"layers"`
	// Heads is the number of self-attention heads per layer (default the
	// most heads HeadKernels or a block of Init names, at least 1).
	Heads int `json:"heads"`

	// Kernel is the heads' kernel, a value (see layers.KernelSpec): every
	// head builds its own instance in its scope, so each head owns its
	// parameters (for a built-in "layer<l>/head<h>/log_gamma", g, learned
	// unless the spec is .Fixed()). nil means layers.Softmax(1).
	Kernel layers.KernelSpec `json:"kernel"`
	// HeadKernels[h], when not nil, is the kernel of head h in every layer
	// instead of Kernel. The interleaved GD start needs it: its erase head
	// (head 1) works on λ-scaled inputs with a kernel that tends to the
	// Kronecker delta, HeadKernels = {nil, layers.RBF(1)}.
	HeadKernels []layers.KernelSpec `json:"head_kernels"`

	// Cross adds, after each self-attention layer, a cross-attention layer
	// against W_e (Section 3.3) with a skip connection, as in the blocks of
	// the interleaved GD model. Tokens then use the layers.FormInterleaved
	// layout (x, w_{e,y}, w̄_e, 0) of width d + 3d'; otherwise the
	// layers.FormOneStep layout (x, w_{e,y} − w̄_e, 0) of width d + 2d'.
	Cross bool `json:"cross"`

	// DK is the query/key width of every self-attention head (default the
	// token width, as the paper's square matrices). Values and head outputs
	// are always token-wide.
	DK int `json:"dk"`

	// Init, when not nil, starts the model at the given matrices instead of
	// random ones (see the package documentation): layer l takes
	// Init.Blocks[l] (one block per layer), head h of it Heads[h] (heads
	// beyond start silent, P = 0), its cross-attention Cross (required with
	// Cross, refused without), and the readout R Init.Readout (if set). A
	// W_Q or W_K narrower than DK is zero-filled; a wider one must be zero
	// beyond DK. gd.Construction builds the GD construction: the model then
	// computes exactly what the GD model computes. Init is a starting value
	// only and is not saved with the config.
	Init *layers.Construction `json:"-"`

	// ZeroColumn fixes the first column of W_e at zero (W_e then has C−1
	// free columns), as in gd.Config.
	ZeroColumn bool `json:"zero_column"`

	// WInit initialises every attention matrix and the readout R (unless
	// Init overwrites them); nil means graph.GlorotUniform(), drawn from the
	// scope's seeded generator (the paper's Glorot initialisation).
	WInit graph.Initializer `json:"-"`
	// WeInit initialises W_e; nil means N(0, 1), as in gd.Config.
	WeInit graph.Initializer `json:"-"`

	// RegroupQuery computes the last layer's values at the query as
	// (Σ_i w_i z_i)·(W_V P) per sequence instead of (z_i W_V P) at every
	// context position (layers.AttentionConfig.RegroupQuery,
	// ops.AttentionHeadQueryRegrouped): the value side then costs
	// O(B·N·D) instead of O(B·N·D²) forward and backward. The function is
	// the same; the sums run in another order, so the loss and gradients
	// differ from the default's in the last bits (float64 about 1e-15,
	// float32 about 1e-7 relative) and a training run drifts from the
	// default's like a run on another machine. Off by default: the
	// examples' outputs are pinned to the default order.
	RegroupQuery bool `json:"regroup_query,omitempty"`
}

// Validate fills defaults and checks cfg, returning the completed config.
// Errors name the offending field.
func (cfg Config) Validate() (Config, error) {
	fail := func(format string, a ...any) (Config, error) {
		return cfg, fmt.Errorf("tf: config: %s", fmt.Sprintf(format, a...))
	}
	switch {
	case cfg.D <= 0:
		return fail("D = %d, want > 0", cfg.D)
	case cfg.DPrime <= 0:
		return fail("DPrime = %d, want > 0", cfg.DPrime)
	case cfg.C < 2:
		return fail("C = %d, want at least 2 categories", cfg.C)
	case cfg.N <= 0:
		return fail("N = %d, want at least one context example", cfg.N)
	}
	if err := bounds.Each(bounds.Term{What: "D", Dims: []int{cfg.D}}, bounds.Term{What: "DPrime", Dims: []int{cfg.DPrime}},
		bounds.Term{What: "C", Dims: []int{cfg.C}}, bounds.Term{What: "N", Dims: []int{cfg.N}}, bounds.Term{What: "DK", Dims: []int{cfg.DK}}); err != nil {
		return fail("%v", err)
	}
	if cfg.Layers == 0 {
		cfg.Layers = 1
		if cfg.Init != nil && len(cfg.Init.Blocks) > 0 {
			cfg.Layers = len(cfg.Init.Blocks)
		}
	}
	if cfg.Layers < 0 {
		return fail("Layers = %d, want > 0", cfg.Layers)
	}
	if cfg.Heads == 0 {
		cfg.Heads = max(1, len(cfg.HeadKernels))
		if cfg.Init != nil {
			for _, b := range cfg.Init.Blocks {
				cfg.Heads = max(cfg.Heads, len(b.Heads))
			}
		}
	}
	if cfg.Heads < 0 {
		return fail("Heads = %d, want > 0", cfg.Heads)
	}
	if err := bounds.Units("Layers·Heads", cfg.Layers, cfg.Heads); err != nil {
		return fail("%v", err)
	}
	if cfg.Kernel == nil {
		cfg.Kernel = layers.Softmax(1)
	}
	if err := layers.CheckKernel(cfg.Kernel); err != nil {
		return fail("Kernel: %v", err)
	}
	if len(cfg.HeadKernels) > cfg.Heads {
		return fail("HeadKernels has %d kernels for Heads = %d", len(cfg.HeadKernels), cfg.Heads)
	}
	for h, k := range cfg.HeadKernels {
		if k == nil {
			continue
		}
		if err := layers.CheckKernel(k); err != nil {
			return fail("HeadKernels[%d]: %v", h, err)
		}
	}
	if cfg.DK == 0 {
		cfg.DK = cfg.TokenDim()
	}
	if cfg.DK < 0 {
		return fail("DK = %d, want > 0", cfg.DK)
	}
	if cfg.Init != nil {
		if err := cfg.checkInit(); err != nil {
			return fail("%v", err)
		}
	}
	if cfg.WInit == nil {
		cfg.WInit = graph.GlorotUniform()
	}
	if cfg.WeInit == nil {
		cfg.WeInit = graph.Normal(1)
	}
	return cfg, nil
}

// checkSizes checks what a model of the validated cfg allocates for
// minibatches of batch contexts against the limits of internal/bounds
// (2^31 elements per tensor, graph.MaxElements, and 2^34 in all), before
// anything is built.
func (cfg Config) checkSizes(batch int) error {
	if batch <= 0 {
		return fmt.Errorf("tf: batch = %d, want > 0", batch)
	}
	T, D, dp, L, H := cfg.N+1, cfg.TokenDim(), cfg.DPrime, cfg.Layers, cfg.Heads
	// The largest attention matrix: W_Q and W_K are D×DK, W_V and P D×D.
	attn, attnDims := "D·D", []int{D, D}
	if cfg.DK > D {
		attn, attnDims = "D·DK", []int{D, cfg.DK}
	}
	if err := bounds.Elements(
		bounds.Term{What: "batch", Dims: []int{batch}},
		bounds.Term{What: "batch·(N+1)·C (labels)", Dims: []int{batch, T, cfg.C}},
		bounds.Term{What: "(Layers+1)·batch·(N+1)·D (tokens)", Dims: []int{L + 1, batch, T, D},
			Tensor: "batch·(N+1)·D", TensorDims: []int{batch, T, D}},
		bounds.Term{What: "Layers·Heads·batch·(N+1)·N (kernel weights)", Dims: []int{L, H, batch, T, cfg.N},
			Tensor: "batch·(N+1)·N", TensorDims: []int{batch, T, cfg.N}},
		bounds.Term{What: "Layers·Heads·D·(2·DK+2·D) (attention matrices)", Dims: []int{L, H, D, 2*cfg.DK + 2*D},
			Tensor: attn, TensorDims: attnDims},
		// W_Q is D×DPrime, P DPrime×D, W_K and W_V DPrime×DPrime (D > DPrime);
		// the readout is D×DPrime too.
		bounds.Term{What: "Layers·(2·D+2·DPrime)·DPrime (cross-attention)", Dims: []int{L, 2*D + 2*dp, dp},
			Tensor: "D·DPrime", TensorDims: []int{D, dp}},
		bounds.Term{What: "DPrime·C (we)", Dims: []int{dp, cfg.C}},
	); err != nil {
		return fmt.Errorf("tf: config: %w", err)
	}
	return nil
}

// checkInit checks Init against the model's shapes.
func (cfg Config) checkInit() error {
	c := cfg.Init
	if err := c.Validate(); err != nil {
		//lint:ignore ST1005 the message starts with the Config field's name, Init; callers prefix "tf: config: "
		return fmt.Errorf("Init: %v", err)
	}
	if len(c.Blocks) != cfg.Layers {
		//lint:ignore ST1005 the message starts with the Config field's name, Init; callers prefix "tf: config: "
		return fmt.Errorf("Init has %d blocks for Layers = %d", len(c.Blocks), cfg.Layers)
	}
	D, dp := cfg.TokenDim(), cfg.DPrime
	for l, b := range c.Blocks {
		if len(b.Heads) > cfg.Heads {
			return fmt.Errorf("Init.Blocks[%d] has %d heads for Heads = %d", l, len(b.Heads), cfg.Heads)
		}
		for h, hm := range b.Heads {
			for _, m := range []struct {
				name       string
				m          layers.Matrix
				rows, cols int
			}{{"WQ", hm.WQ, D, cfg.DK}, {"WK", hm.WK, D, cfg.DK}, {"WV", hm.WV, D, D}, {"P", hm.P, D, D}} {
				if err := fits(m.m, m.rows, m.cols); err != nil {
					return fmt.Errorf("Init.Blocks[%d].Heads[%d].%s: %v", l, h, m.name, err)
				}
			}
		}
		switch {
		case cfg.Cross && b.Cross == nil:
			return fmt.Errorf("Init.Blocks[%d].Cross is nil, and Cross is set", l)
		case !cfg.Cross && b.Cross != nil:
			return fmt.Errorf("Init.Blocks[%d].Cross is set, and Cross is not", l)
		case b.Cross != nil:
			for _, m := range []struct {
				name       string
				m          layers.Matrix
				rows, cols int
			}{{"WQ", b.Cross.WQ, D, dp}, {"WK", b.Cross.WK, dp, dp}, {"WV", b.Cross.WV, dp, dp}, {"P", b.Cross.P, dp, D}} {
				if err := fits(m.m, m.rows, m.cols); err != nil {
					return fmt.Errorf("Init.Blocks[%d].Cross.%s: %v", l, m.name, err)
				}
			}
		}
	}
	if c.Readout.Data != nil {
		if err := fits(c.Readout, D, dp); err != nil {
			return fmt.Errorf("Init.Readout: %v", err)
		}
	}
	return nil
}

// fits reports whether m can start a rows×cols parameter: the same number
// of rows, and zeros beyond cols (a narrower m is zero-filled).
func fits(m layers.Matrix, rows, cols int) error {
	if m.Rows != rows {
		return fmt.Errorf("is %dx%d, want %d rows", m.Rows, m.Cols, rows)
	}
	for i := 0; i < m.Rows; i++ {
		for j := cols; j < m.Cols; j++ {
			if m.At(i, j) != 0 {
				return fmt.Errorf("is %dx%d and does not fit in %d columns (entry (%d, %d) = %v)", m.Rows, m.Cols, cols, i, j, m.At(i, j))
			}
		}
	}
	return nil
}

// TokenDim is the token width: d + 3d' with Cross (layers.FormInterleaved
// layout), d + 2d' without (layers.FormOneStep layout).
func (cfg Config) TokenDim() int { return cfg.Form().TokenDim(cfg.D, cfg.DPrime) }

// Form is the token layout the model uses.
func (cfg Config) Form() layers.TokenForm {
	if cfg.Cross {
		return layers.FormInterleaved
	}
	return layers.FormOneStep
}

// encoderConfig is the configuration of the model's token encoder (the
// encoder of the GD models).
func (cfg Config) encoderConfig() layers.EncoderConfig {
	return layers.EncoderConfig{Form: cfg.Form(), D: cfg.D, DPrime: cfg.DPrime, C: cfg.C, N: cfg.N,
		ZeroColumn: cfg.ZeroColumn, WeInit: cfg.WeInit}
}

// headKernel is the kernel spec of head h.
func (cfg Config) headKernel(h int) layers.KernelSpec {
	if h < len(cfg.HeadKernels) && cfg.HeadKernels[h] != nil {
		return cfg.HeadKernels[h]
	}
	return cfg.Kernel
}

// Block is one layer of the Trained TF on tokens z (B, T, D):
//
//	z ← z + Σ_h head_h(z)        (self-attention, ContextKeys)
//	z ← z + cross(z)             (cross-attention against W_e, if Cross)
//
// Every matrix is a trainable parameter.
type Block struct {
	// Heads are the self-attention heads (ContextKeys), each with its own
	// kernel parameter.
	Heads []*layers.Attention
	// Cross is the cross-attention layer, nil without Cross.
	Cross *layers.CrossAttention

	s *graph.Scope
}

var _ layers.Layer = (*Block)(nil)

// Forward maps tokens (B, T, D) to the block's output tokens (B, T, D).
func (b *Block) Forward(z *G.Node) (out *G.Node, err error) {
	defer graph.Recover(&err)
	var sum *G.Node
	for _, h := range b.Heads {
		o, err := h.Forward(z) // (B, T, D)
		if err != nil {
			return nil, err
		}
		if sum == nil {
			sum = o
		} else {
			sum = G.Must(G.Add(sum, o))
		}
	}
	z = G.Must(G.Add(z, sum)) // (B, T, D)
	if b.Cross != nil {
		c, err := b.Cross.Forward(z) // (B, T, D)
		if err != nil {
			return nil, err
		}
		z = G.Must(G.Add(z, c))
	}
	return z, nil
}

// ForwardQuery maps tokens z (B, T, D) to the block's output token at the
// last position (the query), (B, 1, D): the same numbers as the last row of
// Forward's output, with each head's attention computed for that row only
// (layers.Attention.ForwardQuery) and the cross-attention, which reads each
// position's token alone, applied to that row only.
func (b *Block) ForwardQuery(z *G.Node) (out *G.Node, err error) {
	defer graph.Recover(&err)
	T := z.Shape()[1]
	var sum *G.Node
	for _, h := range b.Heads {
		o, err := h.ForwardQuery(z) // (B, 1, D)
		if err != nil {
			return nil, err
		}
		if sum == nil {
			sum = o
		} else {
			sum = G.Must(G.Add(sum, o))
		}
	}
	zq := G.Must(G.Add(G.Must(ops.Slice(z, 1, T-1, T)), sum)) // (B, 1, D)
	if b.Cross == nil {
		return zq, nil
	}
	c, err := b.Cross.Forward(zq) // (B, 1, D)
	if err != nil {
		return nil, err
	}
	return G.Add(zq, c)
}

// Params lists the block's parameters: every head's kernel parameter and
// matrices, then the cross-attention matrices.
func (b *Block) Params() G.Nodes { return b.s.Params() }

// Model is a Trained TF built for minibatches of a fixed size: the GD
// models' token encoder, Layers blocks, a learned readout R and the softmax
// likelihood head with W_e.
//
// Trainable parameters (under the model's scope): "we" (W_e, shared by the
// encoder and the head), for each layer l and head h "layer<l>/head<h>/wq",
// "wk", "wv", "wo" (W_Q, W_K, W_V, P) and the head's kernel parameters
// under "layer<l>/head<h>/" ("log_gamma" for a learnable built-in), with Cross
// "layer<l>/cross/wq", "wk", "wv", "wo", and "readout/r" (R). Nothing is tied
// except W_e, which the tokens, the cross-attention keys and values, and the
// likelihood head all use.
type Model struct {
	Cfg   Config
	Batch int

	// X (B, T, d), Labels (B·T ids: the context labels, −1 at the query)
	// and Target (B, C) one-hot of the query label are the inputs; Feed
	// fills them.
	X, Labels, Target *G.Node
	// We is W_e (d', C) as used by the model (with the zero column if any).
	We *G.Node
	// Blocks are the model's layers.
	Blocks []*Block
	// Tokens[0] is the encoder's token tensor (B, T, D) and Tokens[l+1] the
	// output of block l. The logits read the last layer at the query only
	// (QueryToken), so a machine computes Tokens[L] only when asked: list
	// it in graph.MachineOptions.Outputs (or use Trace) to read it after a
	// run. Gorgonia reuses the memory of the earlier ones.
	Tokens []*G.Node
	// QueryToken is the last layer's output at the query (B, 1, D), the
	// last row of Tokens[L], computed by Block.ForwardQuery: the last
	// layer's heads attend from the query alone, and its cross-attention
	// reads that row alone.
	QueryToken *G.Node
	// R is the readout (D, d'): FQuery = QueryToken·R.
	R *G.Node
	// FQuery is f at the query (B, d'); Logits = FQuery·W_e (B, C).
	FQuery, Logits *G.Node

	s   *graph.Scope
	enc *layers.Encoder
}

// NewModel builds the model's graph in s for minibatches of batch contexts.
func NewModel(s *graph.Scope, cfg Config, batch int) (m *Model, err error) {
	if s == nil {
		return nil, fmt.Errorf("tf: model: scope is nil")
	}
	if cfg, err = cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.checkSizes(batch); err != nil {
		return nil, err
	}
	m = &Model{Cfg: cfg, Batch: batch, s: s}
	if err := m.build(); err != nil {
		return nil, fmt.Errorf("tf: model %q: %w", s.Path(), err)
	}
	return m, nil
}

func (m *Model) build() (err error) {
	defer graph.Recover(&err)
	cfg, s := m.Cfg, m.s
	B, D, dp := m.Batch, cfg.TokenDim(), cfg.DPrime
	enc, err := layers.NewEncoder(s, cfg.encoderConfig(), B)
	if err != nil {
		return err
	}
	m.enc = enc
	m.X, m.Labels, m.Target, m.We = enc.X, enc.Labels, enc.Target, enc.We
	z := enc.Tokens // (B, T, D)
	m.Tokens = append(m.Tokens, z)
	for l := 0; l < cfg.Layers; l++ {
		b, err := m.newBlock(s.Sub(fmt.Sprintf("layer%d", l)))
		if err != nil {
			return err
		}
		m.Blocks = append(m.Blocks, b)
		zin := z
		if z, err = b.Forward(z); err != nil {
			return err
		}
		m.Tokens = append(m.Tokens, z)
		if l == cfg.Layers-1 {
			if m.QueryToken, err = b.ForwardQuery(zin); err != nil { // (B, 1, D)
				return err
			}
		}
	}
	if m.R, err = s.Sub("readout").Param("r", tensor.Shape{D, dp}, cfg.WInit); err != nil {
		return err
	}
	q := G.Must(ops.Reshape(m.QueryToken, tensor.Shape{B, D})) // (B, D): query tokens
	m.FQuery = G.Must(ops.MatMul(q, m.R, false, false))        // (B, d')
	head, err := layers.NewSoftmaxHead(m.We)
	if err != nil {
		return err
	}
	if m.Logits, err = head.Forward(m.FQuery); err != nil { // (B, C)
		return err
	}
	if cfg.Init != nil {
		return m.applyInit(cfg.Init)
	}
	return nil
}

func (m *Model) newBlock(bs *graph.Scope) (*Block, error) {
	cfg := m.Cfg
	D := cfg.TokenDim()
	b := &Block{s: bs}
	for h := 0; h < cfg.Heads; h++ {
		hs := bs.Sub(fmt.Sprintf("head%d", h))
		kern, bk, err := layers.InstantiateKernel(hs, cfg.headKernel(h))
		if err != nil {
			return nil, err
		}
		ac := layers.AttentionConfig{DIn: D, DK: cfg.DK, DV: D, DOut: D, Keys: layers.ContextKeys, WInit: cfg.WInit, RegroupQuery: cfg.RegroupQuery}
		if bk != nil {
			ac.Builtin = bk // the fused head
		} else {
			ac.Kernel = kern
		}
		att, err := layers.NewAttention(hs, ac)
		if err != nil {
			return nil, err
		}
		b.Heads = append(b.Heads, att)
	}
	if cfg.Cross {
		c, err := layers.NewCrossAttention(bs.Sub("cross"), layers.CrossAttentionConfig{
			DIn: D, DPrime: cfg.DPrime, We: m.We, LearnKV: true, WInit: cfg.WInit,
		})
		if err != nil {
			return nil, err
		}
		b.Cross = c
	}
	return b, nil
}

// applyInit overwrites the random initial values with the matrices of c
// (checked against the shapes by Config.Validate).
func (m *Model) applyInit(c *layers.Construction) error {
	D := m.Cfg.TokenDim()
	set := func(n *G.Node, mat layers.Matrix) error {
		// n is (mat.Rows, c). A narrower n (a D×DK query/key parameter with
		// DK < D) takes mat's first c columns (mat is zero beyond them: the
		// construction's W_Q, W_K only use the first d); a wider one is
		// zero-filled.
		r, c := n.Shape()[0], n.Shape()[1]
		vals := make([]float64, r*c)
		for i := 0; i < r; i++ {
			for j := 0; j < min(c, mat.Cols); j++ {
				vals[i*c+j] = mat.At(i, j)
			}
		}
		if err := graph.SetValue(n, vals); err != nil {
			return fmt.Errorf("tf: Init: %q: %w", n.Name(), err)
		}
		return nil
	}
	for l, b := range m.Blocks {
		bm := c.Blocks[l]
		for h, a := range b.Heads {
			wq, wk, wv, p := a.Matrices()
			if h >= len(bm.Heads) {
				// Silent, but trainable.
				if err := graph.SetValue(p, make([]float64, D*D)); err != nil {
					return err
				}
				continue
			}
			hm := bm.Heads[h]
			for _, x := range []struct {
				n   *G.Node
				mat layers.Matrix
			}{{wq, hm.WQ}, {wk, hm.WK}, {wv, hm.WV}, {p, hm.P}} {
				if err := set(x.n, x.mat); err != nil {
					return err
				}
			}
		}
		if bm.Cross != nil {
			cp := b.Cross.Params() // wq, wk, wv, wo in creation order
			for i, mat := range []layers.Matrix{bm.Cross.WQ, bm.Cross.WK, bm.Cross.WV, bm.Cross.P} {
				if err := set(cp[i], mat); err != nil {
					return err
				}
			}
		}
	}
	if c.Readout.Data != nil {
		return set(m.R, c.Readout)
	}
	return nil
}

// Scope is the scope holding the model's parameters.
func (m *Model) Scope() *graph.Scope { return m.s }

// Encoder is the token encoder (shared with the GD models).
func (m *Model) Encoder() *layers.Encoder { return m.enc }

// T is the number of positions per sequence, N+1.
func (m *Model) T() int { return m.Cfg.N + 1 }

// Feed copies one minibatch into the model's inputs: x is (B, T, d) and y is
// (B, T) with context labels in 0..C-1 and the query label last (the
// training target, -1 when unknown). Errors are layers.Encoder.Feed's.
func (m *Model) Feed(x []float64, y []int) error { return m.enc.Feed(x, y) }

// FeedContexts loads the minibatch of contexts rows[k] of a larger set (x
// (n, T, d), y (n, T)) without copying them out first; see
// [layers.Encoder.FeedContexts].
func (m *Model) FeedContexts(x []float64, y []int, rows []int) error {
	return m.enc.FeedContexts(x, y, rows)
}

// PrepareContexts checks a set of contexts (x (n, T, d), y (n, T)) once and
// copies it in the model's dtype for [Model.FeedPrepared]; see
// [layers.Encoder.PrepareContexts].
func (m *Model) PrepareContexts(x []float64, y []int) (*layers.Contexts, error) {
	if m == nil {
		return nil, fmt.Errorf("tf: PrepareContexts: the model is nil")
	}
	return m.enc.PrepareContexts(x, y)
}

// FeedPrepared loads the minibatch of contexts rows[k] of a prepared set
// without checking or converting them again; see
// [layers.Encoder.FeedPrepared]. train.Runner.Fit feeds its shuffled
// minibatches with it.
func (m *Model) FeedPrepared(s *layers.Contexts, rows []int) error {
	if m == nil {
		return fmt.Errorf("tf: FeedPrepared: the model is nil")
	}
	return m.enc.FeedPrepared(s, rows)
}

// Params lists the model's trainable parameters in creation order: W_e,
// then each layer's heads (log_gamma, wq, wk, wv, wo) and cross-attention
// (wq, wk, wv, wo), then the readout R.
func (m *Model) Params() G.Nodes { return m.s.Params() }

// ParamCount splits a model's trainable scalars.
type ParamCount struct {
	// Attention counts the attention parameters: every head's W_Q, W_K,
	// W_V, P and kernel parameter, and the cross-attention matrices.
	Attention int
	// Other counts the rest: W_e (its free columns) and the readout R.
	Other int
}

// Total is Attention + Other.
func (c ParamCount) Total() int { return c.Attention + c.Other }

// NumParams counts the model's trainable scalars, split into attention
// parameters and the rest.
func (m *Model) NumParams() ParamCount {
	var c ParamCount
	att := map[*G.Node]bool{}
	for _, b := range m.Blocks {
		for _, p := range b.Params() {
			att[p] = true
		}
	}
	for _, p := range m.Params() {
		n := p.Shape().TotalSize()
		if len(p.Shape()) == 0 {
			n = 1
		}
		if att[p] {
			c.Attention += n
		} else {
			c.Other += n
		}
	}
	return c
}
