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
// are "scale" (Dim, ones) and, unless NoBias, "bias" (Dim, zeros). Gorgonia
// has no layer-norm op, so the layer is composed from Mean, Square,
// InverseSqrt and broadcast ops, and differentiated by G.Grad.
type LayerNorm struct {
	cfg         LayerNormConfig
	s           *graph.Scope
	scale, bias *G.Node
	eps         *G.Node // scalar constant s.Path()/eps
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
	if l.eps, err = s.Const("eps", tensor.Shape{}, []float64{cfg.Eps}); err != nil {
		return fail("%v", err)
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
// overwritten in place (see the note in the body).
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
	shape := x.Shape().Clone()
	last := len(shape) - 1
	statShape := shape.Clone()
	statShape[last] = 1                          // (..., 1)
	rowPat := []byte{byte(last)}                 // broadcast a per-row statistic along the last axis
	paramShape := make(tensor.Shape, len(shape)) // (1, ..., 1, D)
	paramPat := make([]byte, last)               // broadcast scale and bias over every row
	for i := range paramShape {
		paramShape[i] = 1
	}
	paramShape[last] = l.cfg.Dim
	for i := range paramPat {
		paramPat[i] = byte(i)
	}

	// Gorgonia's elementwise ops overwrite their first operand when its
	// register is free, and G.Reshape shares memory with its input, so an
	// in-place op on x could clobber a value the caller still reads through an
	// alias. Hence x is not reshaped and enters only reductions and the second
	// operand of the centring add: the layer never writes into x's memory.
	negMean := G.Must(ops.Reshape(G.Must(G.Neg(G.Must(G.Mean(x, last)))), statShape))      // (..., 1)
	xc := G.Must(G.BroadcastAdd(negMean, x, rowPat, nil))                                  // (..., D) x - mean
	variance := G.Must(ops.Reshape(G.Must(G.Mean(G.Must(G.Square(xc)), last)), statShape)) // (..., 1) biased
	// 1/sqrt(var+eps) as Inverse(Sqrt(.)): G.InverseSqrt's gradient is wrong in
	// Gorgonia v0.9.18 (it computes -g/(2y³) instead of -g·y³/2).
	rstd := G.Must(G.Inverse(G.Must(G.Sqrt(G.Must(G.Add(variance, l.eps)))))) // (..., 1)
	y = G.Must(G.BroadcastHadamardProd(xc, rstd, nil, rowPat))                // (..., D)
	scale := G.Must(ops.Reshape(l.scale, paramShape))                         // (1, ..., 1, D)
	y = G.Must(G.BroadcastHadamardProd(y, scale, nil, paramPat))              // (..., D)
	if l.bias != nil {
		bias := G.Must(ops.Reshape(l.bias, paramShape))    // (1, ..., 1, D)
		y = G.Must(G.BroadcastAdd(y, bias, nil, paramPat)) // (..., D)
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
