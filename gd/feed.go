package gd

import "github.com/gdattn/gdattn/layers"

// Feed copies one minibatch into the model's inputs; see
// [layers.Encoder.Feed].
func (m *Model) Feed(x []float64, y []int) error { return m.enc.Feed(x, y) }

// Encoder is the token encoder of the model.
func (m *Model) Encoder() *layers.Encoder { return m.enc }
