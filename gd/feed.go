package gd

// Feed copies one minibatch into the model's inputs; see [Encoder.Feed].
func (m *Model) Feed(x []float64, y []int) error { return m.enc.Feed(x, y) }

// Encoder is the token encoder of the model.
func (m *Model) Encoder() *Encoder { return m.enc }
