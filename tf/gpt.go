package tf

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/bounds"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/lmio"
	"github.com/gdattn/gdattn/ops"
)

// GPTConfig describes a GPT-2-style language model, the Transformer baseline
// of Section 5.3 (nanoGPT's GPTConfig). Zero fields take the defaults.
// Configs are saved as JSON with the keys of the field tags (see "Config
// schema" in the package documentation); [GPTConfig.UnmarshalJSON] refuses
// unknown keys.
type GPTConfig struct {
	Vocab   int `json:"vocab"`   // number of token ids (required)
	Context int `json:"context"` // T, the context window (nanoGPT block_size; required)
	DModel  int `json:"d_model"` // embedding width d' (required)
	Heads   int `json:"heads"`   // attention heads (default 8); must divide DModel
	Layers  int `json:"layers"`  // blocks (default 1, as the paper)
	// FFHidden is the feed-forward hidden width (default 4·DModel).
	FFHidden int `json:"ff_hidden"`
}

// Validate fills defaults and checks cfg, returning the completed config.
func (cfg GPTConfig) Validate() (GPTConfig, error) {
	fail := func(format string, a ...any) (GPTConfig, error) {
		return cfg, fmt.Errorf("tf: gpt config: %s", fmt.Sprintf(format, a...))
	}
	if cfg.Vocab < 2 {
		return fail("Vocab = %d, want at least 2 tokens", cfg.Vocab)
	}
	if cfg.Context <= 0 || cfg.DModel <= 0 {
		return fail("Context = %d, DModel = %d, want both > 0", cfg.Context, cfg.DModel)
	}
	if err := bounds.Each(bounds.Term{What: "Vocab", Dims: []int{cfg.Vocab}}, bounds.Term{What: "Context", Dims: []int{cfg.Context}},
		bounds.Term{What: "DModel", Dims: []int{cfg.DModel}}, bounds.Term{What: "FFHidden", Dims: []int{cfg.FFHidden}}); err != nil {
		return fail("%v", err)
	}
	if cfg.Heads == 0 {
		cfg.Heads = 8
	}
	if cfg.Layers == 0 {
		cfg.Layers = 1
	}
	if cfg.FFHidden == 0 {
		cfg.FFHidden = 4 * cfg.DModel
	}
	if cfg.Heads < 0 || cfg.Layers < 0 || cfg.FFHidden < 0 {
		return fail("Heads = %d, Layers = %d, FFHidden = %d, want all > 0", cfg.Heads, cfg.Layers, cfg.FFHidden)
	}
	if err := bounds.Units("Layers·Heads", cfg.Layers, cfg.Heads); err != nil {
		return fail("%v", err)
	}
	if cfg.DModel%cfg.Heads != 0 {
		return fail("DModel = %d is not a multiple of Heads = %d", cfg.DModel, cfg.Heads)
	}
	return cfg, nil
}

