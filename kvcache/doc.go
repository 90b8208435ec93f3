// Package kvcache is the incremental decoding of the library's language
// models (gd.LM and tf.GPT): a [Decoder] holds a snapshot of a model's
// parameter values and, per sequence, a [Row] caching what the sequence's
// past positions contribute (the GPT's keys and values per layer, the GD
// LM's per-step values w_{e,t_i} − E(w_e|f_{i,k})), so that each new token
// costs one position's work per layer plus the output layer instead of a
// forward pass over the whole window.
//
// # The invariant
//
// Both model families are causal: the state a position contributes (its
// keys and values, its f_{i,k}) depends only on the ids at that position
// and before it, never on later ids. Appending an id therefore leaves every
// cached entry valid, and the logits after a row's last id are those of a
// full forward pass over the row's ids. A decoder's Append computes exactly
// the full forward's numbers up to the order of floating-point sums (within
// 1e-12 relative in float64 and 1e-5 in float32; the decoders' tests check
// this against the models' generation graphs).
//
// # The window
//
// A row holds at most ContextLen ids. Appending past it crops to the last
// ContextLen ids, as the full recompute does; since every position then
// moves (positional embeddings shift), a GPT row is recomputed from the
// cropped window (one forward pass over ContextLen positions, with matrix
// products), while the GD LM with one step (or MeanE), whose cached values
// do not depend on their positions, only drops its oldest entry.
//
// # Use
//
// Package train's Generator is the user-facing API: it builds a model's
// decoder (the model's NewDecoder method) and matches each context
// data.Generate asks about against the rows it caches, so greedy, sampled
// and beam decoding all run on the cache. Decoders are safe for concurrent
// use by several goroutines with distinct rows: the snapshot is read-only.
// A row is used by one goroutine at a time.
//
// Shapes: matrices are row-major slices; a batch of n positions of width d
// is (n, d). The numeric helpers run on package gemm.
package kvcache
