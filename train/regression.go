package train

import (
	"fmt"
	"math"
	"time"

	G "gorgonia.org/gorgonia"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/losses"
)

// RealValuedModel is a [Model] that may predict real-valued targets (the
// Gaussian likelihood of Appendix G). When RealValued reports true, the
// [Runner] feeds it with FeedReal from regression batches (data.Batch with
// DY > 0), trains QueryLoss (or, when that is nil, the mean squared error
// of QueryLogits, the prediction (B, d_y), against QueryTarget (B, d_y)),
// and Evaluate reports the mean squared error. gd.Model (with a real-valued
// likelihood) and tf.Regressor implement it.
type RealValuedModel interface {
	Model
	// RealValued reports whether the model predicts real-valued targets.
	RealValued() bool
	// FeedReal loads a minibatch: x (B, T, d) and y (B, T, d_y) row-major,
	// the query's target in the last row of each context (NaN unknown).
	FeedReal(x, y []float64) error
	// QueryLoss is the training loss of the queries (a scalar node), or nil
	// for the mean squared error of the prediction.
	QueryLoss() *G.Node
}

// CrossEntropyModel is a classifier [Model] that builds its own training
// loss, the mean cross-entropy of its QueryLogits against its QueryTarget
// (gd.Model: one op with gd.Config.FuseEncoder); the [Runner] of a model
// without it builds losses.CrossEntropy.
type CrossEntropyModel interface {
	Model
	// CrossEntropyLoss returns the scalar loss node; each call adds nodes
	// to the model's graph.
	CrossEntropyLoss() (*G.Node, error)
}

// lossNode is the training loss: the cross-entropy of the logits, or the
// real-valued model's own loss (MSE by default).
func (r *Runner) lossNode(logits, target *G.Node) (*G.Node, error) {
	if r.real == nil {
		if ce, ok := r.m.(CrossEntropyModel); ok {
			return ce.CrossEntropyLoss()
		}
		return losses.CrossEntropy(logits, target)
	}
	if l := r.real.QueryLoss(); l != nil {
		return l, nil
	}
	return losses.MSE(logits, target)
}

// feed loads one minibatch: labels y for a classifier, targets yr for a
// real-valued model.
func (r *Runner) feed(x []float64, y []int, yr []float64) error {
	if r.real != nil {
		return r.real.FeedReal(x, yr)
	}
	return r.m.Feed(x, y)
}

// checkRegressionSet checks that b and the model are both real-valued with
// the same target dimension.
func (r *Runner) checkRegressionSet(what string, b *data.Batch) error {
	switch {
	case r.real == nil:
		return fmt.Errorf("train: %s: the contexts have real-valued targets (DY = %d), the model is a classifier", what, b.DY)
	case !b.Regression():
		return fmt.Errorf("train: %s: the contexts have class labels, the model predicts real-valued targets (d_y = %d)", what, r.classes)
	case b.DY != r.classes:
		return fmt.Errorf("train: %s: the contexts have targets of dimension DY = %d, the model %d", what, b.DY, r.classes)
	}
	return nil
}

// checkQueryTargets checks that every query's label or target is known.
func (r *Runner) checkQueryTargets(what string, b *data.Batch) error {
	for i := 0; i < b.B; i++ {
		if r.real == nil {
			if b.Y[i*b.T+b.T-1] < 0 {
				if what == "Fit" {
					return fmt.Errorf("train: Fit: context %d has no query label (-1); training needs every label", i)
				}
				return fmt.Errorf("train: %s: context %d has no query label (-1); use Predict", what, i)
			}
			continue
		}
		q := (i*b.T + b.T - 1) * b.DY
		for _, v := range b.R[q : q+b.DY] {
			if math.IsNaN(v) {
				return fmt.Errorf("train: %s: context %d has no query target (NaN); %s needs every target", what, i, what)
			}
		}
	}
	return nil
}

// evaluateReal is Evaluate for a real-valued model.
func (r *Runner) evaluateReal(b *data.Batch, start time.Time) (Metrics, error) {
	if err := r.checkQueryTargets("Evaluate", b); err != nil {
		return Metrics{}, err
	}
	pred, err := r.predict(b)
	if err != nil {
		return Metrics{}, err
	}
	mse, err := losses.MeanSquaredError(pred, b.QueryTargets())
	if err != nil {
		return Metrics{}, fmt.Errorf("train: Evaluate: %w", err)
	}
	return Metrics{Top1: math.NaN(), NLL: math.NaN(), MSE: mse, Regression: true, Oracle: b.Oracle(),
		N: b.B, Seconds: time.Since(start).Seconds()}, nil
}
