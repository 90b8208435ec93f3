package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/bounds"
	"github.com/gdattn/gdattn/internal/strictjson"
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

// Mask marks which (query, key) pairs may attend. Keep is a (B, Tq, Tk) 0/1
// node; Bias is 0 where Keep is 1 and -1e30 elsewhere (for normalised kernels).
type Mask struct {
	Keep *G.Node
	Bias *G.Node
}

// NewMask builds a constant mask on s for a batch of b sequences with tq
// queries and tk keys; visible(j, i) reports whether query j may see key i.
// The sizes must be positive and b·tq·tk at most 2^31 (graph.MaxElements).
func NewMask(s *graph.Scope, name string, b, tq, tk int, visible func(j, i int) bool) (*Mask, error) {
	switch {
	case s == nil:
		return nil, fmt.Errorf("layers: mask %q: scope is nil", name)
	case visible == nil:
		return nil, fmt.Errorf("layers: mask %q: visible is nil", name)
	case b <= 0 || tq <= 0 || tk <= 0:
		return nil, fmt.Errorf("layers: mask %q: b = %d, tq = %d, tk = %d, want all > 0", name, b, tq, tk)
	}
	if err := bounds.Elements(bounds.Term{What: "2·b·tq·tk (keep and bias)", Dims: []int{2, b, tq, tk}, Tensor: "b·tq·tk", TensorDims: []int{b, tq, tk}}); err != nil {
		return nil, fmt.Errorf("layers: mask %q: %w", name, err)
	}
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

// keep is the mask's keep node, nil for no mask.
func (m *Mask) keep() *G.Node {
	if m == nil {
		return nil
	}
	return m.Keep
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

func applyMask(w *G.Node, mask *Mask) *G.Node {
	if mask == nil {
		return w
	}
	return G.Must(G.HadamardProd(w, mask.Keep))
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

// KernelSpec describes a kernel as a value that a model instantiates in any
// scope it likes: the Trained TF (package tf) builds one kernel per head,
// each with its own parameters, and a GD model one kernel shared by its
// blocks. A spec holds no graph nodes, so one value configures any number of
// models.
//
// The built-in specs ([Linear], [RBF], [Exp], [Laplacian], [Softmax],
// [Builtin]) keep the fused fast paths of [BuiltinKernel]; [Sum] and
// [Scaled] combine specs (κ = rbf + β·linear is
// Sum(RBF(g), Scaled(β, Linear()))); [Custom] wraps Go code that builds a
// kernel with its own parameters, and any type implementing KernelSpec is a
// kernel too. A spec may also implement Validate() error, which
// [CheckKernel] (and so every model's config validation) calls.
//
// Kernels are saved in model configs by [MarshalKernel] and read back by
// [UnmarshalKernel]; a user kernel must be registered with
// [RegisterKernel] to be saved. See "Kernel specs" in the package
// documentation for the JSON form.
type KernelSpec interface {
	// Name identifies the kernel in configs: a built-in name (see
	// KernelNames), "sum", "scaled", or the name of a registered user kernel.
	Name() string
	// Normalised reports whether the weights of each query sum to one over
	// its visible keys (only the softmax kernel among the built-ins; never a
	// sum or a scaled kernel). The GD models use it for their default step α
	// and the language model for its 1/j normalisation.
	Normalised() bool
	// New creates the kernel's parameters in s (names relative to s, such
	// as "log_gamma") and returns the kernel. Every call creates a fresh
	// set of parameters.
	New(s *graph.Scope) (Kernel, error)
}

// Bounds of a kernel spec (see CheckKernel): combinators nested at most
// MaxKernelDepth deep, at most MaxKernelNodes kernels in all.
const (
	MaxKernelDepth = 32
	MaxKernelNodes = 256
)

// Names of the combinators, reserved like the built-in names.
const (
	KernelSum    = "sum"
	KernelScaled = "scaled"
)

// BuiltinSpec is the spec of a built-in kernel with its parameter g: the
// initial value Gamma (finite and positive) and whether g is learned as "log_gamma"
// (g = exp(log_gamma)) or fixed. Build one with [Linear], [RBF], [Exp],
// [Laplacian], [Softmax] or [Builtin]; the zero value is invalid.
type BuiltinSpec struct {
	name      string
	gamma     float64
	learnable bool
}

var _ KernelSpec = BuiltinSpec{}

// Linear is the spec of κ(q, k) = q·k, which has no parameter.
func Linear() BuiltinSpec { return BuiltinSpec{name: KernelLinear} }

// RBF is the spec of κ(q, k) = exp(-g‖q−k‖²) with g learned from gamma
// (finite and positive, as in the JSON form; 0 is refused by Validate);
// see [BuiltinSpec.Fixed].
func RBF(gamma float64) BuiltinSpec { return Builtin(KernelRBF, gamma) }

// Exp is the spec of κ(q, k) = exp(g q·k) with g learned from gamma.
func Exp(gamma float64) BuiltinSpec { return Builtin(KernelExp, gamma) }

// Laplacian is the spec of κ(q, k) = exp(-g‖q−k‖) with g learned from gamma.
func Laplacian(gamma float64) BuiltinSpec { return Builtin(KernelLaplacian, gamma) }

// Softmax is the spec of the normalised κ(q, k) = exp(g q·k)/Σ_keys with g
// learned from gamma.
func Softmax(gamma float64) BuiltinSpec { return Builtin(KernelSoftmax, gamma) }

// Builtin is the spec of the named built-in kernel (see KernelNames) with g
// learned from gamma (finite and positive; ignored by "linear"). An unknown name or an
// invalid gamma is reported by Validate and New, so that Builtin composes in
// struct literals.
func Builtin(name string, gamma float64) BuiltinSpec {
	return BuiltinSpec{name: name, gamma: gamma, learnable: name != KernelLinear}
}

// Fixed returns b with g fixed at its initial value instead of learned.
func (b BuiltinSpec) Fixed() BuiltinSpec { b.learnable = false; return b }

// Name is the kernel's name.
func (b BuiltinSpec) Name() string { return b.name }

// Normalised reports whether b is the softmax kernel.
func (b BuiltinSpec) Normalised() bool { return Normalised(b.name) }

// Gamma is the initial value of g (1 for "linear", which has none).
func (b BuiltinSpec) Gamma() float64 {
	if b.gamma == 0 || b.name == KernelLinear {
		return 1
	}
	return b.gamma
}

// Learnable reports whether g is a trainable parameter (never for "linear").
func (b BuiltinSpec) Learnable() bool { return b.learnable && b.name != KernelLinear }

// Config is b as the KernelConfig of [NewBuiltinKernel].
func (b BuiltinSpec) Config() KernelConfig {
	return KernelConfig{Gamma: b.Gamma(), Learnable: b.Learnable()}
}

// Validate reports an unknown name or a g that is not finite and positive.
func (b BuiltinSpec) Validate() error {
	if !slices.Contains(KernelNames(), b.name) {
		return fmt.Errorf("layers: unknown kernel %q (known: %v)", b.name, KernelNames())
	}
	if g := b.gamma; b.name != KernelLinear && (!(g > 0) || math.IsInf(g, 0)) {
		return fmt.Errorf("layers: kernel %q: Gamma = %v, want a finite positive value", b.name, g)
	}
	return nil
}

// New creates "log_gamma" in s if g is learnable and returns the kernel.
func (b BuiltinSpec) New(s *graph.Scope) (Kernel, error) {
	bk, err := b.NewBuiltin(s)
	if err != nil {
		return nil, err
	}
	return bk.Kernel, nil
}

// NewBuiltin is New returning the kernel with its description, for the
// fused fast paths (AttentionConfig.Builtin, BuiltinKernel.DataWeights).
func (b BuiltinSpec) NewBuiltin(s *graph.Scope) (*BuiltinKernel, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("layers: kernel %q: scope is nil", b.name)
	}
	return NewBuiltinKernel(s, b.name, b.Config())
}

// SumSpec is the spec of a sum of kernels; see [Sum].
type SumSpec struct {
	terms []KernelSpec
}

var _ KernelSpec = SumSpec{}

// Sum is the spec of κ = Σ_i κ_i. Term i creates its parameters in the
// sub-scope "term<i>" of the scope the sum is built in. A masked pair gets
// weight 0 from every term, hence from the sum.
func Sum(terms ...KernelSpec) SumSpec { return SumSpec{terms: slices.Clone(terms)} }

// Name is "sum".
func (k SumSpec) Name() string { return KernelSum }

// Normalised is false: a sum of kernels is not normalised.
func (k SumSpec) Normalised() bool { return false }

// Terms returns the summed specs.
func (k SumSpec) Terms() []KernelSpec { return slices.Clone(k.terms) }

// Validate checks that there are at least two terms and that each is valid.
func (k SumSpec) Validate() error {
	if len(k.terms) < 2 {
		return fmt.Errorf("layers: kernel sum: %d term(s), want at least 2", len(k.terms))
	}
	for i, t := range k.terms {
		if err := CheckKernel(t); err != nil {
			return fmt.Errorf("layers: kernel sum: term %d: %w", i, err)
		}
	}
	return nil
}

// New builds every term in its sub-scope and returns their sum.
func (k SumSpec) New(s *graph.Scope) (Kernel, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("layers: kernel sum: scope is nil")
	}
	kerns := make([]Kernel, len(k.terms))
	for i, t := range k.terms {
		kern, err := t.New(s.Sub(fmt.Sprintf("term%d", i)))
		if err != nil {
			return nil, fmt.Errorf("layers: kernel sum %q: term %d: %w", s.Path(), i, err)
		}
		kerns[i] = kern
	}
	return func(q, kk *G.Node, mask *Mask) (out *G.Node, err error) {
		defer graph.Recover(&err)
		for i, kern := range kerns {
			w, err := kern(q, kk, mask) // (B, Tq, Tk)
			if err != nil {
				return nil, fmt.Errorf("layers: kernel sum: term %d: %w", i, err)
			}
			if out == nil {
				out = w
			} else {
				out = G.Must(G.Add(out, w))
			}
		}
		return out, nil
	}, nil
}

// ScaledSpec is the spec of a kernel times a scalar β; see [Scaled].
type ScaledSpec struct {
	beta      float64
	learnable bool
	inner     KernelSpec
}

var _ KernelSpec = ScaledSpec{}

// Scaled is the spec of κ = β·inner with β learned as the parameter "beta"
// (any sign; it starts at beta) in the scope the kernel is built in; the
// inner kernel creates its parameters in the sub-scope "inner". See
// [ScaledSpec.Fixed].
func Scaled(beta float64, inner KernelSpec) ScaledSpec {
	return ScaledSpec{beta: beta, learnable: true, inner: inner}
}

// Fixed returns k with β a fixed constant instead of a parameter.
func (k ScaledSpec) Fixed() ScaledSpec { k.learnable = false; return k }

// Name is "scaled".
func (k ScaledSpec) Name() string { return KernelScaled }

// Normalised is false: β times normalised weights do not sum to one.
func (k ScaledSpec) Normalised() bool { return false }

// Beta is the initial value of β.
func (k ScaledSpec) Beta() float64 { return k.beta }

// Learnable reports whether β is a trainable parameter.
func (k ScaledSpec) Learnable() bool { return k.learnable }

// Inner is the scaled kernel's spec.
func (k ScaledSpec) Inner() KernelSpec { return k.inner }

// Validate checks that β is finite and the inner kernel valid.
func (k ScaledSpec) Validate() error {
	if math.IsNaN(k.beta) || math.IsInf(k.beta, 0) {
		return fmt.Errorf("layers: kernel scaled: Beta = %v, want a finite value", k.beta)
	}
	if err := CheckKernel(k.inner); err != nil {
		return fmt.Errorf("layers: kernel scaled: %w", err)
	}
	return nil
}

// New creates "beta" (if learnable) in s and the inner kernel in s/inner.
func (k ScaledSpec) New(s *graph.Scope) (Kernel, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("layers: kernel scaled: scope is nil")
	}
	var beta *G.Node
	var err error
	if k.learnable {
		beta, err = s.Param("beta", tensor.Shape{}, graph.Constant(k.beta))
	} else {
		beta, err = s.Const("beta", tensor.Shape{}, []float64{k.beta})
	}
	if err != nil {
		return nil, fmt.Errorf("layers: kernel scaled %q: %w", s.Path(), err)
	}
	inner, err := k.inner.New(s.Sub("inner"))
	if err != nil {
		return nil, fmt.Errorf("layers: kernel scaled %q: %w", s.Path(), err)
	}
	return func(q, kk *G.Node, mask *Mask) (out *G.Node, err error) {
		defer graph.Recover(&err)
		w, err := inner(q, kk, mask) // (B, Tq, Tk)
		if err != nil {
			return nil, err
		}
		return G.Must(G.Mul(beta, w)), nil // (B, Tq, Tk)
	}, nil
}

