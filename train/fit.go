package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"time"

	G "gorgonia.org/gorgonia"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/losses"
	"github.com/gdattn/gdattn/ops"
)

// Model is an in-context model built for minibatches of BatchSize
// contexts: a classifier (gd.Model and tf.Model satisfy it), or a regressor
// of real-valued targets when it also implements [RealValuedModel] and
// reports RealValued (a gd.Model with the Gaussian likelihood, a
// tf.Regressor).
type Model interface {
	// Scope holds the model's graph and parameters.
	Scope() *graph.Scope
	// BatchSize is the number of contexts B of a minibatch.
	BatchSize() int
	// Feed loads a minibatch: x (B, T, d) row-major; y (B, T), query label
	// last (-1 unknown).
	Feed(x []float64, y []int) error
	// QueryLogits are the logits of the query (B, C); for a real-valued
	// model, the prediction of the query's target (B, d_y).
	QueryLogits() *G.Node
	// QueryTarget is the one-hot of the query labels (B, C); for a
	// real-valued model, the query's target (B, d_y).
	QueryTarget() *G.Node
}

// RunnerConfig configures [NewRunner].
type RunnerConfig struct {
	// Optim configures the [Trainer] Fit uses (Adam by default; LR or
	// Schedule must be set). Set Optim.Total to the planned number of steps
	// ([Steps]) for the progress ETA; ProgressEvery 0 then means a line
	// every max(1, Total/10) steps (100 without Total).
	Optim Config
	// EvalOnly compiles only the evaluation machine: Predict and Evaluate
	// work, Fit returns an error, and Optim is ignored.
	EvalOnly bool
	// Executor, if non-nil, runs the training and evaluation machines (e.g.
	// graph/cuda's executor on a GPU); nil means Gorgonia's Go VM.
	Executor graph.ExecutorFactory
}

// FitConfig configures one call of [Runner.Fit].
type FitConfig struct {
	// Epochs is the number of passes over the training set (> 0).
	Epochs int
	// Seed shuffles the contexts: every call of Fit draws the epochs'
	// orders from PCG(Seed, 0x5eed), so the same Seed gives the same
	// minibatches.
	Seed uint64
	// AfterEpoch, if non-nil, is called after every epoch (1-based) with
	// the epoch's mean minibatch loss and may evaluate the model;
	// returning an error stops training with that error.
	AfterEpoch func(epoch int, meanLoss float64) error
}

// Runner holds the compiled machines of a [Model]: a training machine
// (cross-entropy of the query logits against the query target; for a
// real-valued model its QueryLoss, or else the mean squared error of the
// prediction) driven by a [Trainer], and a forward-only evaluation machine
// (query probabilities; for a real-valued model the prediction) on the same
// graph, so a training curve can evaluate after every epoch.
//
// Runners and the one-shot [Predict], [Evaluate] and [Fit] may be used
// from several goroutines, on one model or many: each minibatch is fed,
// run and read holding the model's graph (graph.Scope.Lock), so calls on
// one model are serialised (a Predict during a Fit sees the parameters
// between two steps) and calls on separate models run in parallel. One
// Runner's Fit must not run in two goroutines at once.
type Runner struct {
	m       Model
	real    RealValuedModel // non-nil for a real-valued model
	batch   int
	classes int            // C, or d_y for a real-valued model
	train   *graph.Machine // nil when EvalOnly
	trainer *Trainer       // nil when EvalOnly
	eval    *graph.Machine
	probs   *G.Node
}

