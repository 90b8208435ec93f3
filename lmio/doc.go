// Package lmio is the input and output layer that the language models of
// packages gd (gd.LM) and tf (tf.GPT) share around their bodies: the window
// inputs (ids, targets, the one-hot selection of a generation graph), the
// token embedding, the choice of the rows whose logits a graph computes, the
// output head tied to the embedding, the feeding of a minibatch, and the text
// codec a model carries. Both families embed a [*Window], so this code is
// written once; the models' bodies (GD steps, transformer blocks) stay in
// their packages. A new causal language model over token ids is written the
// same way: [New], its body on the embedded ids, [Rows], [Head].
//
// # Shapes
//
// A minibatch is B windows of T ids, row-major (B, T). A training graph
// computes the logits (B·T, C) of every next token over a vocabulary of C
// ids and takes targets (B·T), -1 marking a position that is not scored. A
// generation graph ("next") computes the logits (B, C) of the token after
// each window's last fed position, chosen by a one-hot row (B, T) that
// [Window.FeedNext] writes from the windows' lengths.
//
// # Parameters and inputs
//
// In the model's scope: the inputs "ids" (B, T), "targets" (B·T, training
// graph) and "select" (B, T, generation graph); the token embedding
// "wte/..." (C, d) and the final layer norm "ln_f/...". The logits are
// ln_f(h) W_e with W_e = wteᵀ (weight tying, as GPT-2 and nanoGPT).
//
// # Usage
//
//	w, emb, err := lmio.New(s, "my: lm", B, T, C, d, graph.Normal(0.02), next)
//	x, err := emb.Lookup(lmio.IDs(w))   // (B, T, d)
//	// ... the model's body on x ...
//	h, err := lmio.Rows(w, x, d)        // (B·T, d), or (B, d) with next
//	err = lmio.Head(w, h, d)            // logits, and the targets input
//	logits, targets, nextLogits := w.LMOutputs()
//
// The functions that build a model are package functions, not methods, so a
// model that embeds a *Window exports only the methods its users need
// (Feed, FeedNext, BatchSize, ContextLen, VocabSize, Generates, LMOutputs,
// TextCodec, SetTextCodec: what makes it a train.LM).
package lmio
