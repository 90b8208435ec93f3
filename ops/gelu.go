package ops

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The constants of the tanh-approximate GELU in its sigmoid form,
// x σ(k (x + c x³)), as float64 values (rounded from these to float32 as a
// float32 graph's constants are).
var (
	geluC = 0.044715
	geluK = 2 * math.Sqrt(2/math.Pi)
)

// GELU returns x σ(k (x + c x³)) elementwise, with k = 2√(2/π) and
// c = 0.044715: the tanh approximation of GPT-2 and nanoGPT (0.5 x (1 +
// tanh(√(2/π) (x + c x³)))) in its sigmoid form, as one [GELUOp] node and
// one node for its gradient instead of the six and twelve elementwise
// Gorgonia nodes (each with a tensor of x's size) of the composite
//
//	x ⊙ Sigmoid((x + Cube(x)·c)·k)
//
// whose values and gradients it reproduces bit for bit: the same
// operations in the same order and dtype as Gorgonia's forward and gradient
// graphs (its sigmoid: 0 below −88 in float32 and −709 in float64, 1 above
// 15 and 19; σ' as σ(u) σ(−u); the gradient's three terms summed in its
// order). c and k are rounded to x's dtype.
func GELU(x *G.Node) (*G.Node, error) {
	if x == nil {
		return nil, fmt.Errorf("ops: gelu: nil input")
	}
	if err := checkFloat(x.Dtype()); err != nil {
		return nil, fmt.Errorf("ops: gelu: %w", err)
	}
	if x.Shape().Dims() < 1 {
		return nil, fmt.Errorf("ops: gelu: %q is a scalar, want a tensor", x.Name())
	}
	return G.ApplyOp(&GELUOp{shape: x.Shape().Clone()}, x)
}

// GELUOp is [GELU]'s op, x -> GELU(x); with Backward its gradient op,
// (x, dy) -> dx. The forward op keeps σ(k (x + c x³)) in a buffer it owns
// (reused from run to run) for the backward op of the same run, which
// recomputes it when the buffer does not hold this x's.
type GELUOp struct {
	shape tensor.Shape
	back  bool
	fwd   *GELUOp // the forward op, for a backward op

	// Forward op state, from its last Do.
	sig any // []float32 or []float64: σ of each element
	src any // the x slice sig was computed from
}

// Backward reports whether the op is the gradient op.
func (op *GELUOp) Backward() bool { return op.back }

func (op *GELUOp) Arity() int {
	if op.back {
		return 2
	}
	return 1
}
func (op *GELUOp) Type() hm.Type {
	t := &G.TensorType{Dims: op.shape.Dims(), Of: hm.TypeVariable('a')}
	if op.back {
		return hm.NewFnType(t, t, t)
	}
	return hm.NewFnType(t, t)
}
func (op *GELUOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.shape.Clone(), nil }
func (op *GELUOp) ReturnsPtr() bool                               { return false }
func (op *GELUOp) CallsExtern() bool                              { return false }
func (op *GELUOp) OverwritesInput() int                           { return -1 }
func (op *GELUOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.gelu %v back %v", op.shape, op.back)
}
func (op *GELUOp) Hashcode() uint32 { return hashOf(op) }
func (op *GELUOp) String() string {
	if op.back {
		return "GELUGrad"
	}
	return "GELU"
}
func (op *GELUOp) DiffWRT(int) []bool {
	if op.back {
		return []bool{false, false}
	}
	return []bool{true}
}
func (op *GELUOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if op.back {
		return nil, fmt.Errorf("ops: the GELU's gradient has no gradient of its own (second derivatives are unsupported)")
	}
	g, err := G.ApplyOp(&GELUOp{shape: op.shape, back: true, fwd: op}, inputs[0], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{g}, nil
}

func (op *GELUOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != op.Arity() {
		return nil, fmt.Errorf("ops: %v: %d inputs, want %d", op, len(vals), op.Arity())
	}
	n := op.shape.TotalSize()
	switch x := denseData(vals[0]).(type) {
	case []float32:
		return geluDo(op, x, vals, n, sigmoid32)
	case []float64:
		return geluDo(op, x, vals, n, sigmoid64)
	}
	return nil, fmt.Errorf("ops: %v: unsupported data %T", op, vals[0].Data())
}

// sigmoid32 and sigmoid64 are Gorgonia's float32 and float64 sigmoids
// (math_nooptim.go), which the composite GELU runs.
func sigmoid32(x float32) float32 {
	if x < -88 {
		return 0
	}
	if x > 15 {
		return 1
	}
	return float32(1.0 / (1.0 + math.Exp(float64(-x))))
}

func sigmoid64(x float64) float64 {
	if x < -709 {
		return 0
	}
	if x > 19 {
		return 1
	}
	return 1.0 / (1.0 + math.Exp(-x))
}

func geluDo[F float32 | float64](op *GELUOp, x []F, vals []G.Value, n int, sigmoid func(F) F) (G.Value, error) {
	if len(x) != n {
		return nil, fmt.Errorf("ops: %v: input of %d values, want %d", op, len(x), n)
	}
	c, k := F(geluC), F(geluK)
	out := make([]F, n)
	if !op.back {
		sig, ok := op.sig.([]F)
		if !ok || len(sig) != n {
			sig = make([]F, n)
			op.sig = sig
		}
		for i, v := range x {
			t := v * v * v // Cube
			t = t * c
			u := (v + t) * k
			s := sigmoid(u)
			sig[i] = s
			out[i] = v * s
		}
		op.src = x
		return tensor.New(tensor.WithShape(op.shape.Clone()...), tensor.WithBacking(out)), nil
	}
	dy, ok := denseData(vals[1]).([]F)
	if !ok || len(dy) != n {
		return nil, fmt.Errorf("ops: %v: gradient %T, want %d values of the input's dtype", op, vals[1].Data(), n)
	}
	f := op.fwd
	sig, ok := f.sig.([]F)
	if !ok || len(sig) != n || !sameSlice(f.src, x) {
		// No σ of this x at hand: compute it.
		sig = make([]F, n)
		for i, v := range x {
			t := v * v * v
			t = t * c
			sig[i] = sigmoid((v + t) * k)
		}
	}
	x, dy, sig = x[:n], dy[:n], sig[:n]
	for i, v := range x {
		// Gorgonia's gradient graph of the composite: σ'(u) as σ(u) σ(−u),
		// the products and sums in its order.
		t := v * v * v
		t = t * c
		u := (v + t) * k
		s, g := sig[i], dy[i]
		a := s * g                        // through x ⊙ σ: σ ⊙ dy
		du := (s * sigmoid(-u)) * (v * g) // and x ⊙ dy into σ
		b := k * du                       // through (x + c x³)·k: the sum's x term
		cube := (v * v * 3) * (c * b)     // and its x³ term
		out[i] = (a + b) + cube
	}
	return tensor.New(tensor.WithShape(op.shape.Clone()...), tensor.WithBacking(out)), nil
}
