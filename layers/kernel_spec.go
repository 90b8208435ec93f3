package layers

import (
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/gdattn/gdattn/graph"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

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
