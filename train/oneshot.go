package train

import (
	"errors"

	"github.com/gdattn/gdattn/data"
)

// Fit trains m on the contexts of b as [Runner.Fit] does, with a Runner
// built from rc for this call and closed before Fit returns. The trained
// values stay in m's parameters (synced from the device first, when rc has
// an Executor), ready for the model's Save, [Predict] or [Evaluate].
//
// Each call starts a fresh optimiser (Adam's moments and the step count at
// zero): to go on training with the optimiser's state, to save that state,
// or to evaluate between epochs, keep a Runner instead.
func Fit(m Model, b *data.Batch, rc RunnerConfig, fc FitConfig) (err error) {
	if rc.EvalOnly {
		return errors.New("train: Fit: RunnerConfig.EvalOnly is set")
	}
	r, err := NewRunner(m, rc)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.Close()) }()
	if err := r.Fit(b, fc); err != nil {
		return err
	}
	return r.trainer.SyncParams()
}

// Predict returns m's query probabilities (b.B, C) for the contexts of b,
// row-major, as [Runner.Predict] does, with an evaluation-only Runner on
// Gorgonia's Go VM built for this call (e.g. for a model a Load returned).
// To predict many sets, or on a device, keep a Runner built with
// RunnerConfig{EvalOnly: true}.
func Predict(m Model, b *data.Batch) (_ []float64, err error) {
	r, err := NewRunner(m, RunnerConfig{EvalOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, r.Close()) }()
	return r.Predict(b)
}

// Evaluate scores m on the contexts of b (top-1, NLL, oracle) as
// [Runner.Evaluate] does, with an evaluation-only Runner on Gorgonia's Go
// VM built for this call. Every query label of b must be known.
func Evaluate(m Model, b *data.Batch) (_ Metrics, err error) {
	r, err := NewRunner(m, RunnerConfig{EvalOnly: true})
	if err != nil {
		return Metrics{}, err
	}
	defer func() { err = errors.Join(err, r.Close()) }()
	return r.Evaluate(b)
}
