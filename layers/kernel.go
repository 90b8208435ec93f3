package layers

import (
	"fmt"
	"math"
	"sort"

	"github.com/gdattn/gdattn/graph"
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

// Mask marks which (query, key) pairs may attend. Keep is a (B, Tq, Tk) 0/1
// node; Bias is 0 where Keep is 1 and -1e30 elsewhere (for normalised kernels).
type Mask struct {
	Keep *G.Node
	Bias *G.Node
}

// NewMask builds a constant mask on s for a batch of b sequences with tq
// queries and tk keys; visible(j, i) reports whether query j may see key i.
func NewMask(s *graph.Scope, name string, b, tq, tk int, visible func(j, i int) bool) (*Mask, error) {
	keep := make([]float64, b*tq*tk)
	bias := make([]float64, b*tq*tk)
	for bb := 0; bb < b; bb++ {
		for j := 0; j < tq; j++ {
			for i := 0; i < tk; i++ {
				o := (bb*tq+j)*tk + i
				if visible(j, i) {
					keep[o] = 1
				} else {
					bias[o] = -1e30
				}
			}
		}
	}
	sh := tensor.Shape{b, tq, tk}
	kn, err := s.Const(name+"_keep", sh, keep)
	if err != nil {
		return nil, err
	}
	bn, err := s.Const(name+"_bias", sh, bias)
	if err != nil {
		return nil, err
	}
	return &Mask{Keep: kn, Bias: bn}, nil
}

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
	switch name {
	case KernelLinear:
		return LinearKernel(), nil
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
	var g *G.Node
	var err error
	if cfg.Learnable {
		g, err = s.Param("log_gamma", tensor.Shape{}, graph.Constant(math.Log(cfg.Gamma)))
		if err == nil {
			g, err = G.Exp(g)
		}
	} else {
		g, err = gammaConst(s, cfg.Gamma)
	}
	if err != nil {
		return nil, fmt.Errorf("layers: kernel %q: %w", name, err)
	}
	switch name {
	case KernelRBF:
		return rbfKernel(g), nil
	case KernelExp:
		return expKernel(g), nil
	case KernelLaplacian:
		return laplacianKernel(g), nil
	case KernelSoftmax:
		return softmaxKernel(g), nil
	}
	return nil, fmt.Errorf("layers: unknown kernel %q (known: %v)", name, KernelNames())
}

func gammaConst(s *graph.Scope, v float64) (*G.Node, error) {
	if s.Dtype() == tensor.Float32 {
		return G.NewConstant(float32(v), G.WithName(s.Name("gamma"))), nil
	}
	return G.NewConstant(v, G.WithName(s.Name("gamma"))), nil
}

// LinearKernel is κ(q, k) = q·k.
func LinearKernel() Kernel {
	return func(q, k *G.Node, mask *Mask) (out *G.Node, err error) {
		defer graph.Recover(&err)
		if err := checkQK(q, k); err != nil {
			return nil, err
		}
		return applyMask(G.Must(G.BatchedMatMul(q, k, false, true)), mask), nil
	}
}

func rbfKernel(g *G.Node) Kernel {
	return func(q, k *G.Node, mask *Mask) (out *G.Node, err error) {
		defer graph.Recover(&err)
		if err := checkQK(q, k); err != nil {
			return nil, err
		}
		d2 := sqDist(q, k)
		return applyMask(G.Must(G.Exp(G.Must(G.Neg(G.Must(G.Mul(g, d2)))))), mask), nil
	}
}

func laplacianKernel(g *G.Node) Kernel {
	return func(q, k *G.Node, mask *Mask) (out *G.Node, err error) {
		defer graph.Recover(&err)
		if err := checkQK(q, k); err != nil {
			return nil, err
		}
		// sqrt(d2 + tiny): the tiny floor keeps the gradient finite at q == k
		// (where the kernel has its kink) and changes the value by < 1e-150.
		tiny := 1e-300
		if q.Dtype() == tensor.Float32 {
			tiny = 1e-30
		}
		d2 := G.Must(G.Add(sqDist(q, k), scalarLike(q, tiny)))
		d := G.Must(G.Sqrt(d2))
		return applyMask(G.Must(G.Exp(G.Must(G.Neg(G.Must(G.Mul(g, d)))))), mask), nil
	}
}

func expKernel(g *G.Node) Kernel {
	return func(q, k *G.Node, mask *Mask) (out *G.Node, err error) {
		defer graph.Recover(&err)
		if err := checkQK(q, k); err != nil {
			return nil, err
		}
		dot := G.Must(G.BatchedMatMul(q, k, false, true))
		return applyMask(G.Must(G.Exp(G.Must(G.Mul(g, dot)))), mask), nil
	}
}

func softmaxKernel(g *G.Node) Kernel {
	return func(q, k *G.Node, mask *Mask) (out *G.Node, err error) {
		defer graph.Recover(&err)
		if err := checkQK(q, k); err != nil {
			return nil, err
		}
		s := G.Must(G.Mul(g, G.Must(G.BatchedMatMul(q, k, false, true)))) // (B, Tq, Tk)
		if mask != nil {
			s = G.Must(G.Add(s, mask.Bias))
		}
		return applyMask(G.Must(graph.SoftMax(s)), mask), nil
	}
}

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

func applyMask(w *G.Node, mask *Mask) *G.Node {
	if mask == nil {
		return w
	}
	return G.Must(G.HadamardProd(w, mask.Keep))
}

// sqDist returns ||q_j - k_i||^2 as (B, Tq, Tk), computed from the differences
// (not from ||q||^2 + ||k||^2 - 2 q·k, which cancels catastrophically at q ≈ k).
//
// The copies of q and k are made by batched outer products with ones, and the
// sum over D by a product with ones, rather than by a rank-4 BroadcastSub:
// in gorgonia v0.9.18 the gradient of that broadcast (a repeat along axis 2
// of (B, Tq, 1, D)) is wrong for every query but the first of each sequence
// (layers/kernel_test.go TestKernelGrad). Products with ones are exact, so
// the values are unchanged.
func sqDist(q, k *G.Node) *G.Node {
	b, tq, d := q.Shape()[0], q.Shape()[1], q.Shape()[2]
	tk := k.Shape()[1]
	q3 := G.Must(graph.Reshape(q, tensor.Shape{b * tq, 1, d}))                // (B*Tq, 1, D)
	qe := G.Must(G.BatchedMatMul(onesLike(q, b*tq, tk, 1), q3, false, false)) // (B*Tq, Tk, D): q_j for every i
	k3 := G.Must(graph.Reshape(k, tensor.Shape{b, 1, tk * d}))                // (B, 1, Tk*D)
	ke := G.Must(G.BatchedMatMul(onesLike(k, b, tq, 1), k3, false, false))    // (B, Tq, Tk*D): k_i for every j
	ke = G.Must(graph.Reshape(ke, tensor.Shape{b * tq, tk, d}))               // (B*Tq, Tk, D)
	sq := G.Must(G.Square(G.Must(G.Sub(qe, ke))))                             // (B*Tq, Tk, D)
	d2 := G.Must(G.BatchedMatMul(sq, onesLike(q, b*tq, d, 1), false, false))  // (B*Tq, Tk, 1)
	return G.Must(graph.Reshape(d2, tensor.Shape{b, tq, tk}))                 // (B, Tq, Tk)
}

// onesLike is a constant tensor of ones of the given shape, with x's dtype.
func onesLike(x *G.Node, shape ...int) *G.Node {
	vals := make([]float64, tensor.Shape(shape).TotalSize())
	for i := range vals {
		vals[i] = 1
	}
	return constLike(x, tensor.Shape(shape), vals, "ones")
}
