package losses

import (
	"fmt"
	"math"

	"github.com/gdattn/gdattn/graph"
	G "gorgonia.org/gorgonia"
)

// MSE is the mean squared error of predictions pred (B, D) against
// targets (B, D) of the same dtype and graph: the scalar
//
//	(1/(B·D)) Σ_{b,c} (pred[b,c] − target[b,c])²,
//
// the loss of a real-valued query under the Gaussian likelihood of
// Appendix G (its NLL up to the factor 2/D and a constant).
func MSE(pred, target *G.Node) (loss *G.Node, err error) {
	const fn = "losses: MSE"
	if err := checkNode(fn, "pred", pred); err != nil {
		return nil, err
	}
	if err := checkNode(fn, "target", target); err != nil {
		return nil, err
	}
	if pred.Dims() != 2 {
		return nil, fmt.Errorf("%s: pred %q has shape %v, want (B, D)", fn, pred.Name(), pred.Shape())
	}
	if !target.Shape().Eq(pred.Shape()) {
		return nil, fmt.Errorf("%s: target %q has shape %v, want the predictions' shape %v", fn, target.Name(), target.Shape(), pred.Shape())
	}
	if target.Dtype() != pred.Dtype() {
		return nil, fmt.Errorf("%s: target %q has dtype %v, want the predictions' dtype %v", fn, target.Name(), target.Dtype(), pred.Dtype())
	}
	if target.Graph() != pred.Graph() {
		return nil, fmt.Errorf("%s: target %q and pred %q belong to different graphs", fn, target.Name(), pred.Name())
	}
	defer wrapErr(fn, &err)
	defer graph.Recover(&err)
	n := pred.Shape().TotalSize()
	d := G.Must(G.Sub(pred, target))         // (B, D)
	sq := G.Must(G.Sum(G.Must(G.Square(d)))) // ()
	return G.Mul(sq, scalar(pred.Dtype(), 1/float64(n)))
}

// MeanSquaredError is the plain-Go [MSE]: the mean of (pred[i] − target[i])²
// over all entries. It returns an error on a length mismatch, empty input
// or a NaN/±Inf value.
func MeanSquaredError(pred, target []float64) (float64, error) {
	if len(pred) != len(target) {
		return 0, fmt.Errorf("losses: MeanSquaredError: %d predictions, %d targets", len(pred), len(target))
	}
	if len(pred) == 0 {
		return 0, fmt.Errorf("losses: MeanSquaredError: no values")
	}
	sum := 0.0
	for i, p := range pred {
		if math.IsNaN(p) || math.IsInf(p, 0) || math.IsNaN(target[i]) || math.IsInf(target[i], 0) {
			return 0, fmt.Errorf("losses: MeanSquaredError: element %d: prediction %v, target %v, want finite values", i, p, target[i])
		}
		e := p - target[i]
		sum += e * e
	}
	return sum / float64(len(pred)), nil
}
