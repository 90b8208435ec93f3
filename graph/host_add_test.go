package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph/internal/gops"
)

// TestAddDenseBits checks the host executor's one-pass addition against
// Gorgonia's elementwise addition (the op G.Add builds, run with Do and
// with UsePreallocDo), bit for bit, fresh and into a reused value, in
// float64 and float32, with NaN, infinities and signed zeros among the
// operands, in a (3, 5) matrix (the scalar loop) and a (7, 37) one (the
// AVX2 kernels and their tail); and that it declines views, scalars and
// mismatched shapes.
func TestAddDenseBits(t *testing.T) {
	for _, sh := range [][2]int{{3, 5}, {7, 37}} {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			testAddDenseBits(t, dt, sh[0], sh[1])
		}
	}
}

func testAddDenseBits(t *testing.T, dt tensor.Dtype, r, c int) {
	{
		g := G.NewGraph()
		an := G.NewMatrix(g, dt, G.WithShape(r, c), G.WithName("a"))
		bn := G.NewMatrix(g, dt, G.WithShape(r, c), G.WithName("b"))
		sum := G.Must(G.Add(an, bn))
		if !isAddOp(sum.Op()) {
			t.Fatalf("%v: G.Add's op %v not recognised", dt, sum.Op())
		}
		if isAddOp(G.Must(G.Sub(an, bn)).Op()) || isAddOp(G.Must(G.HadamardProd(an, bn)).Op()) {
			t.Fatalf("%v: a subtraction or product taken for an addition", dt)
		}
		rng := rand.New(rand.NewPCG(9, 10))
		special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e-310}
		vals := func() *tensor.Dense {
			x := make([]float64, r*c)
			for i := range x {
				x[i] = rng.NormFloat64()
				if rng.IntN(3) == 0 {
					x[i] = special[rng.IntN(len(special))]
				}
			}
			if dt == tensor.Float32 {
				y := make([]float32, len(x))
				for i, v := range x {
					y[i] = float32(v)
				}
				return tensor.New(tensor.WithShape(r, c), tensor.WithBacking(y))
			}
			return tensor.New(tensor.WithShape(r, c), tensor.WithBacking(x))
		}
		for trial := 0; trial < 20; trial++ {
			a, b := vals(), vals()
			want, err := sum.Op().Do(a, b)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := addDense(nil, a, b)
			if !ok {
				t.Fatalf("%v: addDense declined two plain tensors", dt)
			}
			sameBits(t, dt, "fresh", got, want)
			into := vals()
			got2, ok := addDense(into, a, b)
			if !ok || got2 != G.Value(into) {
				t.Fatalf("%v: addDense did not write into the given value", dt)
			}
			sameBits(t, dt, "into", got2, want)
			pre := vals()
			want2, err := sum.Op().(G.UsePreallocDoer).UsePreallocDo(pre, a, b)
			if err != nil {
				t.Fatal(err)
			}
			sameBits(t, dt, "prealloc", got2, want2)
		}
		a := vals()
		v, err := a.Slice(nil, tensor.S(0, 2))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := addDense(nil, v, v); ok {
			t.Errorf("%v: addDense accepted a view", dt)
		}
		if _, ok := addDense(nil, a, vals().ShallowClone()); !ok {
			t.Errorf("%v: addDense declined a shallow clone", dt)
		}
		tr := tensor.New(tensor.WithShape(c, r), tensor.WithBacking(a.Clone().(*tensor.Dense).Data()))
		if _, ok := addDense(nil, a, tr); ok {
			t.Errorf("%v: addDense accepted shapes (%d, %d) and (%d, %d)", dt, r, c, c, r)
		}
		if _, ok := addDense(nil, a, G.NewF64(1)); ok {
			t.Errorf("%v: addDense accepted a scalar", dt)
		}
	}
}

