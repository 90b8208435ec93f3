package losses

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/gdattn/gdattn/ops"
)

// SparseSoftmaxCrossEntropy returns the mean negative log-likelihood
//
//	L = −(1/n) Σ_{i: labels[i] ≥ 0} log softmax(logits[i, :])_{labels[i]}
//
// of integer labels under logits (N, C), where n counts the labels that are
// not −1 (−1 marks a position not scored, such as padding; with none scored
// L = 0). It is [CrossEntropy] with the one-hot targets left implicit
// (TensorFlow's sparse_softmax_cross_entropy_with_logits): for a language
// model's N = B·T positions and C = 50,258 tokens the dense (N, C) targets
// would cost as much as the logits. labels is an int node of shape (N)
// (layers.NewIDs makes one; a language model exposes its own), written with
// [SetLabels]; a label outside [−1, C) fails the run with an error. The
// gradient w.r.t. the logits is (softmax − onehot)/n, computed stably (each
// row's maximum is subtracted), by one op (ops.SparseCrossEntropy) that
// keeps the softmax of the forward pass for the backward pass.
func SparseSoftmaxCrossEntropy(logits, labels *G.Node) (*G.Node, error) {
	loss, err := ops.SparseCrossEntropy(logits, labels)
	if err != nil {
		return nil, fmt.Errorf("losses: SparseSoftmaxCrossEntropy: %w", err)
	}
	return loss, nil
}

// SparseSoftmaxCrossEntropyOverwrite is [SparseSoftmaxCrossEntropy] for a
// training loop that never reads the logits' value after a run: on a tied
// output layer (ops.TiedLogits) with no other reader it computes the softmax
// and its gradient in the logits' own buffer (ops.SparseCrossEntropyOverwrite),
// one vocabulary-sized buffer fewer, with the same loss and gradients bit for
// bit. The logits' value is then not the logits after a run.
func SparseSoftmaxCrossEntropyOverwrite(logits, labels *G.Node) (*G.Node, error) {
	loss, err := ops.SparseCrossEntropyOverwrite(logits, labels)
	if err != nil {
		return nil, fmt.Errorf("losses: SparseSoftmaxCrossEntropyOverwrite: %w", err)
	}
	return loss, nil
}

// SparseOptions are the options of [SparseSoftmaxCrossEntropyWith]; the
// zero value is [SparseSoftmaxCrossEntropy].
type SparseOptions struct {
	// Overwrite is [SparseSoftmaxCrossEntropyOverwrite]: on a tied output
	// layer the softmax and its gradient reuse the logits' buffer.
	Overwrite bool
	// Float32 computes the softmax of float32 logits in float32 arithmetic,
	// as PyTorch's CPU cross_entropy does for float32 logits (exponentials
	// by a single-precision polynomial, eight per AVX2 instruction; their
	// sum in float64), instead of the default's float64 exponentials. Loss
	// and gradients then differ from the default's in their last bits
	// (relative differences of order 1e-6), and the step is faster; the
	// bits are the same with or without AVX2. float64 logits ignore it.
	// See ops.SparseCrossEntropyOptions.
	Float32 bool
}

// SparseSoftmaxCrossEntropyWith is [SparseSoftmaxCrossEntropy] with
// options.
func SparseSoftmaxCrossEntropyWith(logits, labels *G.Node, o SparseOptions) (*G.Node, error) {
	loss, err := ops.SparseCrossEntropyWith(logits, labels, ops.SparseCrossEntropyOptions{Overwrite: o.Overwrite, Float32: o.Float32})
	if err != nil {
		return nil, fmt.Errorf("losses: SparseSoftmaxCrossEntropyWith: %w", err)
	}
	return loss, nil
}

// SetLabels writes labels (each in [−1, c), −1 meaning "not scored") into
// the int node read by [SparseSoftmaxCrossEntropy], in place, so a compiled
// machine reads them on its next run. It returns an error, and writes
// nothing, if node is not an int tensor node of len(labels) elements or a
// label is out of range; the error names the first offending position.
func SetLabels(node *G.Node, labels []int, c int) error {
	var dst []int
	if node != nil && node.Value() != nil {
		dst, _ = node.Value().Data().([]int)
	}
	if dst == nil {
		return fmt.Errorf("losses: labels: not an int tensor node with a value (make it with layers.NewIDs)")
	}
	if len(dst) != len(labels) {
		return fmt.Errorf("losses: labels %q: %d labels for %d positions", node.Name(), len(labels), len(dst))
	}
	for i, l := range labels {
		if l < -1 || l >= c {
			return fmt.Errorf("losses: labels %q: label %d at position %d is outside [-1, %d)", node.Name(), l, i, c)
		}
	}
	copy(dst, labels)
	return nil
}
