// Package gd holds the GD-structured attention models of "On Understanding
// Attention-Based In-Context Learning for Categorical Data", and the explicit
// functional-GD reference they must match.
//
// # The models
//
// [NewModel] builds the GD models of the paper (single step, K interleaved
// blocks, multi-head updates; Config), [NewLM] the GD language model
// (LMConfig). Their kernel is a value, layers.KernelSpec: a built-in
// (layers.Softmax(g), layers.RBF(g), ...), a combination such as
// κ = rbf + β·linear, layers.Sum(layers.RBF(g), layers.Scaled(β,
// layers.Linear())), or a user kernel; its parameters are learned with α
// (log_alpha). [Construction] returns the construction's matrices as
// values (layers.Construction) for an unconstrained model (package tf) to
// start from.
//
// The likelihood is a value too (Config.Likelihood, see [Likelihood]):
// categorical (the default) or, for real-valued y (Appendix G), Gaussian(),
// whose update is f_{j,k+1} = f_{j,k} + (α/N) Σ_i (y_i − f_{i,k}) κ(x_i, x_j):
// tokens (x, y, f), no W_e, no cross-attention, prediction f_K at the
// query, fed by [Model.FeedReal]; a user [RealLikelihood] supplies another
// mean E(Y | f). [ReferenceReal] is its plain-Go reference.
//
// # The reference
//
// Reference runs the functional gradient descent of the paper's
// eqs. (2)-(3) in plain Go (no Gorgonia):
//
//	f_{j,0}   = 0
//	f_{j,k+1} = f_{j,k} + (α/N) Σ_{i=1..N} [w_{e,y_i} − E(w_e | f_{i,k})] κ(x_i, x_j)
//	E(w_e | f) = Σ_c w_{e,c} softmax_c(W_eᵀ f)
//
// for every position j, the query included (ReferenceConfig.Kernel names a
// built-in κ; ReferenceConfig.KernelFunc takes any κ as a Go function).
// RefKernel, RefSoftmax and RefExpectedEmbedding expose the kernels and the
// softmax model (eq. (1)) so that other packages can build their own checks
// from the same definitions.
//
// # Shape conventions
//
// Batches are flat, row-major []float64 slices:
//
//	x      (B, T, d)   T = N+1; positions 0..N-1 are the context, position N
//	                   (the last) is the query
//	y      (B, T)      []int labels in 0..C-1; the query label may be -1
//	                   (unknown) and is never used by GD
//	W_e    (d', C)     element (r, c) at r*C+c; column c is the embedding
//	                   w_{e,c} of category c
//	f, E   (B, T, d')  the latent function and E(w_e | f) at every position
//	probs  (B, C)      class probabilities at the query
//
// # Config schema
//
// [Config] and [LMConfig] are saved as JSON objects whose keys are the json
// tags of their fields (lower-case snake_case). Every key is written but
// "fuse_encoder", which is written only when true (so that the configs
// saved before it existed read and key the same); on
// reading, a missing key means the field's zero value (its documented
// default), and an unknown key, a key in another case, a value of the wrong
// type or an unknown enum name is an error naming the key. Enums are
// strings, kernels objects (see "Kernel specs" in package layers):
//
//	Config (gd.Model)                        LMConfig (gd.LM)
//	"d", "d_prime", "c", "n"   int           "vocab", "d_prime", "context"  int
//	"likelihood" "categorical" | "gaussian"
//	"form"     "interleaved" | "one-step"    "heads", "steps", "ff_hidden"  int
//	"blocks", "heads"          int           "kernel"   kernel | null
//	"kernel"   kernel | null (softmax(1))    "mean_e", "diag_p", "ff"       bool
//	"alpha", "lambda"          number
//	"fixed_alpha", "bias", "literal", "zero_column"  bool
//	"fuse_encoder"  bool (absent: false)
//	"erase"    "exact" | "lambda"
//	"erase_kernel"  "rbf" | "softmax"
//
// for example
//
//	{"d": 10, "d_prime": 5, "c": 25, "n": 10, "form": "interleaved", "blocks": 2,
//	 "kernel": {"name": "softmax", "gamma": 1, "learnable": true},
//	 "alpha": 10, "fixed_alpha": false, "bias": false, "heads": 1,
//	 "erase": "exact", "lambda": 100, "erase_kernel": "rbf",
//	 "literal": false, "zero_column": false}
//
// A kernel may also be written as a bare name: "rbf" is the built-in with
// g = 1, learned, except in an LMConfig, where (as the language models have
// always used it) it means g fixed at 1. The initialisers (WeInit,
// EmbedInit) are not saved.
//
// "likelihood" is "categorical" when absent. A Gaussian config has
// "d_prime" = d_y and no "c", e.g. {"likelihood": "gaussian", "d": 10,
// "d_prime": 1, "n": 10, "blocks": 3, "kernel": {"name": "linear"}}; a
// user likelihood cannot be saved.
//
// # Checkpoints
//
// [Model.Save] and [LM.Save] write a checkpoint directory (graph's format:
// one .npy file per parameter and a config.json holding the manifest and a
// config object); [Load] and [LoadLM] rebuild the model from it alone. The
// config object names the model family by its one key and carries the
// dtype and the scope path the model was built in:
//
//	{"dtype": "float64", "scope": "", "gd": {...Config...}}       gd.Model
//	{"dtype": "float32", "scope": "lm", "gd_lm": {...LMConfig...}} gd.LM
//
// ("scope" may be left out: the root). Load decodes the config strictly,
// validates it, checks the sizes for the requested batch, and checks the
// parameters the config implies (names relative to the scope, shapes, the
// dtype) against the manifest, all before it builds the model in a new
// scope and copies the parameters in. A gd.Model's parameters are "we"
// (d', C) (or (d', C−1) with zero_column; none with the Gaussian
// likelihood), "log_alpha" () unless
// fixed_alpha, the kernel's under "kernel/" (a learnable built-in:
// "kernel/log_gamma" ()), and with heads > 1 "head<m>/lambda" (1, d) and
// "head<m>/p" (d', d'); each is stored as <name with "/" as "__">.npy.
// docs/checkpoints.md ("From Python") shows a checkpoint written by numpy alone.
// [Model.SavedConfig] returns the config object, for saving with optimiser
// state through checkpoint.Save.
//
// A language model's checkpoint is self-contained when the model carries a
// text codec ([LM.SetTextCodec]; train.LMTrainer.FitText sets it, and
// [LoadLM] restores it): the config object then holds the tokeniser and the
// vocabulary,
//
//	"text": {"tokenizer": "gpt2", "vocab": "restricted", "vocab_size": 3237}
//
// with the kept GPT-2 ids of a restricted vocabulary in the extra int64
// array "vocab/gpt_ids" (data.VocabFromGPTIDs), so that a loaded model turns
// text into ids and back (train.GenerateText) without a side file. A
// training program may store its own settings under "run" (train.LMConfig.Run;
// LoadLM ignores it), as examples/language does; LoadLM also ignores the
// optimiser state, which train.LMTrainer.Resume reads.
//
// # Sizes
//
// NewModel and NewLM refuse, before they build anything, a nil scope and any config
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
//	res, err := gd.Reference(x, y, B, T, d, we, dPrime, C, gd.ReferenceConfig{
//		Steps: 3, Alpha: 1, Kernel: "rbf", Gamma: 0.5,
//	})
//	// res.F[k] is f after k steps; res.Probs[b*C+c] is p(c | query of context b).
package gd