// userKernel wraps a user kernel so that an error it returns, or a panic
// of G.Must with an error, names the kernel and the dtype of its inputs
// (the model's): a constant of another dtype is the usual mistake.
func userKernel(name string, k Kernel) Kernel {
	return func(q, key *G.Node, mask *Mask) (w *G.Node, err error) {
		defer func() {
			if err != nil {
				err = fmt.Errorf("layers: kernel %q on %v inputs (make constants in the inputs' dtype, e.g. layers.ScalarLike(q, 1)): %w", name, q.Dtype(), err)
			}
		}()
		defer graph.Recover(&err)
		return k(q, key, mask)
	}
}

// ScalarLike returns the constant v in the dtype of x (float32 or
// float64), for kernels and layers written outside this package: a
// G.NewConstant(1.0) is float64 and fails to combine with a float32 model's
// nodes.
func ScalarLike(x *G.Node, v float64) *G.Node {
	if x != nil && x.Dtype() == tensor.Float32 {
		return G.NewConstant(float32(v))
	}
	return G.NewConstant(v)
}

// customSpec is a user kernel given as Go code; see Custom.
type customSpec struct {
	name       string
	normalised bool
	build      func(s *graph.Scope) (Kernel, error)
}

// Custom wraps user code as a kernel spec: build creates the kernel's
// parameters in the scope it is given (they are then learned with the
// model's) and returns the kernel; normalised says whether its weights sum
// to one over the keys. To save a model using it, register a factory under
// the same name that returns the same spec:
//
//	poly := layers.Custom("poly", false, buildPoly)
//	err := layers.RegisterKernel("poly", func(json.RawMessage) (layers.KernelSpec, error) { return poly, nil })
//
// A kernel with settings of its own is better written as a type
// implementing [KernelSpec] whose exported fields hold them: they are then
// saved as the kernel's "params".
func Custom(name string, normalised bool, build func(s *graph.Scope) (Kernel, error)) KernelSpec {
	return customSpec{name: name, normalised: normalised, build: build}
}

