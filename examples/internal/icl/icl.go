// Package icl is the experiment harness shared by gdattn's examples: it
// trains an in-context classifier (a GD model, or any model exposing query
// logits) on a set of contexts, and evaluates top-1 accuracy and NLL of the
// query against held-out contexts. It lives under examples/internal because
// it is glue between the library packages, not a library API.
//
// Training and evaluation:
//
//	r, err := icl.NewRunner(icl.Model{Scope: s, Batch: 64, Feed: m.Feed, Logits: m.Logits, Target: m.Target},
//		cfg, icl.Steps(train.B, 64, cfg.Epochs))
//	err = r.Train(train, cfg)                       // or:
//	curve, err := r.TrainCurve(train, test, cfg, 1) // test metrics after every epoch
//	met, err := r.Evaluate(test)                    // Metrics{Top1, NLL, Oracle, ...}
//
// Sweeps: a [Journal] is an append-only JSON-lines file of finished runs
// keyed by their configuration ([Key]), so that an interrupted sweep reruns
// only what is missing; [NewStat] and [Point] aggregate runs over seeds, and
// [WriteJSON], [WritePointsCSV] and [WriteFile] write the results
// atomically. Metrics and EpochMetrics encode as JSON with lower-case keys
// and NaN as null.
package icl

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/losses"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
)

// Model is an in-context classifier built for minibatches of Batch contexts.
type Model struct {
	Scope *graph.Scope
	Batch int
	// Feed loads a minibatch: x (Batch, T, d), y (Batch, T) with the query
	// label last (the training target; -1 when unknown).
	Feed func(x []float64, y []int) error
	// Logits (Batch, C) of the query; Target (Batch, C) one-hot of its label.
	Logits, Target *G.Node
}

// TrainConfig sets the training loop.
type TrainConfig struct {
	Epochs   int
	LR       float64
	ClipNorm float64
	Seed     uint64    // shuffles the contexts each epoch
	Progress io.Writer // nil: silent
	Label    string
	// AfterEpoch, if non-nil, is called after every epoch (1-based) and may
	// evaluate the model; returning an error stops training.
	AfterEpoch func(epoch int, meanLoss float64) error
	// Executor, if non-nil, runs the training and evaluation machines (e.g.
	// graph/cuda's executor on a GPU); nil means Gorgonia's Go VM.
	Executor graph.ExecutorFactory
}

// Runner holds the compiled training and evaluation machines of a model.
type Runner struct {
	m       Model
	loss    *G.Node
	train   *graph.Machine
	eval    *graph.Machine
	trainer *graph.Trainer
	probs   *G.Node
}

// NewRunner compiles the model's training machine (cross-entropy of the
// query) and a forward-only evaluation machine on the same graph.
func NewRunner(m Model, cfg TrainConfig, steps int) (*Runner, error) {
	loss, err := losses.CrossEntropy(m.Logits, m.Target)
	if err != nil {
		return nil, err
	}
	probs, err := ops.SoftMax(m.Logits)
	if err != nil {
		return nil, err
	}
	tm, err := graph.NewMachine(m.Scope, loss, graph.MachineOptions{Executor: cfg.Executor})
	if err != nil {
		return nil, err
	}
	em, err := graph.NewMachine(m.Scope, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{probs}, Executor: cfg.Executor})
	if err != nil {
		return nil, err
	}
	tr, err := graph.NewTrainer(tm, graph.TrainConfig{
		Optimizer: "adam", LR: cfg.LR, ClipNorm: cfg.ClipNorm,
		Progress: cfg.Progress, Total: steps, Label: cfg.Label, ProgressEvery: max(1, steps/10),
	})
	if err != nil {
		return nil, err
	}
	return &Runner{m: m, loss: loss, train: tm, eval: em, trainer: tr, probs: probs}, nil
}

// Close releases the machines.
func (r *Runner) Close() {
	r.train.Close()
	r.eval.Close()
}