// NewRunner checks the model's shapes and compiles its machines.
func NewRunner(m Model, cfg RunnerConfig) (_ *Runner, err error) {
	if m == nil {
		return nil, errors.New("train: runner: model is nil")
	}
	if v := reflect.ValueOf(m); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, fmt.Errorf("train: runner: model is a nil %T", m)
	}
	s := m.Scope()
	B := m.BatchSize()
	logits, target := m.QueryLogits(), m.QueryTarget()
	switch {
	case s == nil:
		return nil, errors.New("train: runner: the model's scope is nil")
	case B <= 0:
		return nil, fmt.Errorf("train: runner: batch size %d, want > 0", B)
	case logits == nil || target == nil:
		return nil, errors.New("train: runner: the model's query logits or target node is nil")
	}
	if sh := logits.Shape(); len(sh) != 2 || sh[0] != B || sh[1] <= 0 {
		return nil, fmt.Errorf("train: runner: query logits of shape %v, want (%d, C)", sh, B)
	}
	if !logits.Shape().Eq(target.Shape()) {
		return nil, fmt.Errorf("train: runner: query target of shape %v, logits %v", target.Shape(), logits.Shape())
	}
	r := &Runner{m: m, batch: B, classes: logits.Shape()[1]}
	if rv, ok := m.(RealValuedModel); ok && rv.RealValued() {
		r.real = rv
	}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	// Building the runner adds nodes to the model's graph: one goroutine
	// at a time (graph.Scope.Lock). The deferred Unlock runs before the
	// deferred Close.
	s.Lock()
	defer s.Unlock()
	if r.real != nil {
		r.probs = logits
	} else if r.probs, err = ops.SoftMax(logits); err != nil {
		return nil, fmt.Errorf("train: runner: %w", err)
	}
	if !cfg.EvalOnly {
		loss, err := r.lossNode(logits, target)
		if err != nil {
			return nil, fmt.Errorf("train: runner: %w", err)
		}
		// ReuseGrads: the trainer reads the gradients within its Step and
		// keeps no view of them across steps (it rebuilds them each step),
		// and the runner hands no gradient out, so each Run may overwrite
		// the last Run's gradients instead of allocating them afresh.
		if r.train, err = graph.NewMachine(s, loss, graph.MachineOptions{Executor: cfg.Executor, ReuseGrads: true}); err != nil {
			return nil, fmt.Errorf("train: runner: %w", err)
		}
	}
	if r.eval, err = graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{r.probs}, Executor: cfg.Executor}); err != nil {
		return nil, fmt.Errorf("train: runner: %w", err)
	}
	if !cfg.EvalOnly {
		oc := cfg.Optim
		if oc.ProgressEvery == 0 && oc.Total > 0 {
			oc.ProgressEvery = max(1, oc.Total/10)
		}
		if r.trainer, err = NewTrainer(r.train, oc); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Close releases the machines.
func (r *Runner) Close() error {
	var errs []error
	for _, m := range []*graph.Machine{r.train, r.eval} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}

// Trainer returns the trainer Fit uses (nil for an EvalOnly runner): save
// checkpoints with its Save, which syncs device-resident parameters first.
// Its machine reuses the gradient buffers from step to step
// (graph.MachineOptions.ReuseGrads): a gradient read with p.Grad() after a
// step holds that step's values until the next step overwrites them.
func (r *Runner) Trainer() *Trainer { return r.trainer }

// Steps is the number of optimiser steps Fit makes in epochs over n
// contexts with minibatches of batch: epochs·ceil(n/batch); 0 when an
// argument is not positive, math.MaxInt when the count does not fit in an
// int.
func Steps(n, batch, epochs int) int {
	if n <= 0 || batch <= 0 || epochs <= 0 {
		return 0
	}
	per := n/batch + min(1, n%batch)
	if per > math.MaxInt/epochs {
		return math.MaxInt
	}
	return epochs * per
}

// checkSet validates a context set against the model.
func (r *Runner) checkSet(what string, b *data.Batch) error {
	if b == nil {
		return fmt.Errorf("train: %s: the context set is nil", what)
	}
	if b.B == 0 {
		return fmt.Errorf("train: %s: empty context set", what)
	}
	if err := b.Validate(); err != nil {
		return fmt.Errorf("train: %s: %w", what, err)
	}
	if r.real != nil || b.Regression() {
		return r.checkRegressionSet(what, b)
	}
	if b.C != r.classes {
		return fmt.Errorf("train: %s: the contexts have C = %d classes, the model %d", what, b.C, r.classes)
	}
	return nil
}

// Fit trains the model for cfg.Epochs epochs over the contexts of b, in
// minibatches of the model's batch size B, the contexts shuffled every epoch
// (see FitConfig.Seed); every query label of b must be known.
//
// The last minibatch of an epoch, when b.B is not a multiple of B, is
// filled up with the first contexts of that epoch's order (so every step
// sees B distinct contexts when b.B >= B, and no context is dropped); an
// epoch therefore makes ceil(b.B/B) steps ([Steps]).
//
// The trainer's guard stops Fit with an error naming the step when the loss
// or a gradient is NaN or ±Inf, before the parameters change.
//
// A classifier of package gd or tf gets the set prepared once
// (layers.Encoder.PrepareContexts): while Fit runs it holds a copy of b's
// values in the model's dtype (half of b.X's bytes for a float32 model, as
// many for a float64 one) and of its labels.
func (r *Runner) Fit(b *data.Batch, cfg FitConfig) error {
	if r.trainer == nil {
		return errors.New("train: Fit: the runner was built EvalOnly")
	}
	if cfg.Epochs <= 0 {
		return fmt.Errorf("train: Fit: Epochs = %d, want > 0", cfg.Epochs)
	}
	if err := r.checkSet("Fit", b); err != nil {
		return err
	}
	if err := r.checkQueryTargets("Fit", b); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	B := r.batch
	// A classifier that feeds a prepared set (tf.Model, gd.Model) gets the
	// set checked and converted to its dtype once, then each minibatch's
	// rows; any other model a copy of each minibatch.
	pf, direct := r.m.(preparedFeeder)
	direct = direct && r.real == nil
	var set *layers.Contexts
	if direct {
		var err error
		if set, err = pf.PrepareContexts(b.X, b.Y); err != nil {
			return fmt.Errorf("train: Fit: %w", err)
		}
	}
	var x, yr []float64
	var y []int
	if !direct {
		x = make([]float64, B*b.T*b.D)
		y = make([]int, B*b.T)
		yr = make([]float64, B*b.T*b.DY) // real-valued targets (empty for a classifier)
	}
	rows := make([]int, B)
	for ep := 1; ep <= cfg.Epochs; ep++ {
		perm := rng.Perm(b.B)
		sum, n := 0.0, 0
		for lo := 0; lo < b.B; lo += B {
			for k := range rows {
				rows[k] = perm[(lo+k)%b.B] // past the end: the start of this epoch's order
			}
			var l float64
			var err error
			if direct {
				l, err = r.stepPrepared(pf, set, rows)
			} else {
				for k, c := range rows {
					copy(x[k*b.T*b.D:(k+1)*b.T*b.D], b.X[c*b.T*b.D:(c+1)*b.T*b.D])
					if r.real != nil {
						copy(yr[k*b.T*b.DY:(k+1)*b.T*b.DY], b.R[c*b.T*b.DY:(c+1)*b.T*b.DY])
					} else {
						copy(y[k*b.T:(k+1)*b.T], b.Y[c*b.T:(c+1)*b.T])
					}
				}
				l, err = r.step(x, y, yr)
			}
			if err != nil {
				return fmt.Errorf("train: Fit: epoch %d: %w", ep, err)
			}
			sum += l
			n++
		}
		if cfg.AfterEpoch != nil {
			if err := cfg.AfterEpoch(ep, sum/float64(n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// step feeds one minibatch and makes one optimiser step, holding the
// model's graph (graph.Scope.Lock).
func (r *Runner) step(x []float64, y []int, yr []float64) (float64, error) {
	s := r.m.Scope()
	s.Lock()
	defer s.Unlock()
	if err := r.feed(x, y, yr); err != nil {
		return 0, err
	}
	return r.trainer.Step()
}

// preparedFeeder is a [Model] that loads minibatches of contexts from a set
// it prepared once (tf.Model and gd.Model, through
// layers.Encoder.PrepareContexts and FeedPrepared): the same inputs as Feed
// of the contexts copied out, without checking and converting them every
// step. Fit uses it for classifiers.
type preparedFeeder interface {
	PrepareContexts(x []float64, y []int) (*layers.Contexts, error)
	FeedPrepared(s *layers.Contexts, rows []int) error
}

// stepPrepared is step for the minibatch of contexts rows of set, fed by f.
func (r *Runner) stepPrepared(f preparedFeeder, set *layers.Contexts, rows []int) (float64, error) {
	s := r.m.Scope()
	s.Lock()
	defer s.Unlock()
	if err := f.FeedPrepared(set, rows); err != nil {
		return 0, err
	}
	return r.trainer.Step()
}

// Metrics summarises an evaluation.
type Metrics struct {
	// Top1 is the fraction of queries whose most probable class is the
	// label; NLL the mean negative log-likelihood of the labels.
	Top1, NLL float64
	// Oracle is the set's mean maximal true probability of the query (the
	// Bayes top-1 accuracy), NaN when the set carries no true
	// probabilities.
	Oracle float64
	// N is the number of contexts, Seconds the time the evaluation took.
	N       int
	Seconds float64
	// Regression marks the metrics of a real-valued model: MSE is then the
	// mean squared error of the query predictions (over contexts and target
	// entries), Oracle the mean Bayes error, and Top1 and NLL are NaN.
	Regression bool
	MSE        float64
}

// String formats the metrics on one line; an oracle that is not known (NaN:
// the set carries no true probabilities) prints as "oracle unknown".
func (m Metrics) String() string {
	if m.Regression {
		// The regression oracle is the mean Bayes error (NaN: not known).
		if math.IsNaN(m.Oracle) {
			return fmt.Sprintf("MSE %.4f  oracle unknown  (%d contexts)", m.MSE, m.N)
		}
		return fmt.Sprintf("MSE %.4f  oracle %.4f  (%d contexts)", m.MSE, m.Oracle, m.N)
	}
	return fmt.Sprintf("top-1 %.4f  NLL %.4f  %s  (%d contexts)", m.Top1, m.NLL, oracleString(m.Oracle), m.N)
}

func oracleString(o float64) string {
	if math.IsNaN(o) {
		return "oracle unknown"
	}
	return fmt.Sprintf("oracle %.4f", o)
}

// Predict returns the query probabilities (b.B, C) of every context of b,
// row-major; for a real-valued model the predictions (b.B, d_y). The query
// labels (targets) are not used (they may be -1, NaN). The last
// minibatch is padded with copies of the last context, whose outputs are
// dropped. An error names the first context whose probabilities are not
// finite (e.g. from inputs so large that the model overflows): nothing is
// returned then.
func (r *Runner) Predict(b *data.Batch) ([]float64, error) {
	if err := r.checkSet("Predict", b); err != nil {
		return nil, err
	}
	return r.predict(b)
}

func (r *Runner) predict(b *data.Batch) ([]float64, error) {
	s := r.m.Scope()
	s.Lock()
	defer s.Unlock()
	if r.trainer != nil {
		if err := r.trainer.SyncParams(); err != nil {
			return nil, err
		}
	}
	B, C := r.batch, r.classes
	out := make([]float64, 0, b.B*C)
	x := make([]float64, B*b.T*b.D)
	y := make([]int, B*b.T)
	yr := make([]float64, B*b.T*b.DY)
	for lo := 0; lo < b.B; lo += B {
		for k := 0; k < B; k++ {
			c := min(lo+k, b.B-1) // pad the last minibatch with the last context
			copy(x[k*b.T*b.D:(k+1)*b.T*b.D], b.X[c*b.T*b.D:(c+1)*b.T*b.D])
			if r.real != nil {
				q := yr[k*b.T*b.DY : (k+1)*b.T*b.DY]
				copy(q, b.R[c*b.T*b.DY:(c+1)*b.T*b.DY])
				for i := (b.T - 1) * b.DY; i < len(q); i++ {
					q[i] = math.NaN() // the query's target is never needed to predict
				}
				continue
			}
			copy(y[k*b.T:(k+1)*b.T], b.Y[c*b.T:(c+1)*b.T])
			y[k*b.T+b.T-1] = -1 // the query label is never needed to predict
		}
		if err := r.feed(x, y, yr); err != nil {
			return nil, fmt.Errorf("train: Predict: contexts %d..%d: %w", lo, min(lo+B, b.B)-1, err)
		}
		if err := r.eval.Run(); err != nil {
			return nil, fmt.Errorf("train: Predict: contexts %d..%d: %w", lo, min(lo+B, b.B)-1, err)
		}
		p, err := graph.Values(r.probs)
		if err != nil {
			return nil, fmt.Errorf("train: Predict: %w", err)
		}
		n := min(B, b.B-lo)
		for i, v := range p[:n*C] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				if r.real != nil {
					return nil, fmt.Errorf("train: Predict: context %d: the prediction of target entry %d is %v (the model overflowed; are the inputs too large?)", lo+i/C, i%C, v)
				}
				return nil, fmt.Errorf("train: Predict: context %d: the query probability of class %d is %v (the model overflowed; are the inputs too large?)", lo+i/C, i%C, v)
			}
		}
		out = append(out, p[:n*C]...)
	}
	return out, nil
}

// Evaluate predicts every context of b and scores the query labels, which
// must all be known: top-1 accuracy, NLL, and the oracle when b carries the
// true probabilities (b.P; NaN otherwise). For a real-valued model it
// scores the query targets (b.R) instead: the mean squared error and the
// oracle b.Oracle() (the mean Bayes error; NaN without b.Bayes). Non-finite probabilities are an
// error, as for Predict.
func (r *Runner) Evaluate(b *data.Batch) (Metrics, error) {
	start := time.Now()
	if err := r.checkSet("Evaluate", b); err != nil {
		return Metrics{}, err
	}
	if r.real != nil {
		return r.evaluateReal(b, start)
	}
	labels := make([]int, b.B)
	for i := range labels {
		if labels[i] = b.Y[i*b.T+b.T-1]; labels[i] < 0 {
			return Metrics{}, fmt.Errorf("train: Evaluate: context %d has no query label (-1); use Predict", i)
		}
	}
	probs, err := r.predict(b)
	if err != nil {
		return Metrics{}, err
	}
	top1, err := losses.Top1(probs, labels, r.classes)
	if err != nil {
		return Metrics{}, fmt.Errorf("train: Evaluate: %w", err)
	}
	nll, err := losses.NLL(probs, labels, r.classes)
	if err != nil {
		return Metrics{}, fmt.Errorf("train: Evaluate: %w", err)
	}
	return Metrics{Top1: top1, NLL: nll, Oracle: b.Oracle(), N: b.B, Seconds: time.Since(start).Seconds()}, nil
}
