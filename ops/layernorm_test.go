package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/ops"
)

// lnChain is layer normalisation composed from Gorgonia ops, as
// layers.LayerNorm built it before ops.LayerNorm: Mean, Neg, a broadcast
// Add, Square, Mean, Add eps, Sqrt, Inverse, broadcast products and a
// broadcast Add, differentiated by G.Grad. The fused op must reproduce its
// values bit for bit.
func lnChain(s *graph.Scope, x, scale, bias *G.Node, eps float64) (*G.Node, error) {
	epsNode, err := s.Const("chain_eps", tensor.Shape{}, []float64{eps})
	if err != nil {
		return nil, err
	}
	shape := x.Shape().Clone()
	last := len(shape) - 1
	d := shape[last]
	statShape := shape.Clone()
	statShape[last] = 1
	rowPat := []byte{byte(last)}
	paramShape := make(tensor.Shape, len(shape))
	paramPat := make([]byte, last)
	for i := range paramShape {
		paramShape[i] = 1
	}
	paramShape[last] = d
	for i := range paramPat {
		paramPat[i] = byte(i)
	}
	negMean := G.Must(ops.Reshape(G.Must(G.Neg(G.Must(G.Mean(x, last)))), statShape))
	xc := G.Must(G.BroadcastAdd(negMean, x, rowPat, nil))
	variance := G.Must(ops.Reshape(G.Must(G.Mean(G.Must(G.Square(xc)), last)), statShape))
	rstd := G.Must(G.Inverse(G.Must(G.Sqrt(G.Must(G.Add(variance, epsNode))))))
	y := G.Must(G.BroadcastHadamardProd(xc, rstd, nil, rowPat))
	y = G.Must(G.BroadcastHadamardProd(y, G.Must(ops.Reshape(scale, paramShape)), nil, paramPat))
	if bias != nil {
		y = G.Must(G.BroadcastAdd(y, G.Must(ops.Reshape(bias, paramShape)), nil, paramPat))
	}
	return y, nil
}

// lnBitCase is one configuration of the bit-identity test.
type lnBitCase struct {
	shape  tensor.Shape
	eps    float64
	noBias bool
	// constRows makes every third row constant (variance 0: eps alone
	// keeps the inverse finite).
	constRows bool
	// residual adds x to the output (z = x + LN(x)), so x has a reader
	// besides the layer norm, differentiated before it, as in a
	// transformer block; inner makes x = x0 ⊙ w an intermediate node whose
	// gradient flows on to x0 and w.
	residual, inner bool
}

func (c lnBitCase) String() string {
	var b strings.Builder
	for i, d := range c.shape {
		if i > 0 {
			b.WriteByte('x')
		}
		fmt.Fprint(&b, d)
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{c.noBias, "nobias"}, {c.constRows, "const"}, {c.residual, "resid"}, {c.inner, "inner"}, {c.eps != 1e-5, fmt.Sprintf("eps%g", c.eps)}} {
		if f.on {
			b.WriteString("_" + f.name)
		}
	}
	return b.String()
}

// lnBitData draws the case's values from PCG(seed, 7): x ~ 1 + 2 N(0,1)
// (a mean and a spread to remove), scale ~ 1 + 0.5 N(0,1), bias ~ N(0,1),
// the loss weights r ~ N(0,1), w ~ 1 + 0.1 N(0,1).
func lnBitData(c lnBitCase, seed uint64) (x, scale, bias, r, w []float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	d := c.shape[len(c.shape)-1]
	n := c.shape.TotalSize()
	x, r, w = make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range x {
		x[i] = 1 + 2*rng.NormFloat64()
		r[i] = rng.NormFloat64()
		w[i] = 1 + 0.1*rng.NormFloat64()
	}
	if c.constRows {
		for row := 0; row < n/d; row += 3 {
			v := rng.NormFloat64()
			for j := range d {
				x[row*d+j] = v
			}
		}
	}
	scale, bias = make([]float64, d), make([]float64, d)
	for j := range scale {
		scale[j] = 1 + 0.5*rng.NormFloat64()
		bias[j] = rng.NormFloat64()
	}
	return x, scale, bias, r, w
}