func sameBits(t *testing.T, dt tensor.Dtype, what string, got, want G.Value) {
	t.Helper()
	if !got.Shape().Eq(want.Shape()) {
		t.Fatalf("%v %s: shape %v, want %v", dt, what, got.Shape(), want.Shape())
	}
	switch w := want.Data().(type) {
	case []float64:
		g := got.Data().([]float64)
		for i := range w {
			if math.Float64bits(g[i]) != math.Float64bits(w[i]) {
				t.Fatalf("%v %s: [%d] = %v, want %v", dt, what, i, g[i], w[i])
			}
		}
	case []float32:
		g := got.Data().([]float32)
		for i := range w {
			if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
				t.Fatalf("%v %s: [%d] = %v, want %v", dt, what, i, g[i], w[i])
			}
		}
	}
}

// TestUnaryIntoBits checks the host executor's in-place run of Gorgonia's
// elementwise unary ops (copy into the previous value, then UnsafeDo)
// against Do, bit for bit, in float64 and float32; the input stays intact
// and the result lives in the given value.
func TestUnaryIntoBits(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		g := G.NewGraph()
		x := G.NewMatrix(g, dt, G.WithShape(3, 5), G.WithName("x"))
		builds := map[string]func(*G.Node) (*G.Node, error){
			"tanh": G.Tanh, "sigmoid": G.Sigmoid, "square": G.Square, "neg": G.Neg,
			"cube": G.Cube, "exp": G.Exp, "sqrt": func(n *G.Node) (*G.Node, error) { return G.Sqrt(G.Must(G.Square(n))) },
		}
		for name, build := range builds {
			n := G.Must(build(x))
			if !isUnaryOp(n.Op()) {
				t.Fatalf("%v %s: op %v not recognised", dt, name, n.Op())
			}
			if isAddOp(n.Op()) {
				t.Fatalf("%v %s: taken for an addition", dt, name)
			}
			rng := rand.New(rand.NewPCG(11, 12))
			mk := func() *tensor.Dense {
				v := make([]float64, 15)
				for i := range v {
					v[i] = rng.NormFloat64() * 3
				}
				if dt == tensor.Float32 {
					w := make([]float32, 15)
					for i := range v {
						w[i] = float32(v[i])
					}
					return tensor.New(tensor.WithShape(3, 5), tensor.WithBacking(w))
				}
				return tensor.New(tensor.WithShape(3, 5), tensor.WithBacking(v))
			}
			a := mk()
			keep := a.Clone().(*tensor.Dense)
			want, err := n.Op().Do(a)
			if err != nil {
				t.Fatal(err)
			}
			prev := mk()
			got, ok := unaryInto(n.Op(), prev, a)
			if !ok || got != G.Value(prev) {
				t.Fatalf("%v %s: not computed into the given value", dt, name)
			}
			sameBits(t, dt, name, got, want)
			sameBits(t, dt, name+" input", a, keep)
		}
		if isUnaryOp(G.Must(G.Add(x, x)).Op()) {
			t.Fatalf("%v: an addition taken for a unary op", dt)
		}
	}
}

// TestToFloat32Bits checks ToFloat32 against Go's conversion bit for bit,
// lengths that exercise the AVX kernel and its tail, with values that round
// (ties, subnormals, overflow to ±Inf, NaN, signed zeros).
func TestToFloat32Bits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e-310, 1e-40, 3.4e38, 3.5e38, -1e300,
		1 + 0x1p-24, 1 + 0x3p-24, math.Nextafter(1+0x1p-24, 2), 0x1p-149, 0x1p-150, 0x3p-150}
	for _, n := range []int{0, 1, 15, 16, 17, 47, 160, 1000} {
		src := make([]float64, n)
		for i := range src {
			src[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(20)-10))
			if rng.IntN(3) == 0 {
				src[i] = special[rng.IntN(len(special))]
			}
		}
		dst := make([]float32, n+3)
		if err := ToFloat32(dst, src); err != nil {
			t.Fatal(err)
		}
		for i, v := range src {
			if want := float32(v); math.Float32bits(dst[i]) != math.Float32bits(want) {
				t.Fatalf("n %d: float32(%v) = %v (%#x), want %v (%#x)", n, v, dst[i], math.Float32bits(dst[i]), want, math.Float32bits(want))
			}
		}
		for _, v := range dst[n:] {
			if v != 0 {
				t.Fatalf("n %d: ToFloat32 wrote past len(src)", n)
			}
		}
	}
	short := []float32{7, 7, 7}
	if err := ToFloat32(short, make([]float64, 4)); err == nil {
		t.Error("no error for a short dst")
	}
	if short[0] != 7 {
		t.Error("ToFloat32 wrote into a short dst")
	}
}