// checkSizes checks what a GPT of the validated cfg allocates for
// minibatches of batch sequences against the limits of internal/bounds
// (2^31 elements per tensor, graph.MaxElements, and 2^34 in all), before
// anything is built.
func (cfg GPTConfig) checkSizes(batch int) error {
	if batch <= 0 {
		return fmt.Errorf("tf: gpt: batch = %d, want > 0", batch)
	}
	B, T, d, V, L, F := batch, cfg.Context, cfg.DModel, cfg.Vocab, cfg.Layers, cfg.FFHidden
	// The largest weight matrix of a block (the heads' projections are
	// DModel×DModel/Heads, the MLP's DModel×FFHidden) and activation.
	wt, wtDims, act, actDims := "DModel·DModel", []int{d, d}, "batch·Context·DModel", []int{B, T, d}
	if F > d {
		wt, wtDims, act, actDims = "DModel·FFHidden", []int{d, F}, "batch·Context·FFHidden", []int{B, T, F}
	}
	if err := bounds.Elements(
		bounds.Term{What: "batch", Dims: []int{B}},
		bounds.Term{What: "Vocab·DModel (wte)", Dims: []int{V, d}},
		bounds.Term{What: "Context·DModel (wpe)", Dims: []int{T, d}},
		bounds.Term{What: "batch·Context·Vocab (logits)", Dims: []int{B, T, V}},
		bounds.Term{What: "2·batch·Context·Context (causal mask)", Dims: []int{2, B, T, T},
			Tensor: "batch·Context·Context", TensorDims: []int{B, T, T}},
		bounds.Term{What: "Layers·Heads·batch·Context·Context (attention weights)", Dims: []int{L, cfg.Heads, B, T, T},
			Tensor: "batch·Context·Context", TensorDims: []int{B, T, T}},
		bounds.Term{What: "Layers·DModel·(4·DModel+2·FFHidden) (block weights)", Dims: []int{L, d, 4*d + 2*F},
			Tensor: wt, TensorDims: wtDims},
		bounds.Term{What: "Layers·batch·Context·(FFHidden+4·DModel) (activations)", Dims: []int{L, B, T, F + 4*d},
			Tensor: act, TensorDims: actDims},
	); err != nil {
		return fmt.Errorf("tf: gpt config: %w", err)
	}
	return nil
}

// GPTOptions says what graph [NewGPT] (and [LoadGPT], [GPTFromCheckpoint],
// [GPT.Rebuild]) builds from a configuration.
type GPTOptions struct {
	// Batch is the number B of sequences per run (required, >= 1).
	Batch int
	// Next builds the generation graph: NextLogits (B, C), the logits of
	// one position per sequence (chosen by FeedNext), instead of the
	// training graph's Logits (B·T, C) and Targets. A generation graph is
	// what train.NewGenerator and train.Generate take.
	Next bool
}

// GPTBlock is one pre-norm transformer block (nanoGPT's Block):
//
//	x ← x + attn(ln_1(x))      causal multi-head softmax attention
//	x ← x + mlp(ln_2(x))       feed-forward, hidden 4·d', GELU
//
// Each head is a [layers.Attention] with W_Q, W_K, W_V (d'×d'/H), its share
// of the output projection P (d'/H×d') and softmax kernel exp(q·k/√(d'/H))
// normalised over the keys i ≤ j: standard causal attention, in which a
// position sees itself. layers' CausalKeys mode is the paper's strictly
// earlier keys (i < j), so the heads use AllKeys with a kernel that applies
// the inclusive causal mask itself (kernels are values in package layers;
// no new key mode is needed). Summing the heads' outputs is the usual
// concatenate-then-project. Attention has no biases (nanoGPT bias=False);
// layer norms and the feed-forward layers have them.
type GPTBlock struct {
	s     *graph.Scope
	ln1   *layers.LayerNorm
	heads []*layers.Attention
	ln2   *layers.LayerNorm
	mlp   *layers.FeedForward
	attn  G.Nodes // the attention parameters
}