// lnRun builds the case with the chain or the fused op in dtype dt, runs
// a gradient machine on the host executor twice (the second run writes
// into the buffers of the first) and returns the loss, the layer's output
// and every parameter's gradient by name.
func lnRun(t *testing.T, c lnBitCase, dt tensor.Dtype, fused bool, seed uint64) (loss float64, y []float64, grads map[string][]float64) {
	t.Helper()
	xv, sv, bv, rv, wv := lnBitData(c, seed)
	s, err := graph.NewScope(dt, 1)
	if err != nil {
		t.Fatal(err)
	}
	param := func(name string, shape tensor.Shape, v []float64) *G.Node {
		n, err := s.Param(name, shape, graph.FromValues(v))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	x := param("x", c.shape, xv)
	if c.inner {
		x = G.Must(G.HadamardProd(x, param("w", c.shape, wv)))
	}
	d := c.shape[len(c.shape)-1]
	scale := param("scale", tensor.Shape{d}, sv)
	var bias *G.Node
	if !c.noBias {
		bias = param("bias", tensor.Shape{d}, bv)
	}
	var yn *G.Node
	if fused {
		yn, err = ops.LayerNorm(x, scale, bias, c.eps)
	} else {
		yn, err = lnChain(s, x, scale, bias, c.eps)
	}
	if err != nil {
		t.Fatal(err)
	}
	z := yn
	if c.residual {
		z = G.Must(G.Add(x, yn))
	}
	r, err := s.Const("r", c.shape, rv)
	if err != nil {
		t.Fatal(err)
	}
	ln := G.Must(G.Sum(G.Must(G.HadamardProd(z, r))))
	m, err := graph.NewMachine(s, ln, graph.MachineOptions{Outputs: G.Nodes{yn}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for range 2 {
		if err := m.Run(); err != nil {
			t.Fatal(err)
		}
	}
	if loss, err = graph.Scalar(ln); err != nil {
		t.Fatal(err)
	}
	if y, err = graph.Values(yn); err != nil {
		t.Fatal(err)
	}
	grads = map[string][]float64{}
	for _, p := range s.Params() {
		if grads[p.Name()], err = graph.GradValues(p); err != nil {
			t.Fatal(err)
		}
	}
	return loss, y, grads
}

// lnSameBits compares two value lists bit for bit (float32 values converted to
// float64 keep their bits' meaning: the conversion is exact) and reports the
// first differences.
func lnSameBits(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d values, want %d", what, len(got), len(want))
		return
	}
	bad, maxRel := 0, 0.0
	for i := range got {
		if math.Float64bits(got[i]) == math.Float64bits(want[i]) {
			continue
		}
		if bad < 3 {
			t.Errorf("%s[%d] = %v (%#x), want %v (%#x)", what, i, got[i], math.Float64bits(got[i]), want[i], math.Float64bits(want[i]))
		}
		bad++
		maxRel = math.Max(maxRel, math.Abs(got[i]-want[i])/math.Max(math.Abs(want[i]), 1e-30))
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values differ (largest relative difference %.3g)", what, bad, len(got), maxRel)
	}
}

// TestLayerNormBitIdentical: the fused op gives the composed graph's loss,
// output and every gradient (input, scale, bias, and through an
// intermediate input the nodes before it) bit for bit, in float32 and
// float64, ranks 2 and 3, widths 1, 3, 64 and 512.
func TestLayerNormBitIdentical(t *testing.T) {
	cases := []lnBitCase{
		{shape: tensor.Shape{5, 1}},
		{shape: tensor.Shape{1, 3}},
		{shape: tensor.Shape{6, 3}, constRows: true},
		{shape: tensor.Shape{2, 3, 3}, residual: true},
		{shape: tensor.Shape{7, 64}, residual: true, inner: true},
		{shape: tensor.Shape{2, 5, 64}, constRows: true, residual: true},
		{shape: tensor.Shape{3, 1, 64}, noBias: true, inner: true},
		{shape: tensor.Shape{1, 4, 64}, eps: 0.5},
		{shape: tensor.Shape{2, 2, 1}, residual: true},
		{shape: tensor.Shape{9, 512}, constRows: true, inner: true},
		{shape: tensor.Shape{2, 8, 512}, residual: true, inner: true},
		{shape: tensor.Shape{3, 4, 512}, noBias: true, residual: true, constRows: true},
	}
	for _, c := range cases {
		if c.eps == 0 {
			c.eps = 1e-5
		}
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			t.Run(fmt.Sprintf("%v/%v", c, dt), func(t *testing.T) {
				wl, wy, wg := lnRun(t, c, dt, false, 3)
				gl, gy, gg := lnRun(t, c, dt, true, 3)
				lnSameBits(t, "loss", []float64{gl}, []float64{wl})
				lnSameBits(t, "y", gy, wy)
				if len(gg) != len(wg) {
					t.Fatalf("%d gradients, want %d", len(gg), len(wg))
				}
				for name, w := range wg {
					lnSameBits(t, "d"+name, gg[name], w)
				}
			})
		}
	}
}