func (c customSpec) Name() string     { return c.name }
func (c customSpec) Normalised() bool { return c.normalised }

func (c customSpec) Validate() error {
	if c.name == "" {
		return fmt.Errorf("layers: custom kernel: empty name")
	}
	if c.build == nil {
		return fmt.Errorf("layers: custom kernel %q: build function is nil", c.name)
	}
	return nil
}

func (c customSpec) New(s *graph.Scope) (Kernel, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("layers: custom kernel %q: scope is nil", c.name)
	}
	k, err := c.build(s)
	if err != nil {
		return nil, fmt.Errorf("layers: custom kernel %q: %w", c.name, err)
	}
	if k == nil {
		return nil, fmt.Errorf("layers: custom kernel %q: build returned a nil kernel", c.name)
	}
	return k, nil
}

// MarshalJSON writes nothing: a custom kernel has no saved settings.
func (c customSpec) MarshalJSON() ([]byte, error) { return []byte("{}"), nil }

// CheckKernel reports whether k can be built: k is not nil, has a name, and
// its Validate method (if it has one) returns nil.
//
// It also bounds the spec's size (sums and scaled kernels nested at most
// MaxKernelDepth deep, at most MaxKernelNodes kernels in all): each kernel
// adds graph nodes to every head of every block, and a spec beyond these
// bounds is refused at once, however large it is, with an error naming the
// bound.
func CheckKernel(k KernelSpec) error {
	if k == nil || isNilSpec(k) {
		return fmt.Errorf("layers: kernel spec is nil")
	}
	if err := checkKernelSize(k); err != nil {
		return err
	}
	if k.Name() == "" {
		return fmt.Errorf("layers: kernel spec %T has an empty name", k)
	}
	if v, ok := k.(interface{ Validate() error }); ok {
		return v.Validate()
	}
	return nil
}

