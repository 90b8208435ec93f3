package gd

import (
	"fmt"
	"math"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/bounds"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Form selects which of the paper's GD constructions a Model builds. It is
// the token layout layers.TokenForm of the shared encoder (an alias, so that
// gd.Interleaved and layers.FormInterleaved are the same value); configs
// write it as "interleaved" or "one-step".
type Form = layers.TokenForm

const (
	// Interleaved is the K-block model of Section 3 / Appendix D: tokens
	// (x, w_{e,y}, E(w_e|f), f); each block is a self-attention layer with an
	// update head and an erase head, then cross-attention against W_e.
	Interleaved = layers.FormInterleaved
	// OneStep is the single-step model of Appendix C: tokens
	// (x, w_{e,y} − w̄_e, 0) and one update head; it performs exactly one GD
	// step from f = 0 (Blocks must be 1).
	OneStep = layers.FormOneStep
)

// Erase selects how the erase head of each block removes E(w_e|f_k).
type Erase int

const (
	// EraseExact uses the Kronecker-delta kernel: every position subtracts
	// exactly its own E. This is the λ → ∞ limit of the paper's head.
	EraseExact Erase = iota
	// EraseLambda is the paper's head: W_Q = W_K = λ·(select x), with the
	// kernel named by Config.EraseKernel, so that κ(λx_j, λx_i) ≈ δ_ij for
	// large λ. Its error falls as λ grows for "rbf"; see docs/results/exactness.md.
	EraseLambda
)

// String is the erase head's name in configs: "exact" or "lambda".
func (e Erase) String() string {
	switch e {
	case EraseExact:
		return "exact"
	case EraseLambda:
		return "lambda"
	}
	return fmt.Sprintf("Erase(%d)", int(e))
}

// ParseErase reads an erase head's name: "exact" or "lambda".
func ParseErase(s string) (Erase, error) {
	for _, e := range []Erase{EraseExact, EraseLambda} {
		if s == e.String() {
			return e, nil
		}
	}
	return 0, fmt.Errorf("gd: unknown erase head %q (want \"exact\" or \"lambda\")", s)
}

// MarshalText writes the erase head's name; an unknown value is an error.
func (e Erase) MarshalText() ([]byte, error) {
	if _, err := ParseErase(e.String()); err != nil {
		return nil, err
	}
	return []byte(e.String()), nil
}

// UnmarshalText reads a name written by MarshalText.
func (e *Erase) UnmarshalText(b []byte) error {
	v, err := ParseErase(string(b))
	if err != nil {
		return err
	}
	*e = v
	return nil
}

// Config describes a GD model. Zero fields take the documented defaults.
//
// Configs are saved as JSON with the keys of the field tags (see "Config
// schema" in the package documentation); Kernel, Form and Erase are written
// as strings or objects by [Config.MarshalJSON], and [Config.UnmarshalJSON]
// refuses unknown keys and values.
type Config struct {
	D      int `json:"d"`       // covariate dimension d (required)
	DPrime int `json:"d_prime"` // latent/embedding dimension d', the target dimension d_y for a real-valued likelihood (required)
	C      int `json:"c"`       // number of categories (required; 0 for a real-valued likelihood)
	N      int `json:"n"`       // context size; every sequence has T = N+1 positions (required)

	// Likelihood is the observation model (see [Likelihood]): nil or
	// Categorical() (the default), Gaussian() (Appendix G: y ∈ R^{DPrime},
	// no W_e, C = 0, prediction f_K at the query) or a user
	// [RealLikelihood]. Real-valued likelihoods use the exact erase and no
	// zero column; a user one builds the structured construction only.
	Likelihood Likelihood `json:"likelihood"`

	Form   Form `json:"form"`   // Interleaved (default) or OneStep
	Blocks int  `json:"blocks"` // number of blocks K = GD steps; default 1

	// Kernel is the update heads' kernel κ, a value: a built-in
	// (layers.Softmax(g), layers.RBF(g), ..., with g learned unless
	// .Fixed()), a combination (layers.Sum, layers.Scaled) or a user kernel
	// (layers.Custom or any layers.KernelSpec), built once in the scope
	// "kernel" and shared by every block and head. nil means
	// layers.Softmax(1): the softmax kernel with g learned from 1.
	Kernel layers.KernelSpec `json:"kernel"`

	// Alpha is the initial GD step α (default N for the normalised softmax
	// kernel, 1 otherwise, so that the first step α/N·Σκ is O(1)). α is
	// learned as log_alpha (α = exp(log_alpha)) unless FixedAlpha.
	Alpha      float64 `json:"alpha"`
	FixedAlpha bool    `json:"fixed_alpha"`

	// Bias adds the bias update of Appendix B (the kernel becomes κ+1).
	Bias bool `json:"bias"`

	// Heads is the number M of update heads (Appendix H; default 1). With
	// M > 1 head m uses κ(Λ_m x_i, Λ_m x_j) with a learned diagonal Λ_m
	// ("lambda", init 1 + U(-0.25, 0.25)) and merges through a learned
	// P_m ∈ R^{d'×d'} ("p", init I/M).
	Heads int `json:"heads"`

	// Erase selects the erase head (default EraseExact); with EraseLambda,
	// Lambda is λ (default 100) and EraseKernel is "rbf" (default) or
	// "softmax" (the plain dot-product softmax, as printed in the paper).
	Erase       Erase   `json:"erase"`
	Lambda      float64 `json:"lambda"`
	EraseKernel string  `json:"erase_kernel"`

	// Literal builds the construction token by token: the tokens
	// e = (x, w_{e,y}, E, f) pass through general attention heads with the
	// construction's W_Q, W_K, W_V, P and a cross-attention layer, exactly as
	// in Section 3. The default (false) computes the same numbers from the
	// token blocks directly — the selections those matrices perform — which
	// is several times faster; see buildStructured. EraseLambda always builds
	// the literal model.
	Literal bool `json:"literal"`

	// ZeroColumn fixes the first column of W_e at zero, as the authors do
	// (W_e then has C−1 free columns).
	ZeroColumn bool `json:"zero_column"`
	// FuseEncoder computes the blocks' residuals of the structured
	// construction (categorical likelihood, not Literal) in one op each,
	// forward and backward, instead of a chain of gathers, slices,
	// products and their gradients over (B, N, d'): the first block's
	// (α/N)(w_{e,y_i} − w̄_e) with ops.LabelResiduals, a later block's
	// (α/N)(w_{e,y_i} − E(w_e | f_{k,i})) with ops.LabelResidualsOf. The
	// loss is the same bits; the gradients of W_e and α are the same
	// within rounding (the step multiplies sums instead of every element,
	// α's sum is accumulated in float64), so the default (false) keeps the
	// chain and its bits. Other constructions ignore it. With it, every
	// categorical model's training loss (Model.CrossEntropyLoss, which
	// train.Runner builds) is one op as well, losses.FusedCrossEntropy: the
	// log-softmax, the mean NLL and their gradient p − onehot, equal to the
	// chain's within rounding.
	FuseEncoder bool `json:"fuse_encoder,omitempty"`
	// WeInit initialises W_e; nil means N(0, 1), like the data's W_e. It
	// is not saved: a loaded model takes its W_e from the checkpoint.
	WeInit graph.Initializer `json:"-"`
}

// Validate fills defaults and checks cfg, returning the completed config.
func (cfg Config) Validate() (Config, error) {
	fail := func(format string, a ...any) (Config, error) {
		return cfg, fmt.Errorf("gd: config: %s", fmt.Sprintf(format, a...))
	}
	if cfg.D <= 0 {
		return fail("D = %d, want > 0", cfg.D)
	}
	if cfg.DPrime <= 0 {
		return fail("DPrime = %d, want > 0", cfg.DPrime)
	}
	if cfg.Real() {
		if _, ok := cfg.Likelihood.(RealLikelihood); !ok {
			return fail("Likelihood %q is neither categorical nor a RealLikelihood", cfg.Likelihood.Name())
		}
		if cfg.C != 0 {
			return fail("C = %d with the %s likelihood, want 0 (no categories)", cfg.C, cfg.Likelihood.Name())
		}
		if cfg.Erase != EraseExact {
			return fail("Erase %v with the %s likelihood, want exact (it subtracts E(Y|f) itself)", cfg.Erase, cfg.Likelihood.Name())
		}
		if cfg.ZeroColumn {
			return fail("ZeroColumn with the %s likelihood, which has no W_e", cfg.Likelihood.Name())
		}
		if cfg.Literal && !isGaussian(cfg.Likelihood) {
			return fail("Literal with the user likelihood %q: the token-level construction is built for the categorical and Gaussian likelihoods", cfg.Likelihood.Name())
		}
	} else if cfg.C < 2 {
		return fail("C = %d, want at least 2 categories", cfg.C)
	}
	if cfg.N <= 0 {
		return fail("N = %d, want at least one context example", cfg.N)
	}
	if err := bounds.Each(bounds.Term{What: "D", Dims: []int{cfg.D}}, bounds.Term{What: "DPrime", Dims: []int{cfg.DPrime}},
		bounds.Term{What: "C", Dims: []int{cfg.C}}, bounds.Term{What: "N", Dims: []int{cfg.N}}); err != nil {
		return fail("%v", err)
	}
	if cfg.Form != Interleaved && cfg.Form != OneStep {
		return fail("unknown Form %d", int(cfg.Form))
	}
	if cfg.Blocks == 0 {
		cfg.Blocks = 1
	}
	if cfg.Blocks < 0 {
		return fail("Blocks = %d, want > 0", cfg.Blocks)
	}
	if cfg.Form == OneStep && cfg.Blocks != 1 {
		return fail("the OneStep form performs one GD step; Blocks = %d", cfg.Blocks)
	}
	if cfg.Kernel == nil {
		cfg.Kernel = layers.Softmax(1)
	}
	if err := layers.CheckKernel(cfg.Kernel); err != nil {
		return fail("Kernel: %v", err)
	}
	if cfg.Alpha == 0 {
		cfg.Alpha = 1
		if cfg.Kernel.Normalised() {
			cfg.Alpha = float64(cfg.N)
		}
	}
	if !(cfg.Alpha > 0) || math.IsInf(cfg.Alpha, 0) {
		return fail("Alpha = %v, want a finite positive value", cfg.Alpha)
	}
	if cfg.Heads == 0 {
		cfg.Heads = 1
	}
	if cfg.Heads < 0 {
		return fail("Heads = %d, want > 0", cfg.Heads)
	}
	if err := bounds.Units("Blocks·Heads", cfg.Blocks, cfg.Heads); err != nil {
		return fail("%v", err)
	}
	if cfg.Erase != EraseExact && cfg.Erase != EraseLambda {
		return fail("unknown Erase %d", int(cfg.Erase))
	}
	if cfg.Lambda == 0 {
		cfg.Lambda = 100
	}
	if !(cfg.Lambda > 0) || math.IsInf(cfg.Lambda, 0) {
		return fail("Lambda = %v, want a finite positive value", cfg.Lambda)
	}
	if cfg.EraseKernel == "" {
		cfg.EraseKernel = layers.KernelRBF
	}
	if cfg.EraseKernel != layers.KernelRBF && cfg.EraseKernel != layers.KernelSoftmax {
		return fail("EraseKernel %q, want rbf or softmax", cfg.EraseKernel)
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
		return fmt.Errorf("gd: batch = %d, want > 0", batch)
	}
	T, D, dp := cfg.N+1, cfg.TokenDim(), cfg.DPrime
	terms := []bounds.Term{
		{What: "batch", Dims: []int{batch}},
		{What: "batch·(N+1)·C (labels)", Dims: []int{batch, T, cfg.C}},
		{What: "(Blocks+1)·batch·(N+1)·D (tokens)", Dims: []int{cfg.Blocks + 1, batch, T, D},
			Tensor: "batch·(N+1)·D", TensorDims: []int{batch, T, D}},
		{What: "Heads·batch·(N+1)·N (kernel weights)", Dims: []int{cfg.Heads, batch, T, cfg.N},
			Tensor: "batch·(N+1)·N", TensorDims: []int{batch, T, cfg.N}},
		{What: "DPrime·C (we)", Dims: []int{dp, cfg.C}},
		{What: "Heads·DPrime·DPrime (p)", Dims: []int{cfg.Heads, dp, dp}, Tensor: "DPrime·DPrime", TensorDims: []int{dp, dp}},
	}
	if cfg.Literal || cfg.Erase == EraseLambda {
		// The token-level construction: kernel weights in every block, and
		// the erase head's over all N+1 keys.
		terms[3] = bounds.Term{What: "Blocks·Heads·batch·(N+1)·N (kernel weights)", Dims: []int{cfg.Blocks, cfg.Heads, batch, T, cfg.N},
			Tensor: "batch·(N+1)·N", TensorDims: []int{batch, T, cfg.N}}
		if cfg.Form == Interleaved {
			terms = append(terms, bounds.Term{What: "Blocks·batch·(N+1)·(N+1) (erase weights)", Dims: []int{cfg.Blocks, batch, T, T},
				Tensor: "batch·(N+1)·(N+1)", TensorDims: []int{batch, T, T}})
		}
		terms = append(terms, bounds.Term{What: "Blocks·8·D·D (selection matrices)", Dims: []int{cfg.Blocks, 8, D, D},
			Tensor: "D·D", TensorDims: []int{D, D}})
	}
	if err := bounds.Elements(terms...); err != nil {
		return fmt.Errorf("gd: config: %w", err)
	}
	return nil
}

// TokenDim is the width D of a token: d + 3d' (Interleaved) or d + 2d'
// (OneStep); d + 2d_y for the Gaussian likelihood, whose tokens are
// (x, y, f) in both forms.
func (cfg Config) TokenDim() int {
	if cfg.Real() {
		return cfg.D + 2*cfg.DPrime
	}
	return cfg.Form.TokenDim(cfg.D, cfg.DPrime)
}

// encoderConfig is the configuration of the model's token encoder.
func (cfg Config) encoderConfig() layers.EncoderConfig {
	return layers.EncoderConfig{Form: cfg.Form, D: cfg.D, DPrime: cfg.DPrime, C: cfg.C, N: cfg.N,
		ZeroColumn: cfg.ZeroColumn, WeInit: cfg.WeInit}
}

// Model is a GD-structured attention model built for minibatches of a fixed
// size. Its forward pass performs cfg.Blocks steps of functional GD on each
// context exactly (with EraseExact) and returns the logits of the query.
//
// Trainable parameters (all under the model's scope): "we" (W_e), "log_alpha"
// (α, unless FixedAlpha), the kernel's parameters under "kernel/" (for a
// built-in kernel "kernel/log_gamma", g, unless it is fixed or linear; for
// layers.Sum(layers.RBF(g), layers.Scaled(β, layers.Linear()))
// "kernel/term0/log_gamma" and "kernel/term1/beta") and, with Heads > 1,
// "head<m>/lambda" and "head<m>/p". α and the kernel's parameters are shared
// by all blocks, as K steps of one GD run share them. Everything else (the
// selection matrices of Appendices C and D) is fixed.
type Model struct {
	Cfg   Config
	Batch int

	s   *graph.Scope
	enc *layers.Encoder

	// X (B, T, d), Labels (B·T ids: the context labels, −1 at the query)
	// and Target (B, C) one-hot of the query label are the inputs; Feed
	// fills them. With a real-valued likelihood Labels is nil,
	// Y (B, T, d_y) holds the context targets (query row zero) and Target
	// (B, d_y) the query's; FeedReal fills them.
	X, Labels, Target *G.Node
	Y                 *G.Node

	// We is W_e (d', C) as used by the model (with the zero column if any).
	We *G.Node
	// Alpha is α as a scalar node.
	Alpha *G.Node
	// Tokens[k] is the token matrix (B, T, D) entering block k+1;
	// Tokens[K] is the output of the last block. Without Literal only
	// Tokens[0], the encoder's initial tokens, exists.
	Tokens []*G.Node
	// F[k] is f_k at every position (B, T, d'), k = 0..K. Gorgonia reuses
	// the memory of intermediate nodes, so read F[k] for k < K after a run
	// on a machine compiled with graph.MachineOptions{Trace: true} (or
	// G.TraceExec()). Without Literal the logits read the last block's
	// update at the query alone, so a machine computes F[K] only when
	// asked: list it in graph.MachineOptions.Outputs (or use Trace).
	F []*G.Node
	// FQuery is f_K at the query (B, d'); Logits = FQuery·W_e (B, C). With
	// a real-valued likelihood We is nil and Logits is the prediction
	// E(Y | f_K) at the query (B, d_y): FQuery itself for the Gaussian.
	FQuery, Logits *G.Node

	loss *G.Node // the likelihood's query loss (real-valued likelihoods)
	// fQuery is f_K at the query (B, 1, d') computed for that row alone
	// (the structured construction); nil means the last row of F[K].
	fQuery *G.Node
}

// NewModel builds the model's graph in s for minibatches of batch contexts.
// Sizes whose tensors could not fit in memory are refused before anything
// is built (see "Sizes" in the package documentation).
func NewModel(s *graph.Scope, cfg Config, batch int) (m *Model, err error) {
	if s == nil {
		return nil, fmt.Errorf("gd: model: scope is nil")
	}
	if cfg, err = cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.checkSizes(batch); err != nil {
		return nil, err
	}
	defer graph.Recover(&err)
	m = &Model{Cfg: cfg, Batch: batch, s: s}
	build := m.build
	if cfg.Real() {
		build = m.buildReal
	}
	if err := build(); err != nil {
		return nil, fmt.Errorf("gd: model %q: %w", s.Path(), err)
	}
	return m, nil
}

// Scope is the scope holding the model's parameters.
func (m *Model) Scope() *graph.Scope { return m.s }

// Params lists the model's trainable parameters in creation order.
func (m *Model) Params() G.Nodes { return m.s.Params() }

// T is the number of positions per sequence, N+1.
func (m *Model) T() int { return m.Cfg.N + 1 }

func (m *Model) build() error {
	cfg, s := m.Cfg, m.s
	B, dp := m.Batch, cfg.DPrime
	D := cfg.TokenDim()
	enc, err := layers.NewEncoder(s, cfg.encoderConfig(), B)
	if err != nil {
		return err
	}
	m.enc = enc
	m.X, m.Labels, m.Target, m.We = enc.X, enc.Labels, enc.Target, enc.We
	step, kern, bk, err := m.stepKernel()
	if err != nil {
		return err
	}
	z := enc.Tokens // (B, T, D)
	m.Tokens = append(m.Tokens, z)
	if !cfg.Literal && cfg.Erase == EraseExact {
		if err := m.buildStructured(step, kern, bk); err != nil {
			return err
		}
		return m.head()
	}
	m.F = append(m.F, m.fSlot(z))

	sel := newSelector(cfg)
	for k := 0; k < cfg.Blocks; k++ {
		bs := s.Sub(fmt.Sprintf("block%d", k))
		upd, err := m.updateHeads(bs, sel, kern, step, z)
		if err != nil {
			return err
		}
		if cfg.Form == Interleaved {
			// Both heads of the self-attention layer read the block input.
			er, err := m.eraseHead(bs, sel, z)
			if err != nil {
				return err
			}
			z = G.Must(G.Add(z, G.Must(G.Add(upd, er))))
			cross, err := layers.NewCrossAttention(bs.Sub("cross"), layers.CrossAttentionConfig{
				DIn: D, DPrime: dp, We: m.We,
				WQ: sel.constNode(bs, "cross_wq", D, dp, sel.fromSlot(sel.offF)),
				P:  sel.constNode(bs, "cross_p", dp, D, sel.toSlot(sel.offE)),
			})
			if err != nil {
				return err
			}
			c, err := cross.Forward(z)
			if err != nil {
				return err
			}
			z = G.Must(G.Add(z, c))
		} else {
			z = G.Must(G.Add(z, upd))
		}
		m.Tokens = append(m.Tokens, z)
		m.F = append(m.F, m.fSlot(z))
	}
	return m.head()
}

// stepKernel creates α and the step α/N (alphaStep), then the kernel in
// the sub-scope "kernel", with the bias of Appendix B when cfg.Bias; bk is
// the built-in kernel's description, nil for any other kernel or with the
// bias (the weights are then no longer the built-in kernel's).
func (m *Model) stepKernel() (step *G.Node, kern layers.Kernel, bk *layers.BuiltinKernel, err error) {
	if step, err = m.alphaStep(); err != nil {
		return nil, nil, nil, err
	}
	if kern, bk, err = layers.InstantiateKernel(m.s.Sub("kernel"), m.Cfg.Kernel); err != nil {
		return nil, nil, nil, err
	}
	if m.Cfg.Bias {
		kern = layers.WithBias(kern)
		bk = nil
	}
	return step, kern, bk, nil
}

// alphaStep creates α (the parameter log_alpha, or a constant with
// FixedAlpha), sets m.Alpha and returns the step α/N as a scalar node.
func (m *Model) alphaStep() (*G.Node, error) {
	cfg, s := m.Cfg, m.s
	var err error
	// α (scalar) and α/N.
	if cfg.FixedAlpha {
		// A graph node, not a free constant: α·(1/N) of two free constants
		// fails in Gorgonia ("No Graph Supplied").
		if m.Alpha, err = s.Const("alpha", tensor.Shape{}, []float64{cfg.Alpha}); err != nil {
			return nil, err
		}
	} else {
		la, err := s.Param("log_alpha", tensor.Shape{}, graph.Constant(math.Log(cfg.Alpha)))
		if err != nil {
			return nil, err
		}
		m.Alpha = G.Must(G.Exp(la))
	}
	return G.Must(G.Mul(m.Alpha, scalarConst(s, 1/float64(cfg.N)))), nil
}

// head reads f at the query and applies the softmax-likelihood head.
func (m *Model) head() (err error) {
	B, T, dp := m.Batch, m.Cfg.N+1, m.Cfg.DPrime
	fq := m.fQuery
	if fq == nil {
		fq = G.Must(ops.Slice(m.F[len(m.F)-1], 1, T-1, T))
	}
	m.FQuery = G.Must(ops.Reshape(fq, tensor.Shape{B, dp})) // (B, d')
	head, err := layers.NewSoftmaxHead(m.We)
	if err != nil {
		return err
	}
	m.Logits, err = head.Forward(m.FQuery)
	return err
}

// fSlot slices f (B, T, d') out of tokens z.
func (m *Model) fSlot(z *G.Node) *G.Node {
	off := m.Cfg.D + m.Cfg.DPrime
	if m.Cfg.Form == Interleaved {
		off += m.Cfg.DPrime
	}
	return G.Must(ops.Slice(z, 2, off, off+m.Cfg.DPrime))
}

// updateHeads returns the summed output of the update head(s): Δf placed in
// the f slot.
func (m *Model) updateHeads(bs *graph.Scope, sel selector, kern layers.Kernel, step, z *G.Node) (*G.Node, error) {
	cfg := m.Cfg
	D, d, dp := cfg.TokenDim(), cfg.D, cfg.DPrime
	// W_V·(α/N): value = (α/N)(w_{e,y} − E) (Interleaved) or (α/N)(w_{e,y} − w̄) (OneStep).
	wvVals := make([]float64, D*dp)
	for r := 0; r < dp; r++ {
		wvVals[(d+r)*dp+r] = 1
		if cfg.Form == Interleaved {
			wvVals[(sel.offE+r)*dp+r] = -1
		}
	}
	wv := G.Must(G.Mul(step, sel.constNode(bs, "update_wv_sel", D, dp, wvVals)))
	wx := sel.constNode(bs, "update_wq_sel", D, d, sel.fromSlot(0))      // (D, d): select x
	pF := sel.constNode(bs, "update_p_sel", dp, D, sel.toSlot(sel.offF)) // (d', D)
	var total *G.Node
	for h := 0; h < cfg.Heads; h++ {
		hs := bs.Sub("update")
		wq, p := wx, pF
		if cfg.Heads > 1 {
			hs = bs.Sub(fmt.Sprintf("head%d", h))
			// Λ_m and P_m are tied across blocks: they define the m-th kernel
			// and merge of one GD run.
			shared := m.s.Sub(fmt.Sprintf("head%d", h)).Shared()
			lam, err := shared.Param("lambda", tensor.Shape{1, d}, jitter(0.25))
			if err != nil {
				return nil, err
			}
			wq = G.Must(G.BroadcastHadamardProd(wx, lam, nil, []byte{0})) // (D, d): select x then scale by Λ_m
			pm, err := shared.Param("p", tensor.Shape{dp, dp}, graph.FromValues(eye(dp, 1/float64(cfg.Heads))))
			if err != nil {
				return nil, err
			}
			p = G.Must(G.Mul(pm, pF)) // (d', D)
		}
		att, err := layers.NewAttention(hs, layers.AttentionConfig{
			DIn: D, DK: d, DV: dp, DOut: D,
			Kernel: kern, Keys: layers.ContextKeys,
			WQ: wq, TieQK: true, WV: wv, P: p,
		})
		if err != nil {
			return nil, err
		}
		o, err := att.Forward(z)
		if err != nil {
			return nil, err
		}
		if total == nil {
			total = o
		} else {
			total = G.Must(G.Add(total, o))
		}
	}
	return total, nil
}

// eraseHead returns −E placed in the E slot (exactly, or ≈ with λ).
func (m *Model) eraseHead(bs *graph.Scope, sel selector, z *G.Node) (*G.Node, error) {
	cfg := m.Cfg
	D, d, dp := cfg.TokenDim(), cfg.D, cfg.DPrime
	var kern layers.Kernel
	scale := 1.0
	switch cfg.Erase {
	case EraseExact:
		kern = layers.DeltaKernel()
	case EraseLambda:
		var err error
		kern, err = layers.NewKernel(bs.Sub("erase").Sub("kernel"), cfg.EraseKernel, layers.KernelConfig{Gamma: 1})
		if err != nil {
			return nil, err
		}
		scale = cfg.Lambda
	}
	wq := make([]float64, D*d)
	for r := 0; r < d; r++ {
		wq[r*d+r] = scale
	}
	neg := sel.toSlot(sel.offE)
	for i := range neg {
		neg[i] = -neg[i]
	}
	att, err := layers.NewAttention(bs.Sub("erase"), layers.AttentionConfig{
		DIn: D, DK: d, DV: dp, DOut: D,
		Kernel: kern, Keys: layers.AllKeys,
		WQ: sel.constNode(bs, "erase_wq", D, d, wq), TieQK: true,
		WV: sel.constNode(bs, "erase_wv", D, dp, sel.fromSlot(sel.offE)),
		P:  sel.constNode(bs, "erase_p", dp, D, neg),
	})
	if err != nil {
		return nil, err
	}
	return att.Forward(z)
}

// selector builds the fixed selection matrices of the construction.
type selector struct {
	D, d, dp   int
	offE, offF int
}

func newSelector(cfg Config) selector {
	s := selector{D: cfg.TokenDim(), d: cfg.D, dp: cfg.DPrime}
	if cfg.Form == OneStep {
		s.offF = cfg.D + cfg.DPrime
	} else {
		s.offE = cfg.D + cfg.DPrime
		s.offF = cfg.D + 2*cfg.DPrime
	}
	return s
}

// fromSlot is the (D, d') matrix reading the d'-wide slot at off (the x slot
// reads d columns: callers slice).
func (s selector) fromSlot(off int) []float64 {
	w := s.dp
	if off == 0 {
		w = s.d
	}
	out := make([]float64, s.D*w)
	for r := 0; r < w; r++ {
		out[(off+r)*w+r] = 1
	}
	return out
}

// toSlot is the (d', D) matrix writing into the d'-wide slot at off.
func (s selector) toSlot(off int) []float64 {
	out := make([]float64, s.dp*s.D)
	for r := 0; r < s.dp; r++ {
		out[r*s.D+off+r] = 1
	}
	return out
}

func (s selector) constNode(bs *graph.Scope, name string, rows, cols int, vals []float64) *G.Node {
	n, err := bs.Const(name, tensor.Shape{rows, cols}, vals)
	if err != nil {
		panic(err) // names are unique per block scope: a failure is a bug
	}
	return n
}

func scalarConst(s *graph.Scope, v float64) *G.Node {
	if s.Dtype() == tensor.Float32 {
		return G.NewConstant(float32(v))
	}
	return G.NewConstant(v)
}

func fill(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func eye(n int, v float64) []float64 {
	out := make([]float64, n*n)
	for i := 0; i < n; i++ {
		out[i*n+i] = v
	}
	return out
}

// jitter initialises around 1: 1 + U(-a, a).
func jitter(a float64) graph.Initializer { return graph.Uniform(1-a, 1+a) }
