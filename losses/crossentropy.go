package losses

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/ops"
)

// CrossEntropy returns the scalar mean cross-entropy
//
//	L = -(1/B) Σ_i Σ_c targets[i,c] · log softmax(logits[i,:])_c
//
// of logits (B, C) against targets (B, C) of the same dtype. With one-hot
// targets this is the mean negative log-likelihood of the labels under the
// softmax likelihood p(y=c|x) = softmax_c(logits), the training loss of the
// paper; soft targets (rows of a distribution, e.g. the true p(y|x)) give the
// cross-entropy against that distribution.
//
// Targets are a dense (B, C) node rather than integer labels because Gorgonia
// v0.9.18 has no gather-by-label op with a gradient suited to this (ByIndices
// selects rows of a 1-D index only); build them with [OneHot] and feed them
// with graph.SetValue. Their values are not checked here (they may be fed
// later): rows should be non-negative and sum to 1.
//
// log softmax is computed by ops.LogSoftMax, which is stable for large
// logits and never merges with a softmax of the same logits (see the package
// documentation).
func CrossEntropy(logits, targets *G.Node) (loss *G.Node, err error) {
	const fn = "losses: CrossEntropy"
	if err := checkLogitsTargets(fn, logits, targets); err != nil {
		return nil, err
	}
	defer wrapErr(fn, &err)
	defer graph.Recover(&err)

	lsm, err := logSoftmax(logits) // (B, C)
	if err != nil {
		return nil, err
	}
	b := logits.Shape()[0]
	picked := G.Must(G.HadamardProd(lsm, targets)) // (B, C)
	total := G.Must(G.Sum(picked))                 // ()
	return G.Mul(total, scalar(logits.Dtype(), -1/float64(b)))
}

// FusedCrossEntropy is [CrossEntropy] as one op (ops.SoftmaxCrossEntropy),
// as PyTorch's F.cross_entropy computes it: the forward pass keeps each
// row's exponentials, the backward pass turns them into the gradient
// (softmax·Σ_c t_c − t)/B without a second exponential, and the graph has
// one node and its gradient instead of the log-softmax, product, sum and
// scaling and their gradients. Float32 rows take a faster single-precision
// exponential, so loss and gradient equal CrossEntropy's within rounding
// (about 1e-7 relative in float32, 1e-15 in float64), not bit for bit.
// Terms with a zero target are skipped. gd.Model uses it with
// gd.Config.FuseEncoder.
func FusedCrossEntropy(logits, targets *G.Node) (*G.Node, error) {
	const fn = "losses: FusedCrossEntropy"
	if err := checkLogitsTargets(fn, logits, targets); err != nil {
		return nil, err
	}
	loss, err := ops.SoftmaxCrossEntropy(logits, targets)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fn, err)
	}
	return loss, nil
}

// logSoftmax returns the stable log-softmax of x along its last axis.
func logSoftmax(x *G.Node) (*G.Node, error) { return ops.LogSoftMax(x) }

// scalar is a scalar constant of dtype dt.
func scalar(dt tensor.Dtype, v float64) *G.Node {
	if dt == tensor.Float32 {
		return G.NewConstant(float32(v))
	}
	return G.NewConstant(v)
}

func wrapErr(fn string, err *error) {
	if *err != nil {
		*err = fmt.Errorf("%s: %w", fn, *err)
	}
}

// checkNode checks that n is a non-nil float32/float64 node.
func checkNode(fn, name string, n *G.Node) error {
	if n == nil {
		return fmt.Errorf("%s: %s is nil", fn, name)
	}
	if err := graph.CheckDtype(n.Dtype()); err != nil {
		return fmt.Errorf("%s: %s %q: %w", fn, name, n.Name(), err)
	}
	return nil
}

// checkLogitsTargets validates a (B, C) logits node and a targets node of the
// same shape, dtype and graph.
func checkLogitsTargets(fn string, logits, targets *G.Node) error {
	if err := checkNode(fn, "logits", logits); err != nil {
		return err
	}
	if err := checkNode(fn, "targets", targets); err != nil {
		return err
	}
	if logits.Dims() != 2 {
		return fmt.Errorf("%s: logits %q has shape %v, want (B, C); reshape (B, T, C) logits to (B*T, C) first",
			fn, logits.Name(), logits.Shape())
	}
	if !targets.Shape().Eq(logits.Shape()) {
		return fmt.Errorf("%s: targets %q has shape %v, want the logits' shape %v",
			fn, targets.Name(), targets.Shape(), logits.Shape())
	}
	if targets.Dtype() != logits.Dtype() {
		return fmt.Errorf("%s: targets %q has dtype %v, want the logits' dtype %v",
			fn, targets.Name(), targets.Dtype(), logits.Dtype())
	}
	if targets.Graph() != logits.Graph() {
		return fmt.Errorf("%s: targets %q and logits %q belong to different graphs", fn, targets.Name(), logits.Name())
	}
	return nil
}