// errKernelTooDeep is the error of a kernel nested beyond MaxKernelDepth;
// the combinators pass it up unwrapped, so it reads the same at any depth.
var errKernelTooDeep = fmt.Errorf("layers: kernel nested more than %d combinators deep (layers.MaxKernelDepth)", MaxKernelDepth)

// checkKernelSize walks k's combinators, stopping as soon as it passes
// MaxKernelDepth or MaxKernelNodes, so its cost is bounded whatever k is.
func checkKernelSize(k KernelSpec) error {
	type item struct {
		k     KernelSpec
		depth int
	}
	stack := []item{{k, 0}}
	nodes := 0
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if nodes++; nodes > MaxKernelNodes {
			return fmt.Errorf("layers: kernel of more than %d kernels in all (layers.MaxKernelNodes)", MaxKernelNodes)
		}
		var children []KernelSpec
		switch v := it.k.(type) {
		case SumSpec:
			children = v.terms
		case *SumSpec:
			if v != nil {
				children = v.terms
			}
		case ScaledSpec:
			children = []KernelSpec{v.inner}
		case *ScaledSpec:
			if v != nil {
				children = []KernelSpec{v.inner}
			}
		}
		if len(children) > 0 && it.depth >= MaxKernelDepth {
			return errKernelTooDeep
		}
		for _, c := range children {
			if c != nil {
				stack = append(stack, item{c, it.depth + 1})
			}
		}
	}
	return nil
}

