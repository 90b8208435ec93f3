package cnn

import (
	"fmt"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/losses"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Config describes the network. Zero fields mean the defaults of
// DefaultConfig.
type Config struct {
	// Side is the side of the square single-channel input images
	// (default 28, Quick, Draw!); it must be divisible by 4.
	Side int
	// Channels are the output channels of the two convolutions
	// (default [16, 32]).
	Channels [2]int
	// Hidden is the width of the penultimate layer, the feature dimension
	// (default 512, as the VGG features of the paper).
	Hidden int
	// Classes is the number of training classes K (required).
	Classes int
}

// DefaultConfig returns Side 28, Channels [16, 32], Hidden 512 for the given
// number of training classes.
func DefaultConfig(classes int) Config {
	return Config{Side: 28, Channels: [2]int{16, 32}, Hidden: 512, Classes: classes}
}

// Validate fills the defaults and checks cfg.
func (cfg Config) Validate() (Config, error) {
	def := DefaultConfig(cfg.Classes)
	if cfg.Side == 0 {
		cfg.Side = def.Side
	}
	if cfg.Channels == [2]int{} {
		cfg.Channels = def.Channels
	}
	if cfg.Hidden == 0 {
		cfg.Hidden = def.Hidden
	}
	switch {
	case cfg.Side < 4 || cfg.Side%4 != 0:
		return cfg, fmt.Errorf("cnn: config: Side = %d, want a positive multiple of 4", cfg.Side)
	case cfg.Channels[0] <= 0 || cfg.Channels[1] <= 0:
		return cfg, fmt.Errorf("cnn: config: Channels = %v, want positive", cfg.Channels)
	case cfg.Hidden <= 0:
		return cfg, fmt.Errorf("cnn: config: Hidden = %d, want > 0", cfg.Hidden)
	case cfg.Classes < 2:
		return cfg, fmt.Errorf("cnn: config: Classes = %d, want >= 2", cfg.Classes)
	}
	return cfg, nil
}

// Net is the classifier, built for minibatches of a fixed size.
type Net struct {
	Cfg   Config
	Batch int

	s *graph.Scope
	// X (B, 1, Side, Side) and Target (B, Classes) one-hot are inputs.
	X, Target *G.Node
	// Features (B, Hidden) is the penultimate layer (after its ReLU);
	// Logits (B, Classes) the output; Loss the mean cross-entropy.
	Features, Logits, Loss *G.Node

	conv1, conv2 *Conv2D
	fc1, fc2     *Linear
}

// NewNet builds the network in s for minibatches of batch images; its
// parameters are "conv1/w", "conv1/b", "conv2/…", "fc1/…", "fc2/…".
func NewNet(s *graph.Scope, cfg Config, batch int) (n *Net, err error) {
	if cfg, err = cfg.Validate(); err != nil {
		return nil, err
	}
	if batch <= 0 {
		return nil, fmt.Errorf("cnn: batch = %d, want > 0", batch)
	}
	n = &Net{Cfg: cfg, Batch: batch, s: s}
	c1, c2 := cfg.Channels[0], cfg.Channels[1]
	if n.conv1, err = NewConv2D(s.Sub("conv1"), Conv2DConfig{In: 1, Out: c1}); err != nil {
		return nil, err
	}
	if n.conv2, err = NewConv2D(s.Sub("conv2"), Conv2DConfig{In: c1, Out: c2}); err != nil {
		return nil, err
	}
	flat := c2 * (cfg.Side / 4) * (cfg.Side / 4)
	if n.fc1, err = NewLinear(s.Sub("fc1"), LinearConfig{In: flat, Out: cfg.Hidden}); err != nil {
		return nil, err
	}
	if n.fc2, err = NewLinear(s.Sub("fc2"), LinearConfig{In: cfg.Hidden, Out: cfg.Classes, WInit: graph.GlorotUniform()}); err != nil {
		return nil, err
	}
	if n.X, err = s.Input("x", tensor.Shape{batch, 1, cfg.Side, cfg.Side}); err != nil {
		return nil, err
	}
	if n.Target, err = s.Input("target", tensor.Shape{batch, cfg.Classes}); err != nil {
		return nil, err
	}
	if err := n.build(); err != nil {
		return nil, fmt.Errorf("cnn: net %q: %w", s.Path(), err)
	}
	return n, nil
}

func (n *Net) build() (err error) {
	defer graph.Recover(&err)
	pool := MaxPool{Size: 2}
	h := G.Must(n.conv1.Forward(n.X))
	h = G.Must(pool.Forward(G.Must(G.Rectify(h)))) // (B, c1, S/2, S/2)
	h = G.Must(n.conv2.Forward(h))
	h = G.Must(pool.Forward(G.Must(G.Rectify(h)))) // (B, c2, S/4, S/4)
	sh := h.Shape()
	h = G.Must(ops.Reshape(h, tensor.Shape{sh[0], sh[1] * sh[2] * sh[3]})) // (B, c2·S²/16)
	n.Features = G.Must(G.Rectify(G.Must(n.fc1.Forward(h))))               // (B, Hidden)
	n.Logits = G.Must(n.fc2.Forward(n.Features))                           // (B, Classes)
	n.Loss, err = losses.CrossEntropy(n.Logits, n.Target)
	return err
}

// Scope returns the scope holding the parameters.
func (n *Net) Scope() *graph.Scope { return n.s }

// Params lists the trainable parameters.
func (n *Net) Params() G.Nodes { return n.s.Params() }
