// Package tf holds the unconstrained baseline of "On Understanding
// Attention-Based In-Context Learning for Categorical Data": the Trained TF
// of Section 4, a transformer on the same tokens as the GD models whose
// parameters are all learned, from a random start or from the GD
// construction, and the parameter analysis of Appendix F (Figures 8 and 9)
// that asks whether a trained TF has learned to do gradient descent.
//
// # Model
//
// [NewModel] builds, on tokens from layers.NewEncoder (the same encoder, and
// so the same encodings, as package gd):
//
//	z_0 = tokens (B, T, D)                         T = N+1, the query last
//	for l = 0..L-1:
//	    z ← z + Σ_h head_{l,h}(z)                   self-attention, H heads
//	    z ← z + cross_l(z)                          only with Cfg.Cross
//	f   = z[:, T-1, :] · R                          (B, d')
//	logits = f · W_e                                (B, C), eq. (1)
//
// Each head is a layers.Attention with ContextKeys (keys and values are the
// N context positions, every position is a query):
//
//	head(z)_j = ( Σ_{i<N} κ(z_j W_Q, z_i W_K) z_i W_V ) P
//
// with W_Q, W_K (D×DK), W_V, P (D×D) and any kernel value of package layers
// (Config.Kernel, or HeadKernels[h] for head h: built-ins, sums, scaled and
// user kernels), each head building its own instance with its own
// parameters. The cross-attention layer is layers.CrossAttention against
// W_e with learned W_Q (D×d'), W_K, W_V (d'×d') and P (d'×D). Without
// Cross, tokens use the layers.FormOneStep layout (x, w_{e,y} − w̄_e, 0),
// D = d + 2d'; with Cross, the layers.FormInterleaved layout
// (x, w_{e,y}, w̄_e, 0), D = d + 3d'. Matrices act on the right of row
// vectors (z·W), as everywhere in gdattn.
//
// Package tf does not import package gd: the two stand side by side on
// package layers, and the GD construction reaches tf as values
// (layers.Construction, built by gd.Construction).
//
// # What each model trains
//
// GD (package gd) trains W_e, the step α and the kernel parameter g (and,
// with several heads, each head's diagonal Λ_m and merge P_m); every
// attention matrix is a fixed selection matrix of the construction.
//
// TF (this package) trains everything: W_Q, W_K, W_V and P of every head of
// every layer ("layer<l>/head<h>/wq", "wk", "wv", "wo"), each head's kernel
// parameters (for a built-in kernel "layer<l>/head<h>/log_gamma",
// g = exp(log_gamma), unless the kernel is fixed or linear), the
// cross-attention matrices
// ("layer<l>/cross/wq", "wk", "wv", "wo"), the readout R ("readout/r") and
// W_e ("we"). The only tied parameter is W_e, used by the token encoder, the
// cross-attention keys and values and the likelihood head. [Model.NumParams]
// splits the count into attention parameters and the rest (W_e, R).
//
// # Initialisation
//
// By default every matrix, R included, is drawn by Config.WInit
// (GlorotUniform from the scope's seeded generator, as the paper's
// initialisation of the Trained TF), kernel parameters start where their
// specs say and W_e is N(0, 1).
//
// With Init the model starts at given matrices instead (a
// layers.Construction); gd.Construction returns the GD construction, with
// which the model computes exactly what gd.Model computes with the same
// kernel and α (the tests measure ≤ 2e-14 on the logits and f):
//
//	start, err := gd.Construction(gd.Interleaved, 2, d, dPrime, N, alpha, lambda)
//	m, err := tf.NewModel(s, tf.Config{D: d, DPrime: dPrime, C: C, N: N,
//		Layers: 2, Cross: true, Kernel: layers.Softmax(1),
//		HeadKernels: []layers.KernelSpec{nil, layers.RBF(1)}, Init: start}, B)
//
// The construction sets:
//
//   - one-step (no Cross, one layer): head 0 gets gd.OneStepMatrices(α),
//     the single-step construction of Appendix C;
//   - interleaved (Cross): in every layer head 0 gets the update head of
//     gd.InterleavedMatrices(α, λ) and head 1 its erase head,
//     W_Q = W_K = λ·(select x), W_V selecting E and P = −I on the E block;
//     head 1 needs a kernel that tends to the Kronecker delta on λ-scaled
//     inputs, the RBF kernel (HeadKernels above), since
//     exp(−λ²‖x_j − x_i‖²) → δ_ij as λ grows (not so the dot-product
//     kernels). The cross-attention layer gets W_Q reading f, W_K = W_V = I
//     and P writing into the E block. The erase is exact up to
//     exp(−λ² min_{i≠j} ‖x_i − x_j‖²): on x ~ U(−1, 1)^10 the logits of a
//     2-layer TF differ from exact 2-step GD by up to 0.75 at λ = 1, 5e-7 at
//     λ = 3 and rounding (≤ 2e-14) from λ = 10 on. The erase head uses
//     ContextKeys like every head, so the query never sees itself and keeps
//     its E entry; no later step reads it.
//   - heads beyond those of the construction start with P = 0 (silent, but
//     trainable);
//   - R is Init.Readout, which selects the f block.
//
// The GD start sets W_Q = W_K (as the construction does) but keeps them two
// parameters, free to move apart in training. Init is a starting value
// only: it is not part of the saved config.
//
// # Regression
//
// [Regressor] is the Trained TF for real-valued targets (the Gaussian
// likelihood of the paper's Appendix G, and the setting of von Oswald et
// al., ICML 2023): tokens e_i = (x_i, y_i, 0) (the query's y is 0), Layers
// residual layers of Heads kernel-attention heads with learned W_Q, W_K, W_V,
// P over the context keys — linear self-attention by default, softmax with
// layers.Softmax(g) — and a learned readout ŷ = z_{N+1} R. It is a
// train.RealValuedModel, trained by the mean squared error. With the
// Gaussian GD construction's matrices it computes gd.ReferenceReal exactly
// (TestRegressorIsGaussianGD). [Regressor.Save] and [LoadRegressor] keep it
// in a checkpoint whose config object's family key is "tf_regressor"
// (keys "d", "d_y", "n", "layers", "heads", "kernel"; parameters
// "layer<l>/head<h>/{wq,wk,wv,wo}", the kernel's, "readout").
//
// # Parameter analysis
//
// [Analyze] (single layer, single head, no Cross) extracts from W_Q, W_K
// the rows acting on x (A, B: d×DK) and from W_V, P the parts moving the
// label block into the f block (D, E), and returns the paper's Q = AᵀB
// (= A·Bᵀ in row convention, d×d) and E·D (d'×d'), whose diagonal form
// with equal diagonal entries is the GD signature, with [Diagonality]
// (off-diagonal share of the energy) and [DiagonalSpread] (spread of the
// diagonal). The GD start gives exactly 0 for both.
//
// # Config schema
//
// [Config] and [GPTConfig] are saved as JSON objects whose keys are the
// json tags of their fields (lower-case snake_case). Every key is written
// but "regroup_query", which is written only when true (so that the
// configs saved before it existed read and key the same);
// on reading, a missing key means the field's zero value (its documented
// default), and an unknown key, a key in another case or a value of the
// wrong type is an error naming the key. Kernels are objects (see "Kernel
// specs" in package layers); Init and the initialisers are not saved.
//
//	Config (tf.Model)                          GPTConfig (tf.GPT)
//	"d", "d_prime", "c", "n"   int             "vocab", "context", "d_model"  int
//	"layers", "heads", "dk"    int             "heads", "layers", "ff_hidden" int
//	"kernel"   kernel | null (softmax(1))
//	"head_kernels"  [kernel | null, ...] | null
//	"cross", "zero_column"     bool
//	"regroup_query"            bool (absent: false)
//
// for example
//
//	{"d": 2, "d_prime": 5, "c": 20, "n": 100, "layers": 1, "heads": 1,
//	 "cross": false, "dk": 12, "zero_column": false,
//	 "kernel": {"name": "softmax", "gamma": 1, "learnable": true},
//	 "head_kernels": null}
//
// # Checkpoints
//
// [Model.Save] and [GPT.Save] write a checkpoint directory (graph's
// format); [Load] and [LoadGPT] rebuild the model from it alone, after
// checking the config and the parameters it implies against the manifest
// (as gd.Load does). The config object is
//
//	{"dtype": "float64", "scope": "", "tf": {...Config...}}         tf.Model
//	{"dtype": "float64", "scope": "", "tf_gpt": {...GPTConfig...}}  tf.GPT
//
// Config.Init is not saved: a loaded model takes its matrices from the
// checkpoint. A GPT's checkpoint also holds its text codec, when it has one,
// and may hold a "run" object, as gd.LM's (see "Checkpoints" in package gd).
//
// # Sizes
//
// NewModel and NewGPT refuse, before they build anything, a nil scope and any config
// whose tensors could not fit in memory, with an error naming the fields:
// every size field (and the batch) and every single tensor the model
// allocates or computes (a product of fields, computed without overflow)
// is at most graph.MaxElements = 2^31 elements, the limit graph.Scope
// enforces (so a config accepted here is never refused by the Scope with
// an error naming only a parameter path), all the tensors together at most
// 2^34 elements (128 GiB of float64), and the repeated structures (steps
// or layers times heads) at most 2^10 (internal/bounds.MaxUnits: building
// and compiling the graph grows about quadratically with them, 49 s for
// 4096 GD blocks), so that a huge Blocks or Layers returns at once instead
// of building a graph for hours; a kernel nests at most
// layers.MaxKernelDepth combinators deep.
//
// # Usage
//
//	s, _ := graph.NewScope(graph.Float64, 1)
//	m, err := tf.NewModel(s, tf.Config{D: 2, DPrime: 5, C: 20, N: 100, Kernel: layers.Softmax(1)}, 64)
//	loss, err := losses.CrossEntropy(m.Logits, m.Target)
//	vm, err := graph.NewMachine(s, loss, graph.MachineOptions{})
//	tr, err := train.NewTrainer(vm, train.Config{LR: 1e-3})
//	for each minibatch (x, y) {
//		err = m.Feed(x, y) // x (64, 101, 2), y (64, 101), query label last
//		l, err := tr.Step()
//	}
//	a, err := tf.Analyze(m)
//	fmt.Println(a.QDiagonality, a.EDDiagonality) // near 0 if the TF learned GD
//
// Node values are readable after a run for the inputs, W_e, QueryToken,
// FQuery and Logits; Gorgonia reuses the memory of intermediate nodes
// (earlier Tokens) during a run. The logits read the last layer at the
// query alone (Model.QueryToken: its heads attend from that row only, and
// its cross-attention reads that row only, the same numbers bit for bit),
// so Tokens[L], every position's output, is computed only by a machine
// that lists it in graph.MachineOptions.Outputs (or traces).
package tf
