// Package data generates the in-context tasks of "On Understanding
// Attention-Based In-Context Learning for Categorical Data" as flat,
// row-major batches.
//
// # Shape conventions
//
// A Batch holds B episodes of T = N+1 positions each; positions 0..N-1 are
// the context pairs (x_i, y_i) and position N (the last) is the query:
//
//	X  (B, T, D)  covariates, element (b, t, i) at (b*T+t)*D+i
//	Y  (B, T)     labels in 0..C-1; the query label is included for training
//	              and may be -1 where unknown
//	P  (B, T, C)  true class probabilities p(c | x), where known (else nil)
//
// Embedding matrices W_e are (d', C), row-major: element (r, c) at r*C+c, and
// column c is the embedding w_{e,c} of category c.
//
// # Synthetic task
//
// Synthetic is the task of the paper's Appendix D: W_e is drawn once from
// N(0, 1); each context draws its own latent function f(x), a sum of RBF bumps
// around random anchors weighted by the embeddings of randomly chosen
// categories, and labels are drawn from softmax(W_eᵀ f(x)). Everything is
// deterministic given the seeds:
//
//	task, err := data.NewSynthetic(data.DefaultSyntheticConfig(), 1) // W_e from seed 1
//	batch, err := task.Sample(64, rand.New(rand.NewPCG(2, 2)))      // 64 contexts
//	acc := batch.Oracle() // Bayes top-1 accuracy at the queries
//
// Zero fields of SyntheticConfig mean the defaults of DefaultSyntheticConfig.
package data
