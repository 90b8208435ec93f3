// Package losses holds the stateless loss and evaluation functions of gdattn:
// cross-entropy from logits on a Gorgonia graph (the training loss of the
// paper's softmax-likelihood models, p(y=c|x) = softmax_c(w_{e,c}ᵀ f(x))), and
// plain-Go metrics for evaluation — negative log-likelihood, top-k accuracy and
// the mean squared error between the predicted and the true probability of the
// target class. [MSE] (graph) and [MeanSquaredError] (plain Go) are the
// loss and the metric of real-valued queries (the Gaussian likelihood of
// the paper's Appendix G).
//
// Models return logits, never probabilities; the choice of loss stays here.
//
// # Shapes
//
// Graph functions take logits of shape (B, C): one row of C class scores per
// example. Sequence models producing (B, T, C) reshape to (B*T, C) first (the
// caller's job, so that the loss never guesses which positions count).
// Targets are (B, C) rows of the same dtype, normally one-hot (see [OneHot]).
// [SparseSoftmaxCrossEntropy] takes integer labels instead, an int node (N)
// written with [SetLabels] (−1: a position not scored): the loss of the
// language models, whose C = 50,258 columns make dense targets as costly
// as the logits. The models return logits (gd.LM.Logits, tf.GPT.Logits)
// and expose their label node (Targets); the loss is built here:
//
//	loss, _ := losses.SparseSoftmaxCrossEntropy(lm.Logits, lm.Targets)
//
// [SparseSoftmaxCrossEntropyWith] takes options: Overwrite (the softmax
// and gradient in the logits' own buffer, as
// [SparseSoftmaxCrossEntropyOverwrite]) and Float32, an opt-in float32
// softmax for float32 logits, computed as PyTorch's CPU cross_entropy does
// (exponentials in float32, eight per AVX2 instruction), faster than the
// default and different from it in the last bits (relative differences of
// order 1e-6). The default computes the exponentials in float64, so that
// the examples' checkpoints and printed losses are the same on every
// machine.
//
// [FusedCrossEntropy] is [CrossEntropy] as one op (the loss of gd.Model
// with gd.Config.FuseEncoder), equal within rounding.
//
// Plain-Go functions take row-major flat slices: probs[i*C+c] is the
// probability of class c for example i, labels[i] in 0..C-1 its label.
//
// # Errors
//
// Every function validates its arguments (nil nodes, shapes, dtypes, lengths,
// label and k ranges, values that are not probabilities) and returns an error
// naming the offending argument; none panics on bad input.
//
// # Gorgonia caveat: use ops.SoftMax and ops.LogSoftMax
//
// In gorgonia v0.9.18 the softmax op's hash ignores whether it is the log
// variant, and graphs hash-cons nodes, so G.SoftMax(x, a) and G.LogSoftMax(x, a)
// of the same node x and axis a are one and the same node — whichever was
// built first; and gorgonia.org/tensor v0.9.24 subtracts the wrong maximum in
// its softmax kernels. The losses use gdattn's own ops.LogSoftMax, which
// has neither problem, so a model may expose ops.SoftMax(logits) next to
// its loss.
//
// # Usage
//
//	logits, _ := head.Forward(feats)                      // (B, C)
//	targets, _ := s.Input("targets", tensor.Shape{B, C}) // (B, C) one-hot
//	loss, _ := losses.CrossEntropy(logits, targets)       // scalar
//	...
//	oh, _ := losses.OneHot(labels, C)
//	graph.SetValue(targets, oh)
//	// evaluation, from probabilities read back from the graph:
//	nll, _ := losses.NLL(probs, labels, C)
//	acc, _ := losses.Top1(probs, labels, C)
package losses
