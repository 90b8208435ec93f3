package layers

import (
	"fmt"
	"math"
	"sort"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Kernel computes the attention weights between queries q (B, Tq, Dk) and
// keys k (B, Tk, Dk): out[b, j, i] = κ(q[b, j], k[b, i]), shape (B, Tq, Tk).
//
// mask is nil (every key visible to every query) or a [Mask]; a masked pair
// gets weight exactly 0, and a normalised kernel (softmax) normalises over the
// visible keys only (a query that sees no key gets all-zero weights).
//
// Kernels are values: any function of this type plugs into [Attention] with
// no change to the attention code. Kernel parameters are nodes created in a
// [graph.Scope] by the kernel's constructor, so they appear in the scope's
// Params.
type Kernel func(q, k *G.Node, mask *Mask) (*G.Node, error)

// KernelConfig sets a kernel's parameter g.
type KernelConfig struct {
	// Gamma is the (initial) value of g; 0 means 1. It must be positive.
	Gamma float64
	// Learnable makes g a trainable parameter "log_gamma" (g = exp(log_gamma),
	// which keeps g positive); otherwise g is a fixed constant.
	Learnable bool
}

// Kernel names accepted by NewKernel.
const (
	KernelLinear    = "linear"    // q·k
	KernelRBF       = "rbf"       // exp(-g ||q-k||^2)
	KernelExp       = "exp"       // exp(g q·k)
	KernelLaplacian = "laplacian" // exp(-g ||q-k||)
	KernelSoftmax   = "softmax"   // exp(g q·k) / Σ_keys exp(g q·k')
)

// KernelNames lists the kernels NewKernel knows, sorted.
func KernelNames() []string {
	out := []string{KernelLinear, KernelRBF, KernelExp, KernelLaplacian, KernelSoftmax}
	sort.Strings(out)
	return out
}

// Normalised reports whether the named kernel normalises its weights over
// the keys (only "softmax").
func Normalised(name string) bool { return name == KernelSoftmax }

// NewKernel returns the named kernel; its parameter g (unused by "linear")
// lives in s as "log_gamma" when cfg.Learnable.
func NewKernel(s *graph.Scope, name string, cfg KernelConfig) (Kernel, error) {
	b, err := NewBuiltinKernel(s, name, cfg)
	if err != nil {
		return nil, err
	}
	return b.Kernel, nil
}

// BuiltinKernel is a kernel of [NewKernel] together with its description,
// which lets an attention head (AttentionConfig.Builtin) compute its
// projections, the kernel and the values in one fused op instead of a chain
// of graph nodes. Kernel is the same function NewKernel returns.
type BuiltinKernel struct {
	// Name is the kernel's name (one of KernelNames).
	Name string
	// Kernel computes the weights as a graph node, as NewKernel's kernel.
	Kernel Kernel

	kind   ops.KernelKind
	g      *G.Node // exp(log_gamma) when learnable, else nil
	gFixed float64
}

// NewBuiltinKernel is NewKernel returning the kernel with its description;
// it creates the same parameters in s.
func NewBuiltinKernel(s *graph.Scope, name string, cfg KernelConfig) (*BuiltinKernel, error) {
	if s == nil {
		return nil, fmt.Errorf("layers: kernel %q: scope is nil", name)
	}
	switch name {
	case KernelLinear:
		return &BuiltinKernel{Name: name, Kernel: LinearKernel(), kind: ops.KindLinear, gFixed: 1}, nil
	case KernelRBF, KernelExp, KernelLaplacian, KernelSoftmax:
	default:
		// Checked before anything is created in s, so that a failed call
		// leaves no stray log_gamma behind.
		return nil, fmt.Errorf("layers: unknown kernel %q (known: %v)", name, KernelNames())
	}
	if cfg.Gamma == 0 {
		cfg.Gamma = 1
	}
	if !(cfg.Gamma > 0) || math.IsInf(cfg.Gamma, 0) {
		return nil, fmt.Errorf("layers: kernel %q: Gamma = %v, want a finite positive value", name, cfg.Gamma)
	}
	// A learnable g is the node exp(log_gamma); a fixed one is held by the op.
	var g *G.Node
	if cfg.Learnable {
		lg, err := s.Param("log_gamma", tensor.Shape{}, graph.Constant(math.Log(cfg.Gamma)))
		if err == nil {
			g, err = G.Exp(lg)
		}
		if err != nil {
			return nil, fmt.Errorf("layers: kernel %q: %w", name, err)
		}
	}
	kind := map[string]ops.KernelKind{KernelRBF: ops.KindRBF, KernelExp: ops.KindExp, KernelLaplacian: ops.KindLaplacian, KernelSoftmax: ops.KindSoftmax}[name]
	return &BuiltinKernel{Name: name, Kernel: opKernel(kind, g, cfg.Gamma), kind: kind, g: g, gFixed: cfg.Gamma}, nil
}

// dotProduct reports whether the kernel is a function of q·k alone (linear,
// exp, softmax), the kernels the fused attention head computes.
func (b *BuiltinKernel) dotProduct() bool { return b.kind.DotProduct() }

// opKernel is a built-in kernel computed by one ops.KernelOp.
func opKernel(kind ops.KernelKind, g *G.Node, gFixed float64) Kernel {
	return func(q, k *G.Node, mask *Mask) (*G.Node, error) {
		if err := checkQK(q, k); err != nil {
			return nil, err
		}
		return ops.KernelWeights(kind, q, k, g, gFixed, mask.keep())
	}
}

// LinearKernel is κ(q, k) = q·k.
func LinearKernel() Kernel { return opKernel(ops.KindLinear, nil, 1) }

// DeltaKernel is the exact erase kernel: κ(q_j, k_i) = 1 if i == j (the same
// position) and 0 otherwise, whatever q and k hold. It is the λ → ∞ limit of
// the paper's erase head for the RBF kernel, made exact.
func DeltaKernel() Kernel {
	return func(q, k *G.Node, mask *Mask) (out *G.Node, err error) {
		defer graph.Recover(&err)
		if err := checkQK(q, k); err != nil {
			return nil, err
		}
		b, tq, tk := q.Shape()[0], q.Shape()[1], k.Shape()[1]
		vals := make([]float64, b*tq*tk)
		for bb := 0; bb < b; bb++ {
			for j := 0; j < tq && j < tk; j++ {
				vals[(bb*tq+j)*tk+j] = 1
			}
		}
		return applyMask(constLike(q, tensor.Shape{b, tq, tk}, vals, "delta"), mask), nil
	}
}

// WithBias returns κ + 1: the bias variant of Appendix B, in which f = Aψ(x) + b
// and the GD step on b adds (α/N) Σ_i [w_{e,y_i} − E_i] to every position.
func WithBias(k Kernel) Kernel {
	return func(q, kk *G.Node, mask *Mask) (out *G.Node, err error) {
		defer graph.Recover(&err)
		w, err := k(q, kk, mask)
		if err != nil {
			return nil, err
		}
		sh := w.Shape()
		ones := make([]float64, sh.TotalSize())
		for i := range ones {
			ones[i] = 1
		}
		one := constLike(w, sh, ones, "bias_one")
		return applyMask(G.Must(G.Add(w, one)), mask), nil
	}
}

func checkQK(q, k *G.Node) error {
	if q == nil || k == nil {
		return fmt.Errorf("layers: kernel: nil query or key")
	}
	qs, ks := q.Shape(), k.Shape()
	if len(qs) != 3 || len(ks) != 3 || qs[0] != ks[0] || qs[2] != ks[2] {
		return fmt.Errorf("layers: kernel: query shape %v and key shape %v, want (B, Tq, D) and (B, Tk, D)", qs, ks)
	}
	return nil
}

// DataWeights returns the weights κ(q, k) (B, Tq, Tk) of the kernel, as
// Kernel does, for q and k that are data: no gradient flows to them (the
// GD models' covariates), so the backward pass computes the gradient of g
// alone instead of also those of q and k, which nothing would read. Do not
// use it for q or k that depend on parameters: their gradients would be
// missing.
func (b *BuiltinKernel) DataWeights(q, k *G.Node, mask *Mask) (*G.Node, error) {
	if err := checkQK(q, k); err != nil {
		return nil, err
	}
	return ops.KernelWeightsOfData(b.kind, q, k, b.g, b.gFixed, mask.keep())
}

// DataApply returns κ(q, k)·v (B, Tq, P) for values v (B, Tk, P), as
// DataWeights followed by ops.BatchedMatMul computes it (the same numbers,
// bit for bit), in one op that keeps a sequence's scores and their gradient
// in cache (ops.KernelApplyOfData): for q and k that are data, without a
// mask. The backward pass computes the gradients of v and g.
func (b *BuiltinKernel) DataApply(q, k, v *G.Node) (*G.Node, error) {
	if err := checkQK(q, k); err != nil {
		return nil, err
	}
	return ops.KernelApplyOfData(b.kind, q, k, b.g, b.gFixed, v)
}