// TestBinDenseBits checks the host executor's one-pass subtraction and
// product (binDense '-' and '*') against Gorgonia's elementwise ops (G.Sub,
// G.HadamardProd; Do and UsePreallocDo), bit for
// bit, fresh and into a reused value, float64 and float32, with NaN,
// infinities, signed zeros and subnormals among the operands, in shapes
// that run the scalar loop and the AVX2 kernels with their tail; that the
// ops are recognised, and additions, divisions and scalar operands are not
// taken.
func TestBinDenseBits(t *testing.T) {
	for _, sh := range [][2]int{{3, 5}, {7, 37}} {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			r, c := sh[0], sh[1]
			g := G.NewGraph()
			an := G.NewMatrix(g, dt, G.WithShape(r, c), G.WithName("a"))
			bn := G.NewMatrix(g, dt, G.WithShape(r, c), G.WithName("b"))
			if k := binOpKind(G.Must(G.Add(an, bn)).Op()); k != 0 {
				t.Fatalf("%v: an addition taken for %q", dt, k)
			}
			if k := binOpKind(G.Must(G.HadamardDiv(an, bn)).Op()); k != 0 {
				t.Fatalf("%v: a division taken for %q", dt, k)
			}
			rng := rand.New(rand.NewPCG(11, 12))
			special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e-310, 1e-40, 3e38}
			vals := func() *tensor.Dense {
				x := make([]float64, r*c)
				for i := range x {
					x[i] = rng.NormFloat64()
					if rng.IntN(3) == 0 {
						x[i] = special[rng.IntN(len(special))]
					}
				}
				if dt == tensor.Float32 {
					y := make([]float32, len(x))
					for i, v := range x {
						y[i] = float32(v)
					}
					return tensor.New(tensor.WithShape(r, c), tensor.WithBacking(y))
				}
				return tensor.New(tensor.WithShape(r, c), tensor.WithBacking(x))
			}
			for _, tc := range []struct {
				name string
				kind byte
				n    *G.Node
			}{
				{"sub", '-', G.Must(G.Sub(an, bn))},
				{"hadamard", '*', G.Must(G.HadamardProd(an, bn))},
			} {
				if k := binOpKind(tc.n.Op()); k != tc.kind {
					t.Fatalf("%v %s: op %v recognised as %q, want %q", dt, tc.name, tc.n.Op(), k, tc.kind)
				}
				for trial := 0; trial < 20; trial++ {
					a, b := vals(), vals()
					want, err := tc.n.Op().Do(a, b)
					if err != nil {
						t.Fatal(err)
					}
					got, ok := binDense(tc.kind, nil, a, b)
					if !ok {
						t.Fatalf("%v %s: binDense declined two plain tensors", dt, tc.name)
					}
					sameBits(t, dt, tc.name+" fresh", got, want)
					into := vals()
					got2, ok := binDense(tc.kind, into, a, b)
					if !ok || got2 != G.Value(into) {
						t.Fatalf("%v %s: binDense did not write into the given value", dt, tc.name)
					}
					sameBits(t, dt, tc.name+" into", got2, want)
					want2, err := tc.n.Op().(G.UsePreallocDoer).UsePreallocDo(vals(), a, b)
					if err != nil {
						t.Fatal(err)
					}
					sameBits(t, dt, tc.name+" prealloc", got2, want2)
				}
				if _, ok := binDense(tc.kind, nil, vals(), G.NewF64(1)); ok {
					t.Errorf("%v %s: binDense accepted a scalar", dt, tc.name)
				}
			}
		}
	}
}

