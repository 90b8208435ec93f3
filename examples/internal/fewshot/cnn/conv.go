package cnn

import (
	"fmt"
	"math"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Layer is the house layer contract (as layers.Layer).
type Layer interface {
	Forward(x *G.Node) (*G.Node, error)
	Params() G.Nodes
}

// Conv2DConfig configures a 2-D convolution with stride 1.
type Conv2DConfig struct {
	In, Out int // input and output channels; required, > 0
	Kernel  int // square kernel side; 0 means 3
	// Pad is the zero padding on each side; -1 means none, 0 means
	// Kernel/2 ("same" output size for odd kernels).
	Pad int
	// WInit initialises "w"; nil means He normal, N(0, 2/(In·Kernel²)).
	WInit graph.Initializer
	// BInit initialises "b"; nil means zeros.
	BInit graph.Initializer
}

// Conv2D is a convolution over images (B, In, H, W) (NCHW) giving
// (B, Out, H', W') with H' = H + 2·Pad − Kernel + 1, plus a per-channel bias,
// with parameters "w" (Out, In, Kernel, Kernel) and "b" (Out).
type Conv2D struct {
	cfg  Conv2DConfig
	s    *graph.Scope
	w, b *G.Node
}

var _ Layer = (*Conv2D)(nil)

// NewConv2D validates cfg and creates the parameters in s.
func NewConv2D(s *graph.Scope, cfg Conv2DConfig) (*Conv2D, error) {
	if cfg.Kernel == 0 {
		cfg.Kernel = 3
	}
	switch {
	case cfg.In <= 0 || cfg.Out <= 0:
		return nil, fmt.Errorf("cnn: conv %q: In, Out = %d, %d, want > 0", s.Path(), cfg.In, cfg.Out)
	case cfg.Kernel < 0:
		return nil, fmt.Errorf("cnn: conv %q: Kernel = %d, want > 0", s.Path(), cfg.Kernel)
	case cfg.Pad < -1:
		return nil, fmt.Errorf("cnn: conv %q: Pad = %d, want >= -1", s.Path(), cfg.Pad)
	}
	switch cfg.Pad {
	case 0:
		cfg.Pad = cfg.Kernel / 2
	case -1:
		cfg.Pad = 0
	}
	if cfg.WInit == nil {
		cfg.WInit = graph.Normal(math.Sqrt(2 / float64(cfg.In*cfg.Kernel*cfg.Kernel)))
	}
	w, err := s.Param("w", tensor.Shape{cfg.Out, cfg.In, cfg.Kernel, cfg.Kernel}, cfg.WInit)
	if err != nil {
		return nil, fmt.Errorf("cnn: conv %q: %w", s.Path(), err)
	}
	b, err := s.Param("b", tensor.Shape{cfg.Out}, cfg.BInit)
	if err != nil {
		return nil, fmt.Errorf("cnn: conv %q: %w", s.Path(), err)
	}
	return &Conv2D{cfg: cfg, s: s, w: w, b: b}, nil
}

// Forward convolves x (B, In, H, W) and adds the bias: (B, Out, H', W').
func (c *Conv2D) Forward(x *G.Node) (y *G.Node, err error) {
	if x == nil || x.Shape().Dims() != 4 || x.Shape()[1] != c.cfg.In {
		return nil, fmt.Errorf("cnn: conv %q: input shape %v, want (B, %d, H, W)", c.s.Path(), shapeOf(x), c.cfg.In)
	}
	sh := x.Shape()
	if sh[2]+2*c.cfg.Pad < c.cfg.Kernel || sh[3]+2*c.cfg.Pad < c.cfg.Kernel {
		return nil, fmt.Errorf("cnn: conv %q: image %dx%d smaller than the kernel %d (pad %d)", c.s.Path(), sh[2], sh[3], c.cfg.Kernel, c.cfg.Pad)
	}
	defer graph.Recover(&err)
	k, p := c.cfg.Kernel, c.cfg.Pad
	y = G.Must(G.Conv2d(x, c.w, tensor.Shape{k, k}, []int{p, p}, []int{1, 1}, []int{1, 1})) // (B, Out, H', W')
	b := G.Must(ops.Reshape(c.b, tensor.Shape{1, c.cfg.Out, 1, 1}))
	return G.BroadcastAdd(y, b, nil, []byte{0, 2, 3})
}

// Params returns "w" and "b".
func (c *Conv2D) Params() G.Nodes { return G.Nodes{c.w, c.b} }

// MaxPool is a non-overlapping max pooling of side Size over images
// (B, C, H, W), giving (B, C, H/Size, W/Size) (remainders dropped). It has
// no parameters.
type MaxPool struct{ Size int }

var _ Layer = MaxPool{}

// Forward pools x (B, C, H, W).
func (m MaxPool) Forward(x *G.Node) (*G.Node, error) {
	if m.Size <= 0 {
		return nil, fmt.Errorf("cnn: max-pool: Size = %d, want > 0", m.Size)
	}
	if x == nil || x.Shape().Dims() != 4 || x.Shape()[2] < m.Size || x.Shape()[3] < m.Size {
		return nil, fmt.Errorf("cnn: max-pool %d: input shape %v, want (B, C, H, W) with H, W >= %d", m.Size, shapeOf(x), m.Size)
	}
	y, err := G.MaxPool2D(x, tensor.Shape{m.Size, m.Size}, []int{0, 0}, []int{m.Size, m.Size})
	if err != nil {
		return nil, fmt.Errorf("cnn: max-pool %d: %w", m.Size, err)
	}
	return y, nil
}

// Params returns nil: pooling has no parameters.
func (MaxPool) Params() G.Nodes { return nil }

// LinearConfig configures a dense layer.
type LinearConfig struct {
	In, Out int // required, > 0
	// WInit initialises "w"; nil means He normal, N(0, 2/In).
	WInit graph.Initializer
	// BInit initialises "b"; nil means zeros.
	BInit graph.Initializer
}

// Linear is y = x·w + b on x (B, In), with "w" (In, Out) and "b" (Out).
type Linear struct {
	cfg  LinearConfig
	s    *graph.Scope
	w, b *G.Node
}

var _ Layer = (*Linear)(nil)

// NewLinear validates cfg and creates the parameters in s.
func NewLinear(s *graph.Scope, cfg LinearConfig) (*Linear, error) {
	if cfg.In <= 0 || cfg.Out <= 0 {
		return nil, fmt.Errorf("cnn: linear %q: In, Out = %d, %d, want > 0", s.Path(), cfg.In, cfg.Out)
	}
	if cfg.WInit == nil {
		cfg.WInit = graph.Normal(math.Sqrt(2 / float64(cfg.In)))
	}
	w, err := s.Param("w", tensor.Shape{cfg.In, cfg.Out}, cfg.WInit)
	if err != nil {
		return nil, fmt.Errorf("cnn: linear %q: %w", s.Path(), err)
	}
	b, err := s.Param("b", tensor.Shape{cfg.Out}, cfg.BInit)
	if err != nil {
		return nil, fmt.Errorf("cnn: linear %q: %w", s.Path(), err)
	}
	return &Linear{cfg: cfg, s: s, w: w, b: b}, nil
}

// Forward maps x (B, In) to (B, Out).
func (l *Linear) Forward(x *G.Node) (y *G.Node, err error) {
	if x == nil || x.Shape().Dims() != 2 || x.Shape()[1] != l.cfg.In {
		return nil, fmt.Errorf("cnn: linear %q: input shape %v, want (B, %d)", l.s.Path(), shapeOf(x), l.cfg.In)
	}
	defer graph.Recover(&err)
	y = G.Must(G.Mul(x, l.w)) // (B, Out)
	return G.BroadcastAdd(y, l.b, nil, []byte{0})
}

// Params returns "w" and "b".
func (l *Linear) Params() G.Nodes { return G.Nodes{l.w, l.b} }

func shapeOf(x *G.Node) any {
	if x == nil {
		return "nil"
	}
	return x.Shape()
}
