package train

import (
	"fmt"

	"github.com/gdattn/gdattn/data"
)

// EpochMetrics is the evaluation after one epoch of training.
type EpochMetrics struct {
	Epoch     int     `json:"epoch"`
	TrainLoss float64 `json:"train_loss"` // mean minibatch loss of the epoch
	Metrics
}

// String formats the epoch, its training loss and the metrics on one line
// (without it, %v would print only the embedded Metrics).
func (e EpochMetrics) String() string {
	return fmt.Sprintf("epoch %d  train loss %.4f  %v", e.Epoch, e.TrainLoss, e.Metrics)
}

// FitCurve trains like [Runner.Fit] and evaluates test after every `every`
// epochs and after the last one, returning the training curve. A
// cfg.AfterEpoch callback still runs, after the evaluation. test must not be
// the training set if the curve is to show test performance. On error the
// curve so far is returned with it.
func (r *Runner) FitCurve(train, test *data.Batch, cfg FitConfig, every int) ([]EpochMetrics, error) {
	if every <= 0 {
		return nil, fmt.Errorf("train: FitCurve: every = %d, want > 0", every)
	}
	if err := r.checkSet("FitCurve: test set", test); err != nil {
		return nil, err
	}
	var curve []EpochMetrics
	next := cfg.AfterEpoch
	cfg.AfterEpoch = func(epoch int, loss float64) error {
		if epoch%every == 0 || epoch == cfg.Epochs {
			m, err := r.Evaluate(test)
			if err != nil {
				return fmt.Errorf("train: FitCurve: evaluation after epoch %d: %w", epoch, err)
			}
			curve = append(curve, EpochMetrics{Epoch: epoch, TrainLoss: loss, Metrics: m})
		}
		if next != nil {
			return next(epoch, loss)
		}
		return nil
	}
	err := r.Fit(train, cfg)
	return curve, err
}
