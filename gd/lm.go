package gd

import (
	"fmt"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/bounds"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/lmio"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LMConfig describes a GD language model (Sections 3.6 and 5.3, Appendix H).
// Zero fields take the documented defaults; see [LM]. Configs are saved as
// JSON with the keys of the field tags (see "Config schema" in the package
// documentation).
type LMConfig struct {
	Vocab   int `json:"vocab"`   // C, the number of token ids (required)
	DPrime  int `json:"d_prime"` // d', the embedding width (required)
	Context int `json:"context"` // T, the context window (required)

	// Heads is the number M of update heads (default 8, as the paper).
	Heads int `json:"heads"`
	// Kernel is the heads' kernel κ, a value (see gd.Config.Kernel), built
	// once in the scope "kernel" and shared by the heads. nil means
	// layers.Softmax(1).Fixed(), as the paper's main results: g fixed at 1,
	// the learned Λ_m set the scale. A normalised kernel normalises over the
	// keys; any other is divided by the number j of keys (the 1/N of eq. (3)).
	Kernel layers.KernelSpec `json:"kernel"`
	// Steps is the number K of GD steps (default 1, the paper's language
	// models). Steps after the first need E(w_e|f_k), computed over the whole
	// vocabulary with an exact softmax (the cross-attention of Section 3.3)
	// unless MeanE.
	Steps int `json:"steps"`
	// MeanE uses the mean embedding w̄_e = E(w_e|f=0) as the expectation at
	// every step (the one-step simplification of Section 3.5; with Steps = 1
	// it changes nothing, since f_0 = 0).
	MeanE bool `json:"mean_e"`
	// DiagP makes each head's output matrix P_m diagonal instead of a full
	// d'×d' matrix (Appendix H). The attention then has 2·M·d' parameters
	// (Λ_m and P_m), the paper's "8K" at d' = 512 and 8 heads, but the model
	// becomes symmetric: with one head on the previous token, the score of
	// token c after token t is Σ_k P_k w_{e,t,k} w_{e,c,k}, the same as that
	// of t after c, so it cannot learn "the → girl" without "girl → the",
	// and it generates repetitions (RESULTS.md of examples/language). Full
	// P_m (the default) make the form w_{e,t}ᵀ P_m w_{e,c} asymmetric.
	DiagP bool `json:"diag_p"`
	// FF appends a pre-norm feed-forward block with a skip connection after
	// the attention ("GD + FF" of Section 5.3): h = f + FF(LN(f)).
	FF bool `json:"ff"`
	// FFHidden is the feed-forward hidden width (default 4·d').
	FFHidden int `json:"ff_hidden"`
	// EmbedInit initialises the token and positional embeddings; nil means
	// N(0, 0.02²) (nanoGPT).
	EmbedInit graph.Initializer `json:"-"`
}

// Validate fills defaults and checks cfg, returning the completed config.
func (cfg LMConfig) Validate() (LMConfig, error) {
	fail := func(format string, a ...any) (LMConfig, error) {
		return cfg, fmt.Errorf("gd: lm config: %s", fmt.Sprintf(format, a...))
	}
	if cfg.Vocab < 2 {
		return fail("Vocab = %d, want at least 2 tokens", cfg.Vocab)
	}
	if cfg.DPrime <= 0 {
		return fail("DPrime = %d, want > 0", cfg.DPrime)
	}
	if cfg.Context <= 0 {
		return fail("Context = %d, want > 0", cfg.Context)
	}
	if err := bounds.Each(bounds.Term{What: "Vocab", Dims: []int{cfg.Vocab}}, bounds.Term{What: "DPrime", Dims: []int{cfg.DPrime}},
		bounds.Term{What: "Context", Dims: []int{cfg.Context}}, bounds.Term{What: "FFHidden", Dims: []int{cfg.FFHidden}}); err != nil {
		return fail("%v", err)
	}
	if cfg.Heads == 0 {
		cfg.Heads = 8
	}
	if cfg.Heads < 0 {
		return fail("Heads = %d, want > 0", cfg.Heads)
	}
	if cfg.Kernel == nil {
		cfg.Kernel = layers.Softmax(1).Fixed()
	}
	if err := layers.CheckKernel(cfg.Kernel); err != nil {
		return fail("Kernel: %v", err)
	}
	if cfg.Steps == 0 {
		cfg.Steps = 1
	}
	if cfg.Steps < 0 {
		return fail("Steps = %d, want > 0", cfg.Steps)
	}
	if err := bounds.Units("Steps·Heads", cfg.Steps, cfg.Heads); err != nil {
		return fail("%v", err)
	}
	if cfg.FFHidden == 0 {
		cfg.FFHidden = 4 * cfg.DPrime
	}
	if cfg.FFHidden < 0 {
		return fail("FFHidden = %d, want > 0", cfg.FFHidden)
	}
	if cfg.EmbedInit == nil {
		cfg.EmbedInit = graph.Normal(0.02)
	}
	return cfg, nil
}

// checkSizes checks what a language model of the validated cfg allocates
// for minibatches of batch sequences against the limits of internal/bounds
// (2^31 elements per tensor, graph.MaxElements, and 2^34 in all), before
// anything is built.
func (cfg LMConfig) checkSizes(batch int) error {
	if batch <= 0 {
		return fmt.Errorf("gd: lm: batch = %d, want > 0", batch)
	}
	B, T, d, V := batch, cfg.Context, cfg.DPrime, cfg.Vocab
	if err := bounds.Elements(
		bounds.Term{What: "batch", Dims: []int{B}},
		bounds.Term{What: "Vocab·DPrime (wte)", Dims: []int{V, d}},
		bounds.Term{What: "(Context+1)·DPrime (wpe)", Dims: []int{T + 1, d}},
		bounds.Term{What: "Steps·batch·Context·Vocab (logits and expectations)", Dims: []int{cfg.Steps, B, T, V},
			Tensor: "batch·Context·Vocab", TensorDims: []int{B, T, V}},
		bounds.Term{What: "Heads·batch·(Context+1)·Context (kernels)", Dims: []int{cfg.Heads, B, T + 1, T},
			Tensor: "batch·(Context+1)·Context", TensorDims: []int{B, T + 1, T}},
		bounds.Term{What: "Steps·Heads·batch·(Context+1)·DPrime (head outputs)", Dims: []int{cfg.Steps, cfg.Heads, B, T + 1, d},
			Tensor: "batch·(Context+1)·DPrime", TensorDims: []int{B, T + 1, d}},
		bounds.Term{What: "Heads·DPrime·DPrime (p)", Dims: []int{cfg.Heads, d, d}, Tensor: "DPrime·DPrime", TensorDims: []int{d, d}},
		bounds.Term{What: "batch·Context·FFHidden (feed-forward)", Dims: []int{B, T, cfg.FFHidden}},
		bounds.Term{What: "2·DPrime·FFHidden (feed-forward weights)", Dims: []int{2, d, cfg.FFHidden},
			Tensor: "DPrime·FFHidden", TensorDims: []int{d, cfg.FFHidden}},
	); err != nil {
		return fmt.Errorf("gd: lm config: %w", err)
	}
	return nil
}

// LMOptions says what graph [NewLM] (and [LoadLM], [LMFromCheckpoint],
// [LM.Rebuild]) builds from a configuration.
type LMOptions struct {
	// Batch is the number B of sequences per run (required, >= 1).
	Batch int
	// Next builds the generation graph: NextLogits (B, C), the logits of
	// one position per sequence (chosen by FeedNext), instead of the
	// training graph's Logits (B·T, C) and Targets. A generation graph is
	// what train.NewGenerator and train.Generate take.
	Next bool
}

// LM is a GD language model: one pass of attention performing K steps of
// functional GD on a window of T tokens predicts every next token.
//
// Covariates are learned positional embeddings p_0..p_T (one more position
// than the context, for the last query); values are the token embeddings
// w_{e,t_i} minus the expectation E(w_e|f_{i,k}) (w̄_e at the first step);
// position j queries the keys p_0..p_{j-1}, so one pass predicts every
// token from the tokens before it. M heads use the kernels κ(Λ_m p_j, Λ_m p_i)
// with learned diagonal Λ_m (W_Q = W_K, Appendix H) and merge through P_m:
//
//	f_{j,k+1} = f_{j,k} + Σ_m P_m Σ_{i<j} a^m_{ji} [w_{e,t_i} − E(w_e|f_{i,k})],   f_{j,0} = 0,
//
// with a^m_{ji} = softmax_i(Λ_m p_j · Λ_m p_i) for the softmax kernel and
// κ(Λ_m p_j, Λ_m p_i)/j (the 1/N of eq. (3)) for the others. The GD step α
// is absorbed into P_m, the kernel's scale into Λ_m. The logits of the token
// after t_{j-1} are LN(h_j) W_e with h_j = f_{j,K} (or f + FF(LN(f)) with FF),
// W_e being the token embedding matrix (the softmax model of eq. (1) shares
// W_e with the input encoding).
//
// The heads' keys and queries are positional only, so the kernel matrix of a
// head is the same for every sequence: it is computed once per run and
// applied to the batch of values, which is what an [layers.Attention] head on
// tokens z_i = (p_i, w_{e,t_i} − E) with W_Q = W_K = [Λ_m; 0], W_V = [0; I],
// P = P_m and CausalKeys computes (TestLMMatchesAttention), without the
// per-sequence projections.
//
// Trainable parameters, under the model's scope: "wte/w" (C, d') token
// embeddings, "wpe" (T+1, d') positional embeddings, "head<m>/lambda" (d')
// and "head<m>/p" ((d', d'), or (d') with DiagP) per head, "ff/ln/…" and
// "ff/mlp/…" with FF, and "ln_f/scale", "ln_f/bias".
type LM struct {
	Cfg   LMConfig
	Batch int
	Next  bool

	// IDs (B, T) are the input tokens t_0..t_{T-1}.
	IDs *G.Node
	// Targets (B·T) are the training targets t_1..t_T (-1: not scored),
	// the labels of the loss the caller builds,
	// losses.SparseSoftmaxCrossEntropy(Logits, Targets); nil with Next.
	Targets *G.Node
	// Select (B, T) is a one-hot row per sequence choosing the position
	// whose next token FeedNext asks for; nil without Next.
	Select *G.Node
	// F is f_K at the query positions 1..T, (B, T, d').
	F *G.Node
	// Logits (B·T, C): row b·T+j holds the logits of token j+1 of sequence
	// b given tokens 0..j; nil with Next. The model returns logits, not a
	// loss: the caller chooses the loss.
	Logits *G.Node
	// NextLogits (B, C) are the logits at the selected positions (Next only).
	NextLogits *G.Node

	// Window holds the inputs and does the feeding; its methods
	// BatchSize, ContextLen, VocabSize, Generates, LMOutputs, TextCodec and
	// SetTextCodec, with Feed and FeedNext, make the model a train.LM (the
	// same code serves tf.GPT).
	*lmio.Window

	s          *graph.Scope
	emb        *layers.SparseEmbedding
	attnParams G.Nodes
	// kernels are the heads' weights (1, T+1, T) before the batch
	// broadcast: positional only, read by NewDecoder.
	kernels G.Nodes
}

// NewLM builds the model's graph in s.
func NewLM(s *graph.Scope, cfg LMConfig, opts LMOptions) (*LM, error) {
	sizes := func(c LMConfig) error { return c.checkSizes(opts.Batch) }
	return lmio.Build("gd: lm", s, cfg, sizes, func(c LMConfig) (*LM, error) {
		m := &LM{Cfg: c, Batch: opts.Batch, Next: opts.Next, s: s}
		return m, m.build()
	})
}

// Scope is the scope holding the model's parameters.
func (m *LM) Scope() *graph.Scope { return m.s }

// Params lists the model's trainable parameters in creation order.
func (m *LM) Params() G.Nodes { return m.s.Params() }

// NumParams returns the number of trainable parameters in the attention
// (Λ_m and P_m: M·(d' + d'²), or 2·M·d' with DiagP) and in the rest of the
// model (embeddings, layer norms, feed-forward).
func (m *LM) NumParams() (attention, rest int) {
	return countSplit(m.s.Params(), m.attnParams)
}

func countSplit(all, attn G.Nodes) (int, int) {
	in := map[*G.Node]bool{}
	a, r := 0, 0
	for _, p := range attn {
		in[p] = true
	}
	for _, p := range all {
		if in[p] {
			a += p.Shape().TotalSize()
		} else {
			r += p.Shape().TotalSize()
		}
	}
	return a, r
}

func (m *LM) build() (err error) {
	defer graph.Recover(&err)
	cfg, s := m.Cfg, m.s
	B, T, d, V := m.Batch, cfg.Context, cfg.DPrime, cfg.Vocab
	if m.Window, m.emb, err = lmio.New(s, "gd: lm", B, T, V, d, cfg.EmbedInit, m.Next); err != nil {
		return err
	}
	m.IDs = lmio.IDs(m.Window)
	var we *G.Node // W_e (d', C), a transposed copy of the table: only for E(w_e|f) of later steps
	if cfg.Steps > 1 && !cfg.MeanE {
		if we, err = m.emb.We(); err != nil {
			return err
		}
	}
	wpe, err := s.Param("wpe", tensor.Shape{T + 1, d}, cfg.EmbedInit) // (T+1, d')
	if err != nil {
		return err
	}
	// w_{e,t_i} − w̄_e with w̄_e = E(w_e | f = 0), the mean embedding, in
	// one op (the mean and its gradient fused with the lookup's).
	values0, err := m.emb.LookupCentered(m.IDs) // (B, T, d')
	if err != nil {
		return err
	}
	var emb *G.Node // w_{e,t_i} (B, T, d'): only for E(w_e|f_k) of later steps
	if cfg.Steps > 1 && !cfg.MeanE {
		if emb, err = m.emb.Lookup(m.IDs); err != nil {
			return err
		}
	}
	kernels, err := m.headKernels(wpe) // per head (B, T+1, T)
	if err != nil {
		return err
	}
	heads, err := m.headOutputs()
	if err != nil {
		return err
	}
	var f *G.Node // (B, T+1, d'); f_0 = 0
	values := values0
	for k := 0; k < cfg.Steps; k++ {
		if k > 0 && !cfg.MeanE {
			// E(w_e | f_{i,k}) at the key positions 0..T-1, exact softmax over the vocabulary.
			fk := G.Must(ops.Reshape(G.Must(ops.Slice(f, 1, 0, T)), tensor.Shape{B * T, d})) // (B*T, d')
			e, err := layers.Expectation(fk, we, nil, nil)                                   // (B*T, d')
			if err != nil {
				return err
			}
			e3 := G.Must(ops.Reshape(e, tensor.Shape{B, T, d}))
			values = G.Must(G.Sub(emb, e3)) // (B, T, d')
		}
		var delta *G.Node
		for h, kern := range kernels {
			o := G.Must(G.BatchedMatMul(kern, values, false, false)) // (B, T+1, d')
			o = heads[h](o)                                          // (B, T+1, d'): P_m
			if delta == nil {
				delta = o
			} else {
				delta = G.Must(G.Add(delta, o))
			}
		}
		if f == nil {
			f = delta
		} else {
			f = G.Must(G.Add(f, delta))
		}
	}
	m.F = G.Must(ops.Slice(f, 1, 1, T+1))    // (B, T, d'): queries at positions 1..T
	h := G.Must(lmio.Rows(m.Window, m.F, d)) // (B*T, d'), or (B, d') at the selected positions with Next
	if cfg.FF {
		ln, err := layers.NewLayerNorm(s.Sub("ff").Sub("ln"), layers.LayerNormConfig{Dim: d})
		if err != nil {
			return err
		}
		ffn, err := layers.NewFeedForward(s.Sub("ff").Sub("mlp"), layers.FeedForwardConfig{
			DIn: d, Hidden: cfg.FFHidden, WInit: graph.Normal(0.02), Activation: layers.ActivationGELU,
		})
		if err != nil {
			return err
		}
		u := G.Must(ffn.Forward(G.Must(ln.Forward(h))))
		h = G.Must(G.Add(h, u)) // f + FF(LN(f))
	}
	// LN(h) W_e with W_e = wteᵀ, the logits (rows, C).
	if err := lmio.Head(m.Window, h, d); err != nil {
		return err
	}
	m.IDs, m.Targets, m.Select, m.Logits, m.NextLogits = lmio.Nodes(m.Window)
	return nil
}

// headKernels returns, per head, the masked kernel matrix between the
// queries p_0..p_T and the keys p_0..p_{T-1}, repeated over the batch:
// (B, T+1, T), zero where the key is not strictly earlier.
func (m *LM) headKernels(wpe *G.Node) ([]*G.Node, error) {
	cfg, s := m.Cfg, m.s
	B, T, d := m.Batch, cfg.Context, cfg.DPrime
	kern, _, err := layers.InstantiateKernel(s.Sub("kernel"), cfg.Kernel)
	if err != nil {
		return nil, err
	}
	mask, err := layers.NewMask(s, "causal_mask", 1, T+1, T, func(j, i int) bool { return i < j })
	if err != nil {
		return nil, err
	}
	var norm *G.Node // 1/j for the unnormalised kernels (the 1/N of eq. (3))
	if !cfg.Kernel.Normalised() {
		vals := make([]float64, (T+1)*T)
		for j := 1; j <= T; j++ {
			for i := 0; i < j; i++ {
				vals[j*T+i] = 1 / float64(j)
			}
		}
		if norm, err = s.Const("causal_norm", tensor.Shape{1, T + 1, T}, vals); err != nil {
			return nil, err
		}
	}
	ones, err := s.Const("batch_ones", tensor.Shape{B, 1}, fill(B, 1))
	if err != nil {
		return nil, err
	}
	var out []*G.Node
	for h := 0; h < cfg.Heads; h++ {
		lam, err := s.Sub(fmt.Sprintf("head%d", h)).Param("lambda", tensor.Shape{d}, jitter(0.25))
		if err != nil {
			return nil, err
		}
		m.attnParams = append(m.attnParams, lam)
		lam2 := G.Must(ops.Reshape(lam, tensor.Shape{1, d}))
		q := G.Must(G.BroadcastHadamardProd(wpe, lam2, nil, []byte{0})) // (T+1, d'): Λ_m p_j
		q3 := G.Must(ops.Reshape(q, tensor.Shape{1, T + 1, d}))         // (1, T+1, d')
		k3 := G.Must(ops.Slice(q3, 1, 0, T))                            // (1, T, d'): Λ_m p_i
		w, err := kern(q3, k3, mask)                                    // (1, T+1, T)
		if err != nil {
			return nil, err
		}
		if norm != nil {
			w = G.Must(G.HadamardProd(w, norm))
		}
		m.kernels = append(m.kernels, w)
		flat := G.Must(ops.Reshape(w, tensor.Shape{1, (T + 1) * T}))           // (1, (T+1)T)
		rep := G.Must(G.Mul(ones, flat))                                       // (B, (T+1)T): the same for every sequence
		out = append(out, G.Must(ops.Reshape(rep, tensor.Shape{B, T + 1, T}))) // (B, T+1, T)
	}
	return out, nil
}

// headOutputs creates each head's P_m and returns the maps o ↦ o P_m on
// (B, T+1, d') tensors.
func (m *LM) headOutputs() ([]func(*G.Node) *G.Node, error) {
	cfg, s := m.Cfg, m.s
	B, T, d, M := m.Batch, cfg.Context, cfg.DPrime, cfg.Heads
	var out []func(*G.Node) *G.Node
	for h := 0; h < M; h++ {
		hs := s.Sub(fmt.Sprintf("head%d", h))
		if !cfg.DiagP {
			p, err := hs.Param("p", tensor.Shape{d, d}, graph.FromValues(eye(d, 1/float64(M))))
			if err != nil {
				return nil, err
			}
			m.attnParams = append(m.attnParams, p)
			out = append(out, func(o *G.Node) *G.Node {
				o2 := G.Must(ops.Reshape(o, tensor.Shape{B * (T + 1), d}))                  // (B*(T+1), d')
				return G.Must(ops.Reshape(G.Must(G.Mul(o2, p)), tensor.Shape{B, T + 1, d})) // (B, T+1, d')
			})
			continue
		}
		p, err := hs.Param("p", tensor.Shape{d}, graph.Constant(1/float64(M)))
		if err != nil {
			return nil, err
		}
		m.attnParams = append(m.attnParams, p)
		p3 := G.Must(ops.Reshape(p, tensor.Shape{1, 1, d}))
		out = append(out, func(o *G.Node) *G.Node {
			return G.Must(G.BroadcastHadamardProd(o, p3, nil, []byte{0, 1})) // (B, T+1, d')
		})
	}
	return out, nil
}

// Feed writes one training minibatch: ids (B·T, row-major (B, T)) are the
// inputs t_0..t_{T-1} of each sequence and targets (B·T) the ids to predict,
// t_1..t_T, with -1 where nothing is scored. Ids must lie in [0, C) and
// targets in [-1, C); on error nothing is written.
func (m *LM) Feed(ids, targets []int) error { return m.Window.Feed(ids, targets) }

// FeedNext writes a generation minibatch: ids (B·T) hold each sequence's
// context, left-aligned and padded with any valid id, and lengths (B) the
// context lengths in [1, T]; NextLogits then holds the logits of the token
// after each context.
func (m *LM) FeedNext(ids, lengths []int) error { return m.Window.FeedNext(ids, lengths) }