// Steps is the number of optimiser steps for epochs over n contexts.
func Steps(n, batch, epochs int) int { return epochs * ((n + batch - 1) / batch) }

// Train runs cfg.Epochs epochs over the contexts of b, in minibatches of
// the model's size (the last partial minibatch of an epoch is filled with
// contexts from the start of that epoch's order).
func (r *Runner) Train(b *data.Batch, cfg TrainConfig) error {
	if b.B == 0 {
		return fmt.Errorf("icl: empty training set")
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	B := r.m.Batch
	x := make([]float64, B*b.T*b.D)
	y := make([]int, B*b.T)
	for ep := 1; ep <= cfg.Epochs; ep++ {
		perm := rng.Perm(b.B)
		sum, n := 0.0, 0
		for lo := 0; lo < b.B; lo += B {
			for k := 0; k < B; k++ {
				c := perm[(lo+k)%b.B]
				copy(x[k*b.T*b.D:(k+1)*b.T*b.D], b.X[c*b.T*b.D:(c+1)*b.T*b.D])
				copy(y[k*b.T:(k+1)*b.T], b.Y[c*b.T:(c+1)*b.T])
			}
			if err := r.m.Feed(x, y); err != nil {
				return err
			}
			l, err := r.trainer.Step()
			if err != nil {
				return err
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

// Metrics summarises an evaluation.
type Metrics struct {
	Top1, NLL, Oracle float64
	N                 int
	Seconds           float64
}

func (m Metrics) String() string {
	return fmt.Sprintf("top-1 %.4f  NLL %.4f  oracle %.4f  (%d contexts)", m.Top1, m.NLL, m.Oracle, m.N)
}

// Predict returns the query probabilities (b.B, C) for every context of b.
func (r *Runner) Predict(b *data.Batch) ([]float64, error) {
	B := r.m.Batch
	C := r.m.Logits.Shape()[1]
	out := make([]float64, 0, b.B*C)
	x := make([]float64, B*b.T*b.D)
	y := make([]int, B*b.T)
	for lo := 0; lo < b.B; lo += B {
		for k := 0; k < B; k++ {
			c := min(lo+k, b.B-1) // pad the last minibatch with the last context
			copy(x[k*b.T*b.D:(k+1)*b.T*b.D], b.X[c*b.T*b.D:(c+1)*b.T*b.D])
			copy(y[k*b.T:(k+1)*b.T], b.Y[c*b.T:(c+1)*b.T])
			y[k*b.T+b.T-1] = -1 // the query label is never needed to predict
		}
		if err := r.m.Feed(x, y); err != nil {
			return nil, err
		}
		if err := r.eval.Run(); err != nil {
			return nil, err
		}
		p, err := graph.Values(r.probs)
		if err != nil {
			return nil, err
		}
		n := min(B, b.B-lo)
		out = append(out, p[:n*C]...)
	}
	return out, nil
}

// Evaluate predicts every context of b and scores the query labels; the
// oracle is b's mean max true probability (NaN when b.P is nil).
func (r *Runner) Evaluate(b *data.Batch) (Metrics, error) {
	start := time.Now()
	probs, err := r.Predict(b)
	if err != nil {
		return Metrics{}, err
	}
	C := r.m.Logits.Shape()[1]
	labels := make([]int, b.B)
	for i := range labels {
		labels[i] = b.Y[i*b.T+b.T-1]
	}
	top1, err := losses.Top1(probs, labels, C)
	if err != nil {
		return Metrics{}, err
	}
	nll, err := losses.NLL(probs, labels, C)
	if err != nil {
		return Metrics{}, err
	}
	return Metrics{Top1: top1, NLL: nll, Oracle: b.Oracle(), N: b.B, Seconds: time.Since(start).Seconds()}, nil
}

// MeanStd returns the mean and the sample standard deviation of v.
func MeanStd(v []float64) (float64, float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	m := 0.0
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	if len(v) == 1 {
		return m, 0
	}
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return m, math.Sqrt(s / float64(len(v)-1))
}
