package ops

import (
	"fmt"
	"hash"
	"math"
	"unsafe"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GELU returns the tanh approximation of the GELU activation of GPT-2 and
// nanoGPT (torch's approximate="tanh"), elementwise, in its sigmoid form
//
//	gelu(x) = x σ(k (x + c x³)),  c = 0.044715,  k = 2√(2/π),
//
// with c and k rounded to x's dtype. It is one op, forward and backward,
// in place of the chain of Gorgonia ops it replaces (Cube, Mul, Add, Mul,
// Sigmoid, HadamardProd and the nine nodes of their gradients), and it
// computes the same values bit for bit: every elementwise operation of the
// chain in the same order, each rounded to the dtype, with Gorgonia's
// sigmoid (1/(1+exp(−z)) in float64, 0 below −88 (float32) or −709
// (float64), 1 above 15 (float32) or 19 (float64)).
func GELU(x *G.Node) (*G.Node, error) {
	if x == nil {
		return nil, fmt.Errorf("ops: gelu of a nil node")
	}
	if len(x.Shape()) == 0 {
		return nil, fmt.Errorf("ops: gelu of scalar node %q: need rank >= 1", x.Name())
	}
	if err := checkFloat(x.Dtype()); err != nil {
		return nil, fmt.Errorf("ops: gelu of %q: %w", x.Name(), err)
	}
	return G.ApplyOp(&GELUOp{}, x)
}

// GELU's coefficients: GELUC multiplies x³, GELUK the sum.
const (
	GELUC = 0.044715
	GELUK = 1.5957691216057308 // 2√(2/π)
)

// GELUOp is [GELU]'s op.
type GELUOp struct{}

func (op *GELUOp) Arity() int { return 1 }
func (op *GELUOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (op *GELUOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("ops: gelu: cannot infer shape from %T", in[0])
	}
	return s.Clone(), nil
}
func (op *GELUOp) ReturnsPtr() bool      { return false }
func (op *GELUOp) CallsExtern() bool     { return false }
func (op *GELUOp) OverwritesInput() int  { return -1 }
func (op *GELUOp) WriteHash(h hash.Hash) { fmt.Fprint(h, "gdattn.gelu") }
func (op *GELUOp) Hashcode() uint32      { return hashOf(op) }
func (op *GELUOp) String() string        { return "GELU" }

func (op *GELUOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *GELUOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) { return op.do(p, vals) }

func (op *GELUOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 1 {
		return nil, fmt.Errorf("ops: gelu: %d inputs, want 1", len(vals))
	}
	shape := vals[0].Shape()
	switch x := vals[0].Data().(type) {
	case []float64:
		out := outBuf[float64](p, len(x), false)
		parallelRows(len(x), 1, func(lo, hi int) { geluRange(x, out, lo, hi) })
		return wrapOut(p, shape, out), nil
	case []float32:
		out := outBuf[float32](p, len(x), false)
		parallelRows(len(x), 1, func(lo, hi int) {
			if haveGELUAVX2 && hi-lo >= 4 {
				lo += geluF32(&x[lo], &out[lo], hi-lo)
			}
			geluRange(x, out, lo, hi)
		})
		return wrapOut(p, shape, out), nil
	}
	return nil, fmt.Errorf("ops: gelu: unsupported data %T", vals[0].Data())
}

func (op *GELUOp) DiffWRT(inputs int) []bool { return []bool{true} }

func (op *GELUOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != 1 {
		return nil, fmt.Errorf("ops: gelu: %d inputs, want 1", len(inputs))
	}
	dx, err := G.ApplyOp(&GELUGradOp{}, inputs[0], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx}, nil
}

// GELUGradOp maps (x, dy) to dx, the gradient of [GELU] as Gorgonia's
// chain computes it (σ recomputed from x).
type GELUGradOp struct{}

func (op *GELUGradOp) Arity() int { return 2 }
func (op *GELUGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a)
}
func (op *GELUGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("ops: gelu gradient: cannot infer shape from %T", in[0])
	}
	return s.Clone(), nil
}
func (op *GELUGradOp) ReturnsPtr() bool      { return false }
func (op *GELUGradOp) CallsExtern() bool     { return false }
func (op *GELUGradOp) OverwritesInput() int  { return -1 }
func (op *GELUGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, "gdattn.gelugrad") }
func (op *GELUGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *GELUGradOp) String() string        { return "GELUGrad" }