// TestRepeatIntoBits checks the host executor's broadcast for Gorgonia's
// repeat op (repeatInto) against the op's Do, element for element: the
// broadcasts of a Sum's gradient ((1, 1) to (n, 1), (n, 1) to (n, m)) and a
// middle axis of a 3-D tensor, float32 and float64, fresh and into a given
// value; and that it declines what is not such a broadcast.
func TestRepeatIntoBits(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, tc := range []struct {
			in, out tensor.Shape
			axis    int
		}{
			{tensor.Shape{1, 1}, tensor.Shape{7, 1}, 0},
			{tensor.Shape{7, 1}, tensor.Shape{7, 25}, 1},
			{tensor.Shape{3, 1, 4}, tensor.Shape{3, 5, 4}, 1},
		} {
			g := G.NewGraph()
			a := G.NewTensor(g, dt, len(tc.in), G.WithShape(tc.in...), G.WithName("a"))
			b := G.NewTensor(g, dt, len(tc.out), G.WithShape(tc.out...), G.WithName("b"))
			x, _, err := G.Broadcast(a, b, G.NewBroadcastPattern([]byte{byte(tc.axis)}, nil))
			if err != nil {
				t.Fatal(err)
			}
			if got := gops.RepeatAxis(x.Op()); got != tc.axis {
				t.Fatalf("%v %v: repeat axis %d, want %d", dt, tc.in, got, tc.axis)
			}
			if gops.RepeatAxis(G.Must(G.Add(b, b)).Op()) != -1 {
				t.Fatalf("an addition taken for a repeat")
			}
			rng := rand.New(rand.NewPCG(13, 14))
			vals := make([]float64, tc.in.TotalSize())
			for i := range vals {
				vals[i] = rng.NormFloat64()
			}
			vals[0] = math.Copysign(0, -1)
			var av *tensor.Dense
			var n G.Value
			if dt == tensor.Float32 {
				y := make([]float32, len(vals))
				for i, v := range vals {
					y[i] = float32(v)
				}
				av, n = tensor.New(tensor.WithShape(tc.in...), tensor.WithBacking(y)), G.NewF32(float32(tc.out[tc.axis]))
			} else {
				av, n = tensor.New(tensor.WithShape(tc.in...), tensor.WithBacking(vals)), G.NewF64(float64(tc.out[tc.axis]))
			}
			want, err := x.Op().Do(av.Clone().(*tensor.Dense), n)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := repeatInto(nil, av, n, tc.axis, tc.out)
			if !ok {
				t.Fatalf("%v %v: repeatInto declined a broadcast", dt, tc.in)
			}
			sameBits(t, dt, "fresh", got, want)
			into := tensor.New(tensor.Of(dt), tensor.WithShape(tc.out...))
			got2, ok := repeatInto(into, av, n, tc.axis, tc.out)
			if !ok || got2 != G.Value(into) {
				t.Fatalf("%v %v: repeatInto did not write into the given value", dt, tc.in)
			}
			sameBits(t, dt, "into", got2, want)
			if _, ok := repeatInto(nil, av, G.NewF64(3), tc.axis, tc.out); ok && tc.out[tc.axis] != 3 {
				t.Errorf("%v %v: repeatInto took a repeat count that is not the shape's", dt, tc.in)
			}
		}
		// Not a broadcast: size 2 along the axis.
		wide := tensor.New(tensor.Of(dt), tensor.WithShape(2, 2))
		if _, ok := repeatInto(nil, wide, G.NewF64(2), 1, tensor.Shape{2, 4}); ok {
			t.Errorf("%v: repeatInto took a repeat of a size-2 axis", dt)
		}
	}
}
