// Package layers holds the building blocks of gdattn models: attention whose
// forward pass performs functional gradient descent on categorical in-context
// data (icl-categorical-gd, Section 3), and the usual transformer parts the
// baselines need. The gd package composes them into exact GD models, the tf
// package into unconstrained transformers; layers imports neither.
//
// # Shapes
//
// Token sequences are (B, T, D): B contexts in a minibatch, T = N+1 positions
// (the N context tokens first, the query last, at position T-1) and D features
// per token. Matrices act on the right of row vectors, as in z·W, so a
// projection from DIn to DK features is a (DIn, DK) matrix, and the paper's
// W_Q e_i (column convention) is written e_i W_Q here. Kernel weights between
// Tq queries and Tk keys are (B, Tq, Tk).
//
// # Kernels
//
// A [Kernel] is a value, func(q, k, mask) → weights: softmax, linear, RBF and
// the rest are functions of one type, so a new kernel plugs into [Attention]
// with no change to the attention code (see the example below). [NewKernel]
// builds the named ones ([KernelNames]): "linear" q·k, "rbf"
// exp(−g‖q−k‖²), "exp" exp(g q·k), "laplacian" exp(−g‖q−k‖) and "softmax"
// exp(g q·k)/Σ_keys, the only normalised one. Their parameter g is a fixed
// constant or, with KernelConfig.Learnable, the trainable parameter
// "log_gamma" (g = exp(log_gamma) stays positive) in the scope the kernel was
// built in. [DeltaKernel] is the exact erase kernel (1 where query and key
// are the same position, else 0) and [WithBias] adds 1 to any kernel (the
// bias variant of the GD step). A [Mask] from [NewMask] hides (query, key)
// pairs: they get weight exactly 0, and softmax normalises over the visible
// keys only (a query with no visible key gets zeros, not NaN). Softmax is
// computed by ops.SoftMax, which subtracts each row's own maximum.
//
// # Kernel specs
//
// Models take their kernel as a [KernelSpec], a value holding no graph node
// that a model instantiates in any scope (package tf builds one per head,
// each with its own parameters). The built-ins are [Linear], [RBF], [Exp],
// [Laplacian] and [Softmax] (g learned as "log_gamma" from the given
// value, or fixed with .Fixed()) and [Builtin] by name; they keep the fused
// fast paths of [BuiltinKernel] ([InstantiateKernel] returns it). [Sum] and
// [Scaled] combine specs: κ = rbf + β·linear with g and β learned is
//
//	layers.Sum(layers.RBF(g), layers.Scaled(β, layers.Linear()))
//
// whose parameters, built in the scope "kernel", are "kernel/term0/log_gamma"
// and "kernel/term1/beta" (term i of a sum lives in "term<i>", the kernel a
// Scaled multiplies in "inner"). [Custom] wraps Go code that builds a kernel
// and its parameters; any type implementing KernelSpec is a kernel as well.
//
// Specs are saved in model configs as JSON ([MarshalKernel],
// [UnmarshalKernel]; unknown keys and names are refused):
//
//	{"name": "rbf", "gamma": 0.5, "learnable": true}     built-ins (exp, laplacian, softmax alike)
//	{"name": "linear"}                                    no parameter
//	{"name": "sum", "terms": [K1, K2, ...]}               Σ terms
//	{"name": "scaled", "beta": 0.3, "learnable": true, "kernel": K}
//	{"name": "poly", "params": {...}}                     a registered user kernel
//
// where a missing "gamma" means 1 and a missing "learnable" true. A bare
// name ("rbf") stands for the built-in with g = 1 learned, as in flags
// ([ParseKernel]). A user kernel is saved under its Name with "params" set to
// the spec marshalled by encoding/json (its exported fields, or its
// MarshalJSON), and read back by the factory given to [RegisterKernel];
// saving a kernel that is not registered, or that its factory does not
// rebuild identically, fails with an error naming it.
//
// # Attention heads
//
// [Attention] is one kernel attention head on tokens z (B, T, DIn):
//
//	out_j = ( Σ_{i ∈ keys(j)} κ(z_j W_Q, z_i W_K) z_i W_V ) P,   (B, T, DOut)
//
// with general W_Q, W_K (DIn, DK), W_V (DIn, DV) and P (DV, DOut). Each matrix
// is either given in the [AttentionConfig] (a fixed construction, or an
// expression of other parameters) or created as the trainable parameter "wq",
// "wk", "wv" or "wo"; TieQK makes W_K the node W_Q. The head adds no skip
// connection. KeyMode says which positions are keys (and values):
// [ContextKeys], the paper's update head, uses the N context positions
// 0..T-2 for every query, so the query token is never a key; [AllKeys] uses
// every position; [CausalKeys] lets position j see the positions i < j
// (position 0 sees none and outputs zeros), for next-token prediction.
//
// The erase head of Section 3.2.2 is an Attention with AllKeys whose W_V
// reads −E(w_e|f) into the E slot, and either the [DeltaKernel] (exact) or an
// RBF/softmax kernel on λ-scaled tokens (W_Q = W_K = λ·selector of x), which
// tends to the delta kernel as λ grows.
//
// [CrossAttention] is the cross-attention against the embedding matrix W_e
// (d', C) of Section 3.3: the query at each position is f = z W_Q, the keys and
// values are the C columns w_{e,c} of W_e (through W_K and W_V, the identity
// unless LearnKV), and softmax attention gives
//
//	E(w_e | f) = Σ_c w_{e,c} softmax_c(w_{e,c}·f)
//
// exactly ([Expectation]), placed into the output by P. W_e belongs to the
// model, not to the layer.
//
// [SoftmaxHead] is the likelihood of eq. (1), p(y = c | x) = softmax_c(w_{e,c}·f(x)):
// its Forward returns the logits f W_e (B, C), and losses apply the softmax.
//
// [Encoder] builds the tokens of the GD constructions from a minibatch of
// contexts, in the layout a [TokenForm] names (FormInterleaved:
// (x, w_{e,y}, w̄_e, 0); FormOneStep: (x, w_{e,y} − w̄_e, 0)), and owns W_e;
// packages gd and tf both use it, so GD and the Trained TF see the same
// tokens. Its inputs are the values x, the context labels as class ids (−1
// at the query; w_{e,y} is gathered from W_e's columns) and the query's
// one-hot target; [Encoder.Feed] fills them from a minibatch,
// [Encoder.FeedContexts] from chosen contexts of a larger set, and
// [Encoder.FeedPrepared] from a [Contexts] set checked and converted once
// ([Encoder.PrepareContexts]), what train.Runner.Fit feeds each step.
// [Matrix], [HeadMatrices], [CrossMatrices], [BlockMatrices] and
// [Construction] carry matrices as plain values between packages: package
// gd builds the GD construction, package tf starts from it, and neither
// imports the other.
//
// [Embedding] (token and positional embeddings; its transpose is W_e),
// [LayerNorm] and [FeedForward] are the remaining transformer parts.
//
// # Contract
//
// Every layer is built by NewX(s *graph.Scope, cfg XConfig) (*X, error),
// which validates cfg and creates all its parameters under s.Path() (for
// example "block0/attn/wq"), and meets [Layer]: Forward(x) builds the output
// node, Params lists the parameters the layer created (never the given
// matrices). Errors name the layer's scope path, e.g.
// layers: attention "block0/attn": ....
//
// # A user-defined kernel
//
// A polynomial kernel κ(q, k) = (1 + q·k)², written outside this package.
// Make its constants in the inputs' dtype with [ScalarLike] (a
// G.NewConstant(1.0) is float64 and fails in a float32 model; a user
// kernel's errors name the kernel and the dtype):
//
//	func polyKernel(q, k *G.Node, mask *layers.Mask) (w *G.Node, err error) {
//		defer graph.Recover(&err)
//		dot := G.Must(ops.BatchedMatMul(q, k, false, true))                // (B, Tq, Tk)
//		w = G.Must(G.Square(G.Must(G.Add(dot, layers.ScalarLike(q, 1))))) // (B, Tq, Tk)
//		if mask != nil {
//			w = G.Must(G.HadamardProd(w, mask.Keep)) // hidden pairs get 0
//		}
//		return w, nil
//	}
//
//	s, _ := graph.NewScope(graph.Float32, 1)
//	attn, err := layers.NewAttention(s.Sub("block0").Sub("attn"), layers.AttentionConfig{
//		DIn: 4, Kernel: polyKernel, Keys: layers.ContextKeys,
//	})
//	// attn.Forward(z) for tokens z (B, N+1, 4); attn.Params() are
//	// block0/attn/wq, wk, wv and wo.
package layers