// newGPTBlock creates block parameters in s: "ln_1/…", "attn/head<h>/wq",
// "wk", "wv", "wo", "ln_2/…" and "mlp/w1", "b1", "w2", "b2".
func newGPTBlock(s *graph.Scope, cfg GPTConfig, mask *layers.Mask) (*GPTBlock, error) {
	d, H := cfg.DModel, cfg.Heads
	hd := d / H
	std := 0.02
	resid := graph.Normal(std / math.Sqrt(2*float64(cfg.Layers))) // nanoGPT: c_proj.weight
	b := &GPTBlock{s: s}
	var err error
	if b.ln1, err = layers.NewLayerNorm(s.Sub("ln_1"), layers.LayerNormConfig{Dim: d}); err != nil {
		return nil, err
	}
	softmax, err := layers.NewKernel(s.Sub("attn"), layers.KernelSoftmax, layers.KernelConfig{Gamma: 1 / math.Sqrt(float64(hd))})
	if err != nil {
		return nil, err
	}
	causal := func(q, k *G.Node, _ *layers.Mask) (*G.Node, error) { return softmax(q, k, mask) }
	for h := 0; h < H; h++ {
		hs := s.Sub("attn").Sub(fmt.Sprintf("head%d", h))
		wo, err := hs.Param("wo", tensor.Shape{hd, d}, resid)
		if err != nil {
			return nil, err
		}
		a, err := layers.NewAttention(hs, layers.AttentionConfig{
			DIn: d, DK: hd, DV: hd, DOut: d, Kernel: causal, Keys: layers.AllKeys,
			P: wo, WInit: graph.Normal(std),
		})
		if err != nil {
			return nil, err
		}
		b.heads = append(b.heads, a)
		b.attn = append(b.attn, a.Params()...)
		b.attn = append(b.attn, wo)
	}
	if b.ln2, err = layers.NewLayerNorm(s.Sub("ln_2"), layers.LayerNormConfig{Dim: d}); err != nil {
		return nil, err
	}
	// nanoGPT scales the init of every residual projection, the MLP's second
	// layer included. FeedForward has one WInit for w1 and w2, which it
	// draws in that order: the first call gets std, the second the residual
	// std.
	calls := 0
	winit := func(rng *rand.Rand, shape tensor.Shape, out []float64) error {
		calls++
		if calls == 2 {
			return resid(rng, shape, out)
		}
		return graph.Normal(std)(rng, shape, out)
	}
	b.mlp, err = layers.NewFeedForward(s.Sub("mlp"), layers.FeedForwardConfig{DIn: d, Hidden: cfg.FFHidden, Activation: layers.ActivationGELU, WInit: winit})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Forward maps x (B, T, d') to the block output (B, T, d').
func (b *GPTBlock) Forward(x *G.Node) (out *G.Node, err error) {
	defer graph.Recover(&err)
	defer func() {
		if err != nil {
			err = fmt.Errorf("tf: gpt block %q: %w", b.s.Path(), err)
		}
	}()
	a := G.Must(b.ln1.Forward(x))
	var sum *G.Node
	for _, h := range b.heads {
		o := G.Must(h.Forward(a)) // (B, T, d')
		if sum == nil {
			sum = o
		} else {
			sum = G.Must(G.Add(sum, o))
		}
	}
	x = G.Must(G.Add(x, sum))
	return G.Must(G.Add(x, G.Must(b.mlp.Forward(G.Must(b.ln2.Forward(x)))))), nil
}

// Params lists the block's parameters.
func (b *GPTBlock) Params() G.Nodes { return b.s.Params() }

// GPT is a GPT-2-style language model (nanoGPT's GPT): token embeddings
// w_{e,t} plus learned positional embeddings p_j, Layers pre-norm blocks, a
// final layer norm, and logits tied to the token embedding:
//
//	x_j = w_{e,t_j} + p_j
//	x   = Block_L(…Block_1(x))
//	logits_j = ln_f(x_j) W_e      the next token after t_0..t_j
//
// Initialisation follows nanoGPT: N(0, 0.02²) for every matrix and
// embedding, N(0, (0.02/√(2L))²) for the residual projections (attention
// P and the MLP's second layer), zero biases, unit layer-norm scales.
// Parameters: "wte/w" (C, d'), "wpe" (T, d'), "h<l>/…" per block (see
// GPTBlock) and "ln_f/scale", "ln_f/bias".
//
// Unlike the GD model (gd.LM), attention reads w_{e,t} + p for its queries,
// keys and values, and a position's prediction comes from its own output
// (position j predicts t_{j+1}); both models predict the same T tokens from
// the same contexts, so their losses compare directly.
type GPT struct {
	Cfg   GPTConfig
	Batch int
	Next  bool

	// IDs (B, T), Targets (B·T), Select (B, T), Logits (B·T, C) and
	// NextLogits (B, C) are as in gd.LM: the model returns logits, and the
	// caller builds the loss, losses.SparseSoftmaxCrossEntropy(Logits,
	// Targets).
	IDs, Targets, Select *G.Node
	Logits               *G.Node
	NextLogits           *G.Node
	Blocks               []*GPTBlock

	// Window holds the inputs and does the feeding, as in gd.LM (the same
	// code): with Feed and FeedNext, its methods make the model a train.LM.
	*lmio.Window

	s   *graph.Scope
	emb *layers.SparseEmbedding
}

// NewGPT builds the model's graph in s.
func NewGPT(s *graph.Scope, cfg GPTConfig, opts GPTOptions) (*GPT, error) {
	sizes := func(c GPTConfig) error { return c.checkSizes(opts.Batch) }
	return lmio.Build("tf: gpt", s, cfg, sizes, func(c GPTConfig) (*GPT, error) {
		m := &GPT{Cfg: c, Batch: opts.Batch, Next: opts.Next, s: s}
		return m, m.build()
	})
}

func (m *GPT) build() (err error) {
	defer graph.Recover(&err)
	cfg := m.Cfg
	if m.Window, m.emb, err = lmio.New(m.s, "tf: gpt", m.Batch, cfg.Context, cfg.Vocab, cfg.DModel, graph.Normal(0.02), m.Next); err != nil {
		return err
	}
	m.IDs = lmio.IDs(m.Window)
	s, B, T, d := m.s, m.Batch, cfg.Context, cfg.DModel
	wpe, err := s.Param("wpe", tensor.Shape{T, d}, graph.Normal(0.02))
	if err != nil {
		return err
	}
	mask, err := layers.NewMask(s, "causal_mask", B, T, T, func(j, i int) bool { return i <= j })
	if err != nil {
		return err
	}
	x := G.Must(m.emb.Lookup(m.IDs))                                                               // (B, T, d')
	x = G.Must(G.BroadcastAdd(x, G.Must(ops.Reshape(wpe, tensor.Shape{1, T, d})), nil, []byte{0})) // + p_j
	for l := 0; l < cfg.Layers; l++ {
		blk, err := newGPTBlock(s.Sub(fmt.Sprintf("h%d", l)), cfg, mask)
		if err != nil {
			return err
		}
		m.Blocks = append(m.Blocks, blk)
		x = G.Must(blk.Forward(x))
	}
	h := G.Must(lmio.Rows(m.Window, x, d)) // (B*T, d'), or (B, d') at the selected positions with Next
	// Tied to wte: ln_f(h) wteᵀ, the logits (rows, C).
	if err := lmio.Head(m.Window, h, d); err != nil {
		return err
	}
	m.IDs, m.Targets, m.Select, m.Logits, m.NextLogits = lmio.Nodes(m.Window)
	return nil
}

// Scope is the scope holding the model's parameters.
func (m *GPT) Scope() *graph.Scope { return m.s }

// Params lists the model's trainable parameters in creation order.
func (m *GPT) Params() G.Nodes { return m.s.Params() }

// NumParams returns the number of trainable parameters in the attention
// (W_Q, W_K, W_V and P of every head) and in the rest (embeddings, layer
// norms, feed-forward). nanoGPT's get_num_params counts the tied W_e once,
// as here.
func (m *GPT) NumParams() (attention, rest int) {
	var attn G.Nodes
	for _, b := range m.Blocks {
		attn = append(attn, b.attn...)
	}
	in := map[*G.Node]bool{}
	for _, p := range attn {
		in[p] = true
	}
	for _, p := range m.s.Params() {
		if in[p] {
			attention += p.Shape().TotalSize()
		} else {
			rest += p.Shape().TotalSize()
		}
	}
	return attention, rest
}

// Feed writes one training minibatch; see gd.LM.Feed.
func (m *GPT) Feed(ids, targets []int) error { return m.Window.Feed(ids, targets) }

// FeedNext writes a generation minibatch; see gd.LM.FeedNext.
func (m *GPT) FeedNext(ids, lengths []int) error { return m.Window.FeedNext(ids, lengths) }
