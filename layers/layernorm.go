package layers

import (
	"fmt"
	"math"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/bounds"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LayerNormConfig configures layer normalisation over the last axis.
type LayerNormConfig struct {
	Dim int // width of the normalised (last) axis; required, > 0
	// Eps is added to the variance; 0 means 1e-5 (PyTorch). It must be
	// finite and not negative.
	Eps float64
	// NoBias drops the additive "bias" parameter (nanoGPT's bias=False).
	NoBias bool
}

// DefaultLayerNormConfig returns the configuration for width dim with every
// default spelled out.
func DefaultLayerNormConfig(dim int) LayerNormConfig {
	return LayerNormConfig{Dim: dim, Eps: 1e-5}
}

// LayerNorm normalises each row of its input over the last axis,
//
//	y = (x - mean(x)) / sqrt(var(x) + eps) * scale + bias,
//
// with the biased variance (divisor Dim), as torch.nn.LayerNorm. Parameters
// are "scale" (Dim, ones) and, unless NoBias, "bias" (Dim, zeros). The
// layer is one fused op ([ops.LayerNorm]) with its gradient ops; its values
// are bit for bit those of the Gorgonia graph of Mean, Square, Sqrt,
// Inverse and broadcast ops that the layer composed before.
type LayerNorm struct {
	cfg         LayerNormConfig
	s           *graph.Scope
	scale, bias *G.Node
}

var _ Layer = (*LayerNorm)(nil)

// NewLayerNorm validates cfg and creates the parameters in s.
func NewLayerNorm(s *graph.Scope, cfg LayerNormConfig) (*LayerNorm, error) {
	if s == nil {
		return nil, fmt.Errorf("layers: layernorm: scope is nil")
	}
	fail := func(format string, a ...any) (*LayerNorm, error) {
		return nil, fmt.Errorf("layers: layernorm %q: %s", s.Path(), fmt.Sprintf(format, a...))
	}
	if cfg.Dim <= 0 {
		return fail("Dim = %d, want > 0", cfg.Dim)
	}
	if !(cfg.Eps >= 0) || math.IsInf(cfg.Eps, 1) {
		return fail("Eps = %g, want a finite value >= 0 (0 means 1e-5)", cfg.Eps)
	}
	if err := bounds.Elements(bounds.Term{What: "2·Dim (scale and bias)", Dims: []int{2, cfg.Dim}, Tensor: "Dim", TensorDims: []int{cfg.Dim}}); err != nil {
		return fail("%v", err)
	}
	if cfg.Eps == 0 {
		cfg.Eps = 1e-5
	}
	l := &LayerNorm{cfg: cfg, s: s}
	var err error
	if l.scale, err = s.Param("scale", tensor.Shape{cfg.Dim}, graph.Ones()); err != nil {
		return fail("%v", err)
	}
	if !cfg.NoBias {
		if l.bias, err = s.Param("bias", tensor.Shape{cfg.Dim}, graph.Zeros()); err != nil {
			return fail("%v", err)
		}
	}
	return l, nil
}

// Config returns the configuration with defaults filled in.
func (l *LayerNorm) Config() LayerNormConfig { return l.cfg }

// Params returns [scale, bias], or [scale] with NoBias.
func (l *LayerNorm) Params() G.Nodes {
	if l.bias == nil {
		return G.Nodes{l.scale}
	}
	return G.Nodes{l.scale, l.bias}
}

// Forward normalises x of shape (..., Dim) — typically (B, T, Dim) or
// (B*T, Dim); rank >= 2 — over its last axis and returns a node of the same
// shape. x is normalised in its own rank, without a reshape, and is never
// overwritten: the op writes only into its own output.
func (l *LayerNorm) Forward(x *G.Node) (y *G.Node, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("layers: layernorm %q: %w", l.s.Path(), err)
		}
	}()
	defer graph.Recover(&err)
	if err := checkLastDim(x, l.cfg.Dim, l.s.Dtype()); err != nil {
		return nil, err
	}
	// The fused op computes the same floating-point operations, in the same
	// order, as the Gorgonia graph this layer composed before (Mean, a
	// broadcast Add of −mean, Square, Mean, Add eps, Sqrt, Inverse,
	// broadcast products, and G.Grad's gradient graph of them), so the
	// values are those of that graph bit for bit.
	if y, err = ops.LayerNorm(x, l.scale, l.bias, l.cfg.Eps); err != nil {
		return nil, err
	}
	return y, nil
}

// checkLastDim checks that x is a node of dtype dt and shape (..., d) of
// rank >= 2.
func checkLastDim(x *G.Node, d int, dt tensor.Dtype) error {
	if x == nil {
		return fmt.Errorf("input is nil")
	}
	sh := x.Shape()
	if len(sh) < 2 || sh[len(sh)-1] != d {
		return fmt.Errorf("input %q has shape %v, want (..., %d) of rank >= 2", x.Name(), sh, d)
	}
	if x.Dtype() != dt {
		return fmt.Errorf("input %q has dtype %v, want %v", x.Name(), x.Dtype(), dt)
	}
	return nil
}
