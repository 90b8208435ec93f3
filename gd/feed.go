package gd

import (
	"fmt"

	"github.com/gdattn/gdattn/layers"
)

// Feed copies one minibatch into the model's inputs; see
// [layers.Encoder.Feed]. A model with a real-valued likelihood takes
// [Model.FeedReal] instead, and Feed returns an error.
func (m *Model) Feed(x []float64, y []int) error {
	if m.enc == nil {
		return fmt.Errorf("gd: Feed: the model's likelihood is %s (real-valued y); use FeedReal", m.Cfg.LikelihoodName())
	}
	return m.enc.Feed(x, y)
}

// FeedContexts loads the minibatch of contexts rows[k] of a larger set (x
// (n, T, d), y (n, T)) without copying them out first; see
// [layers.Encoder.FeedContexts]. Like Feed, it returns an error for a
// model with a real-valued likelihood.
func (m *Model) FeedContexts(x []float64, y []int, rows []int) error {
	if m.enc == nil {
		return fmt.Errorf("gd: FeedContexts: the model's likelihood is %s (real-valued y); use FeedReal", m.Cfg.LikelihoodName())
	}
	return m.enc.FeedContexts(x, y, rows)
}

// Encoder is the token encoder of the model (nil with a real-valued
// likelihood, whose inputs X, Y and Target the model creates itself).
func (m *Model) Encoder() *layers.Encoder { return m.enc }

// PrepareContexts checks a set of contexts (x (n, T, d), y (n, T)) once and
// copies it in the model's dtype for [Model.FeedPrepared]; see
// [layers.Encoder.PrepareContexts]. Like Feed, it returns an error for a
// model with a real-valued likelihood.
func (m *Model) PrepareContexts(x []float64, y []int) (*layers.Contexts, error) {
	if m == nil {
		return nil, fmt.Errorf("gd: PrepareContexts: the model is nil")
	}
	if m.enc == nil {
		return nil, fmt.Errorf("gd: PrepareContexts: the model's likelihood is %s (real-valued y); use FeedReal", m.Cfg.LikelihoodName())
	}
	return m.enc.PrepareContexts(x, y)
}

// FeedPrepared loads the minibatch of contexts rows[k] of a prepared set
// without checking or converting them again; see
// [layers.Encoder.FeedPrepared]. train.Runner.Fit feeds its shuffled
// minibatches with it.
func (m *Model) FeedPrepared(s *layers.Contexts, rows []int) error {
	if m == nil {
		return fmt.Errorf("gd: FeedPrepared: the model is nil")
	}
	if m.enc == nil {
		return fmt.Errorf("gd: FeedPrepared: the model's likelihood is %s (real-valued y); use FeedReal", m.Cfg.LikelihoodName())
	}
	return m.enc.FeedPrepared(s, rows)
}
