package losses

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/gdattn/gdattn/graph"
)

// ProbMSE returns the mean squared error between the predicted and the true
// probability of the target class,
//
//	(1/B) Σ_i (probs[i, labels[i]] - trueProbs[i, labels[i]])²,
//
// the probability-accuracy measure used on synthetic data, where the
// generating p(y|x) is known. probs and trueProbs are (B, C) row-major, every
// value in [0, 1]; B = len(labels) >= 1.
func ProbMSE(probs, trueProbs []float64, labels []int, C int) (float64, error) {
	const fn = "losses: ProbMSE"
	if err := checkProbs(fn, "probs", probs, labels, C); err != nil {
		return 0, err
	}
	if err := checkProbs(fn, "trueProbs", trueProbs, labels, C); err != nil {
		return 0, err
	}
	sum := 0.0
	for i, y := range labels {
		d := probs[i*C+y] - trueProbs[i*C+y]
		sum += d * d
	}
	return sum / float64(len(labels)), nil
}

// ProbMSENode is the graph version of [ProbMSE]: the scalar
//
//	(1/B) Σ_i (Σ_c softmax(logits[i,:])_c · targets[i,c] - trueProb[i])²
//
// for logits (B, C), one-hot targets (B, C) and trueProb (B,) holding the true
// probability of each example's target class, all of one dtype. With one-hot
// targets the inner sum is the predicted probability of the target class.
// The softmax is computed as exp(ops.LogSoftMax(logits)), so it shares its
// log-softmax node with [CrossEntropy] on the same logits.
func ProbMSENode(logits, targets, trueProb *G.Node) (loss *G.Node, err error) {
	const fn = "losses: ProbMSENode"
	if err := checkLogitsTargets(fn, logits, targets); err != nil {
		return nil, err
	}
	if err := checkNode(fn, "trueProb", trueProb); err != nil {
		return nil, err
	}
	b := logits.Shape()[0]
	if trueProb.Dims() != 1 || trueProb.Shape()[0] != b {
		return nil, fmt.Errorf("%s: trueProb %q has shape %v, want (%d)", fn, trueProb.Name(), trueProb.Shape(), b)
	}
	if trueProb.Dtype() != logits.Dtype() {
		return nil, fmt.Errorf("%s: trueProb %q has dtype %v, want the logits' dtype %v", fn, trueProb.Name(), trueProb.Dtype(), logits.Dtype())
	}
	if trueProb.Graph() != logits.Graph() {
		return nil, fmt.Errorf("%s: trueProb %q and logits %q belong to different graphs", fn, trueProb.Name(), logits.Name())
	}
	defer wrapErr(fn, &err)
	defer graph.Recover(&err)

	lsm, err := logSoftmax(logits) // (B, C)
	if err != nil {
		return nil, err
	}
	p := G.Must(G.Exp(lsm))                                    // (B, C)
	py := G.Must(G.Sum(G.Must(G.HadamardProd(p, targets)), 1)) // (B)
	d := G.Must(G.Sub(py, trueProb))                           // (B)
	sq := G.Must(G.Sum(G.Must(G.Square(d))))                   // ()
	return G.Mul(sq, scalar(logits.Dtype(), 1/float64(b)))
}