// isNilSpec reports a typed nil pointer inside a non-nil interface.
func isNilSpec(k KernelSpec) bool {
	v := reflect.ValueOf(k)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// InstantiateKernel checks spec and builds it in s. For a built-in spec it
// also returns the kernel's description (for the fused fast paths:
// AttentionConfig.Builtin and BuiltinKernel.DataWeights); for any other
// spec that is nil.
func InstantiateKernel(s *graph.Scope, spec KernelSpec) (Kernel, *BuiltinKernel, error) {
	if err := CheckKernel(spec); err != nil {
		return nil, nil, err
	}
	if s == nil {
		return nil, nil, fmt.Errorf("layers: kernel %q: scope is nil", spec.Name())
	}
	var b BuiltinSpec
	switch v := spec.(type) {
	case BuiltinSpec:
		b = v
	case *BuiltinSpec:
		b = *v
	default:
		k, err := spec.New(s)
		if err != nil {
			return nil, nil, err
		}
		if k == nil {
			return nil, nil, fmt.Errorf("layers: kernel %q: New returned a nil kernel", spec.Name())
		}
		return userKernel(spec.Name(), k), nil, nil
	}
	bk, err := b.NewBuiltin(s)
	if err != nil {
		return nil, nil, err
	}
	return bk.Kernel, bk, nil
}

// KernelFactory rebuilds a registered user kernel from the "params" saved
// by [MarshalKernel] (the kernel value marshalled by encoding/json; "null"
// when ParseKernel is given the bare name).
type KernelFactory func(params json.RawMessage) (KernelSpec, error)

// kernelRegistry holds the user kernels that configs may name. It is the
// one piece of package state in layers: like image.RegisterFormat, it lets
// a program teach every config reader its own kernels once.
var kernelRegistry = struct {
	sync.RWMutex
	m map[string]KernelFactory
}{m: map[string]KernelFactory{}}

// RegisterKernel lets configs name a user kernel: MarshalKernel saves a
// spec whose Name is name, and UnmarshalKernel and ParseKernel rebuild it
// with f. The name must be non-empty, not a built-in or combinator name and
// not already registered. It is safe for concurrent use.
func RegisterKernel(name string, f KernelFactory) error {
	switch {
	case name == "":
		return fmt.Errorf("layers: RegisterKernel: empty name")
	case f == nil:
		return fmt.Errorf("layers: RegisterKernel %q: factory is nil", name)
	case slices.Contains(KernelNames(), name) || name == KernelSum || name == KernelScaled:
		return fmt.Errorf("layers: RegisterKernel %q: the name is reserved by a built-in kernel", name)
	}
	kernelRegistry.Lock()
	defer kernelRegistry.Unlock()
	if _, ok := kernelRegistry.m[name]; ok {
		return fmt.Errorf("layers: RegisterKernel %q: already registered", name)
	}
	kernelRegistry.m[name] = f
	return nil
}

// RegisteredKernels lists the names given to RegisterKernel, sorted.
func RegisteredKernels() []string {
	kernelRegistry.RLock()
	defer kernelRegistry.RUnlock()
	out := make([]string, 0, len(kernelRegistry.m))
	for n := range kernelRegistry.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func kernelFactory(name string) (KernelFactory, bool) {
	kernelRegistry.RLock()
	defer kernelRegistry.RUnlock()
	f, ok := kernelRegistry.m[name]
	return f, ok
}

// builtinJSON, sumJSON, scaledJSON and userJSON are the JSON forms of the
// specs; see "Kernel specs" in the package documentation.
type builtinJSON struct {
	Name      string   `json:"name"`
	Gamma     *float64 `json:"gamma,omitempty"`
	Learnable *bool    `json:"learnable,omitempty"`
}

type sumJSON struct {
	Name  string            `json:"name"`
	Terms []json.RawMessage `json:"terms"`
}

type scaledJSON struct {
	Name      string          `json:"name"`
	Beta      *float64        `json:"beta"`
	Learnable *bool           `json:"learnable,omitempty"`
	Kernel    json.RawMessage `json:"kernel"`
}

type userJSON struct {
	Name   string          `json:"name"`
	Params json.RawMessage `json:"params"`
}

// MarshalKernel returns the JSON form of k (see "Kernel specs" in the
// package documentation). A user kernel must be registered under its Name,
// and the registered factory must rebuild it: MarshalKernel saves its
// params, rebuilds the kernel from them and fails unless the rebuilt spec
// has the same name and marshals to the same params, so that a save never
// writes a kernel that cannot be loaded.
func MarshalKernel(k KernelSpec) ([]byte, error) {
	if err := CheckKernel(k); err != nil {
		return nil, err
	}
	switch v := k.(type) {
	case *BuiltinSpec:
		return MarshalKernel(*v)
	case BuiltinSpec:
		j := builtinJSON{Name: v.name}
		if v.name != KernelLinear {
			g, l := v.Gamma(), v.Learnable()
			j.Gamma, j.Learnable = &g, &l
		}
		return json.Marshal(j)
	case SumSpec:
		j := sumJSON{Name: KernelSum}
		for i, t := range v.terms {
			b, err := MarshalKernel(t)
			if err != nil {
				return nil, fmt.Errorf("layers: kernel sum: term %d: %w", i, err)
			}
			j.Terms = append(j.Terms, b)
		}
		return json.Marshal(j)
	case ScaledSpec:
		inner, err := MarshalKernel(v.inner)
		if err != nil {
			return nil, fmt.Errorf("layers: kernel scaled: %w", err)
		}
		beta, l := v.beta, v.learnable
		return json.Marshal(scaledJSON{Name: KernelScaled, Beta: &beta, Learnable: &l, Kernel: inner})
	}
	name := k.Name()
	f, ok := kernelFactory(name)
	if !ok {
		return nil, fmt.Errorf("layers: kernel %q (%T) is not registered: call layers.RegisterKernel(%q, factory) to save it", name, k, name)
	}
	params, err := json.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("layers: kernel %q: params: %w", name, err)
	}
	back, err := f(params)
	if err != nil {
		return nil, fmt.Errorf("layers: kernel %q: its registered factory cannot rebuild it from its params %s: %w", name, params, err)
	}
	if back == nil || isNilSpec(back) || back.Name() != name {
		return nil, fmt.Errorf("layers: kernel %q: its registered factory does not rebuild a kernel named %q", name, name)
	}
	again, err := json.Marshal(back)
	if err != nil || !bytes.Equal(again, params) {
		return nil, fmt.Errorf("layers: kernel %q: does not survive a save: params %s are rebuilt as %s", name, params, again)
	}
	return json.Marshal(userJSON{Name: name, Params: params})
}

// UnmarshalKernel rebuilds a kernel spec from its JSON form: an object as
// written by MarshalKernel, or a bare name as accepted by ParseKernel. It
// refuses unknown keys, unknown names and invalid values, naming them.
//
// A kernel nested beyond MaxKernelDepth is refused before its inner
// kernels are decoded, so decoding costs at most MaxKernelDepth passes over
// data: linear in its size.
func UnmarshalKernel(data []byte) (KernelSpec, error) {
	// Each combinator nests at most two JSON levels (a sum's object and
	// its terms array): deeper JSON is refused in one pass, before any
	// decoding (encoding/json gives up at 10,000 levels with a message
	// that does not name the bound).
	if jsonDepth(data) > 2*MaxKernelDepth+2 {
		return nil, errKernelTooDeep
	}
	return unmarshalKernel(data, 0)
}

// jsonDepth returns the deepest nesting of objects and arrays in data
// (brackets inside strings do not count).
func jsonDepth(data []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// unmarshalKernel is UnmarshalKernel for a kernel nested depth combinators
// deep.
func unmarshalKernel(data []byte, depth int) (KernelSpec, error) {
	if depth > MaxKernelDepth {
		return nil, errKernelTooDeep
	}
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var name string
		if err := json.Unmarshal(data, &name); err != nil {
			return nil, fmt.Errorf("layers: kernel: %w", err)
		}
		return ParseKernel(name)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil || keys == nil {
		return nil, fmt.Errorf("layers: kernel: want an object {\"name\": ...} or a name, got %s", clip(data))
	}
	var name string
	if raw, ok := keys["name"]; !ok {
		return nil, fmt.Errorf("layers: kernel: missing key \"name\" in %s", clip(data))
	} else if err := json.Unmarshal(raw, &name); err != nil {
		return nil, fmt.Errorf("layers: kernel: key \"name\": %w", err)
	}
	var spec KernelSpec
	switch {
	case slices.Contains(KernelNames(), name):
		var j builtinJSON
		if err := decodeStrict(data, &j); err != nil {
			return nil, fmt.Errorf("layers: kernel %q: %w", name, err)
		}
		if name == KernelLinear && (j.Gamma != nil || (j.Learnable != nil && *j.Learnable)) {
			return nil, fmt.Errorf("layers: kernel \"linear\": keys \"gamma\" and \"learnable\" do not apply (it has no parameter)")
		}
		b := Builtin(name, 1)
		if j.Gamma != nil {
			if *j.Gamma == 0 {
				return nil, fmt.Errorf("layers: kernel %q: key \"gamma\": 0, want a finite positive value", name)
			}
			b.gamma = *j.Gamma
		}
		if j.Learnable != nil && !*j.Learnable {
			b = b.Fixed()
		}
		spec = b
	case name == KernelSum:
		var j sumJSON
		if err := decodeStrict(data, &j); err != nil {
			return nil, fmt.Errorf("layers: kernel sum: %w", err)
		}
		var terms []KernelSpec
		if len(j.Terms) > MaxKernelNodes {
			return nil, fmt.Errorf("layers: kernel sum: key \"terms\": %d terms, more than layers.MaxKernelNodes = %d kernels in all", len(j.Terms), MaxKernelNodes)
		}
		for i, raw := range j.Terms {
			t, err := unmarshalKernel(raw, depth+1)
			if errors.Is(err, errKernelTooDeep) {
				return nil, err
			}
			if err != nil {
				return nil, fmt.Errorf("layers: kernel sum: key \"terms\"[%d]: %w", i, err)
			}
			terms = append(terms, t)
		}
		spec = Sum(terms...)
	case name == KernelScaled:
		var j scaledJSON
		if err := decodeStrict(data, &j); err != nil {
			return nil, fmt.Errorf("layers: kernel scaled: %w", err)
		}
		if j.Beta == nil {
			return nil, fmt.Errorf("layers: kernel scaled: missing key \"beta\"")
		}
		if j.Kernel == nil {
			return nil, fmt.Errorf("layers: kernel scaled: missing key \"kernel\"")
		}
		inner, err := unmarshalKernel(j.Kernel, depth+1)
		if errors.Is(err, errKernelTooDeep) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("layers: kernel scaled: key \"kernel\": %w", err)
		}
		sc := Scaled(*j.Beta, inner)
		if j.Learnable != nil && !*j.Learnable {
			sc = sc.Fixed()
		}
		spec = sc
	default:
		f, ok := kernelFactory(name)
		if !ok {
			return nil, unknownKernel(name)
		}
		var j userJSON
		if err := decodeStrict(data, &j); err != nil {
			return nil, fmt.Errorf("layers: kernel %q: %w", name, err)
		}
		if j.Params == nil {
			j.Params = json.RawMessage("null")
		}
		var err error
		if spec, err = buildUser(name, f, j.Params); err != nil {
			return nil, err
		}
	}
	if err := CheckKernel(spec); err != nil {
		return nil, err
	}
	return spec, nil
}

// ParseKernel reads a kernel from a flag or a config value: a built-in name
// (g = 1, learned: RBF(1), Softmax(1), ...), the name of a registered user
// kernel (its factory gets "null" params), or a JSON object as written by
// MarshalKernel.
func ParseKernel(s string) (KernelSpec, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{") {
		return UnmarshalKernel([]byte(t))
	}
	switch {
	case slices.Contains(KernelNames(), t):
		return Builtin(t, 1), nil
	case t == KernelSum || t == KernelScaled:
		return nil, fmt.Errorf("layers: kernel %q needs its arguments: write it as a JSON object", t)
	}
	f, ok := kernelFactory(t)
	if !ok {
		return nil, unknownKernel(t)
	}
	spec, err := buildUser(t, f, json.RawMessage("null"))
	if err != nil {
		return nil, err
	}
	return spec, CheckKernel(spec)
}

func buildUser(name string, f KernelFactory, params json.RawMessage) (KernelSpec, error) {
	spec, err := f(params)
	if err != nil {
		return nil, fmt.Errorf("layers: kernel %q: params %s: %w", name, clip(params), err)
	}
	if spec == nil || isNilSpec(spec) || spec.Name() != name {
		return nil, fmt.Errorf("layers: kernel %q: the registered factory does not return a kernel of that name", name)
	}
	return spec, nil
}

func unknownKernel(name string) error {
	known := KernelNames()
	if r := RegisteredKernels(); len(r) > 0 {
		known = append(known, r...)
	}
	return fmt.Errorf("layers: unknown kernel %q (known: %v); if it is your own kernel, call layers.RegisterKernel(%q, ...) before loading", name, known, name)
}

// decodeStrict unmarshals data into v, refusing unknown keys and trailing
// data.
func decodeStrict(data []byte, v any) error { return strictjson.Decode(data, v) }

// clip shortens data for an error message.
func clip(data []byte) string {
	const max = 80
	if len(data) > max {
		return string(data[:max]) + "…"
	}
	return string(data)
}