func (op *GELUGradOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *GELUGradOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) { return op.do(p, vals) }

func (op *GELUGradOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("ops: gelu gradient: %d inputs, want 2", len(vals))
	}
	shape := vals[0].Shape()
	switch x := vals[0].Data().(type) {
	case []float64:
		dy, ok := vals[1].Data().([]float64)
		if !ok || len(dy) != len(x) {
			return nil, fmt.Errorf("ops: gelu gradient: mismatched gradient %T of %v for input of %v", vals[1].Data(), vals[1].Shape(), shape)
		}
		out := outBuf[float64](p, len(x), false)
		parallelRows(len(x), 1, func(lo, hi int) { geluGradRange(x, dy, out, lo, hi) })
		return wrapOut(p, shape, out), nil
	case []float32:
		dy, ok := vals[1].Data().([]float32)
		if !ok || len(dy) != len(x) {
			return nil, fmt.Errorf("ops: gelu gradient: mismatched gradient %T of %v for input of %v", vals[1].Data(), vals[1].Shape(), shape)
		}
		out := outBuf[float32](p, len(x), false)
		parallelRows(len(x), 1, func(lo, hi int) {
			if haveGELUAVX2 && hi-lo >= 4 {
				lo += geluGradF32(&x[lo], &dy[lo], &out[lo], hi-lo)
			}
			geluGradRange(x, dy, out, lo, hi)
		})
		return wrapOut(p, shape, out), nil
	}
	return nil, fmt.Errorf("ops: gelu gradient: unsupported data %T", vals[0].Data())
}

// sigmoid is Gorgonia's elementwise sigmoid of a value of dtype F.
func sigmoid[F float32 | float64](z F) F {
	if unsafe.Sizeof(z) == 4 { // float32
		if z < -88 {
			return 0
		}
		if z > 15 {
			return 1
		}
		return F(1.0 / (1.0 + math.Exp(float64(-z))))
	}
	if z < -709 {
		return 0
	}
	if z > 19 {
		return 1
	}
	return F(1.0 / (1.0 + math.Exp(float64(-z))))
}

// geluArg returns k(x + x³c) rounded as the chain rounds every step: the
// explicit conversions keep the compiler from fusing a product into the
// next addition.
func geluArg[F float32 | float64](x F) F {
	c, k := F(GELUC), F(GELUK)
	x3 := F(F(x*x) * x)
	inner := x + F(x3*c)
	return F(inner * k)
}

// geluRange sets out[i] = gelu(x[i]) for lo ≤ i < hi.
func geluRange[F float32 | float64](x, out []F, lo, hi int) {
	x, out = x[lo:hi], out[lo:hi]
	for i, v := range x {
		out[i] = v * sigmoid(geluArg(v))
	}
}

// geluGradRange sets out[i] to the chain's gradient at x[i] given dy[i]
// for lo ≤ i < hi: with z = k(x + x³c) and s = σ(z), Gorgonia's graph
// computes
//
//	a = s·dy (through x ⊙ s), b = ((s·σ(−z))·(x·dy))·k (through the
//	sigmoid, whose derivative it takes as σ(z)·σ(−z), and the sum),
//	c3 = ((x·x)·3)·(b·c) (through the cube),
//
// and sums a node's gradients in the order (a + b) + c3.
func geluGradRange[F float32 | float64](x, dy, out []F, lo, hi int) {
	x, dy, out = x[lo:hi], dy[lo:hi], out[lo:hi]
	c, k := F(GELUC), F(GELUK)
	for i, v := range x {
		g := dy[i]
		z := geluArg(v)
		s := sigmoid(z)
		a := F(s * g)
		ds := F(v * g)
		dz := F(F(s*sigmoid(-z)) * ds)
		b := F(dz * k)
		c3 := F(F(F(v*v)*3) * F(b*c))
		out[i] = F(a+b) + c3
	}
}
