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
	"github.com/gdattn/gdattn/graph/graphtest"
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
	s, m, ln, yn := lnMachine(t, c, dt, fused, seed)
	defer m.Close()
	for range 2 {
		if err := m.Run(); err != nil {
			t.Fatal(err)
		}
	}
	var err error
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

// lnMachine builds the case (see lnRun) and its gradient machine on the
// host executor; it returns the scope, the machine, the loss and the
// layer's output node.
func lnMachine(t testing.TB, c lnBitCase, dt tensor.Dtype, fused bool, seed uint64) (*graph.Scope, *graph.Machine, *G.Node, *G.Node) {
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
	return s, m, ln, yn
}

// BenchmarkLayerNorm: one training run (forward and every gradient) of a
// layer norm over the language paper preset's activations, (4, 256, 512)
// with a residual reader of x, as the composed Gorgonia graph ("chain") and
// as the fused op, on the host executor. cpu-ms/op is the process CPU time
// per run (it includes the first run's setup, amortised over b.N).
//
//	GOMAXPROCS=1 go test ./ops -run '^$' -bench LayerNorm -benchtime 50x -count 5
func BenchmarkLayerNorm(b *testing.B) {
	c := lnBitCase{shape: tensor.Shape{4, 256, 512}, eps: 1e-5, residual: true}
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for _, fused := range []bool{false, true} {
			name := "chain"
			if fused {
				name = "fused"
			}
			b.Run(fmt.Sprintf("%v/%s", dt, name), func(b *testing.B) {
				_, m, _, _ := lnMachine(b, c, dt, fused, 1)
				defer m.Close()
				cpu0 := ops.CPUTime()
				for b.Loop() {
					if err := m.Run(); err != nil {
						b.Fatal(err)
					}
				}
				if cpu := ops.CPUTime() - cpu0; cpu > 0 {
					b.ReportMetric(cpu.Seconds()*1e3/float64(b.N), "cpu-ms/op")
				}
			})
		}
	}
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

// TestLayerNormRank4: at rank 4 the output and the input's gradient are
// still the composed graph's bit for bit; the scale and bias gradients are
// the sums over every row (the composed graph's are not: Gorgonia's sum over
// a middle axis of a rank >= 4 tensor reads the wrong elements when the
// axis after it is longer than 2, see docs/gorgonia-bugs.md).
func TestLayerNormRank4(t *testing.T) {
	c := lnBitCase{shape: tensor.Shape{2, 2, 3, 4}, eps: 1e-5}
	_, wy, wg := lnRun(t, c, tensor.Float64, false, 3)
	_, gy, gg := lnRun(t, c, tensor.Float64, true, 3)
	lnSameBits(t, "y", gy, wy)
	lnSameBits(t, "dx", gg["x"], wg["x"])
	// dbias = Σ_rows r and dscale = Σ_rows x̂ ⊙ r for the loss Σ y ⊙ r.
	xv, _, _, rv, _ := lnBitData(c, 3)
	d := 4
	wantB, wantS := make([]float64, d), make([]float64, d)
	for row := 0; row < len(xv)/d; row++ {
		xs := xv[row*d : (row+1)*d]
		var mean, v float64
		for _, e := range xs {
			mean += e / float64(d)
		}
		for _, e := range xs {
			v += (e - mean) * (e - mean) / float64(d)
		}
		for j, e := range xs {
			wantB[j] += rv[row*d+j]
			wantS[j] += (e - mean) / math.Sqrt(v+c.eps) * rv[row*d+j]
		}
	}
	graphtest.AllClose(t, "dbias", gg["bias"], wantB, 1e-12)
	graphtest.AllClose(t, "dscale", gg["scale"], wantS, 1e-12)
}

// lnGradBuild is the loss Σ z ⊙ r with z = LN(x) (+ x with residual) for
// the finite-difference checks; x, scale and bias are parameters.
func lnGradBuild(c lnBitCase) graphtest.BuildFunc {
	xv, sv, bv, rv, _ := lnBitData(c, 5)
	return func(s *graph.Scope) (*G.Node, error) {
		d := c.shape[len(c.shape)-1]
		x, err := s.Param("x", c.shape, graph.FromValues(xv))
		if err != nil {
			return nil, err
		}
		scale, err := s.Param("scale", tensor.Shape{d}, graph.FromValues(sv))
		if err != nil {
			return nil, err
		}
		var bias *G.Node
		if !c.noBias {
			if bias, err = s.Param("bias", tensor.Shape{d}, graph.FromValues(bv)); err != nil {
				return nil, err
			}
		}
		y, err := ops.LayerNorm(x, scale, bias, c.eps)
		if err != nil {
			return nil, err
		}
		if c.residual {
			y = G.Must(G.Add(x, y))
		}
		r, err := s.Const("r", c.shape, rv)
		if err != nil {
			return nil, err
		}
		return G.Sum(G.Must(G.HadamardProd(y, r)))
	}
}

// TestLayerNormGradCheck: every gradient of the fused op against finite
// differences, float64 and float32, ranks 2 to 4.
func TestLayerNormGradCheck(t *testing.T) {
	for _, c := range []lnBitCase{
		{shape: tensor.Shape{4, 3}, eps: 1e-5},
		{shape: tensor.Shape{3, 1}, eps: 1e-5},
		{shape: tensor.Shape{2, 3, 5}, eps: 0.1, residual: true},
		{shape: tensor.Shape{2, 2, 3, 4}, eps: 1e-5, noBias: true},
		{shape: tensor.Shape{3, 16}, eps: 1e-5, residual: true},
	} {
		t.Run(c.String(), func(t *testing.T) {
			graphtest.CheckGrad(t, lnGradBuild(c), graphtest.Options{})
			graphtest.CheckGrad32(t, lnGradBuild(c), graphtest.Options{})
		})
	}
}

// TestLayerNormErrors: bad input is an error from the constructor and
// from Do, never a panic.
func TestLayerNormErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	s32, _ := graph.NewScope(graph.Float32, 1)
	in := func(s *graph.Scope, name string, sh ...int) *G.Node {
		n, err := s.Input(name, tensor.Shape(sh))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	x, x1 := in(s, "x", 2, 3, 4), in(s, "x1", 4)
	sc, sc3, sc2 := in(s, "sc", 4), in(s, "sc3", 3), in(s, "sc2", 2, 4)
	x32 := in(s32, "x32", 2, 4)
	for _, tc := range []struct {
		name        string
		x, sc, bias *G.Node
		eps         float64
		want        string
	}{
		{"nil x", nil, sc, nil, 1e-5, "nil"},
		{"nil scale", x, nil, nil, 1e-5, "nil"},
		{"rank 1", x1, sc, nil, 1e-5, "rank >= 2"},
		{"scale width", x, sc3, nil, 1e-5, "want (4)"},
		{"scale rank", x, sc2, nil, 1e-5, "want (4)"},
		{"bias width", x, sc, sc3, 1e-5, "want (4)"},
		{"dtype", x32, in(s32, "sc32", 3), nil, 1e-5, "want (4)"},
		{"mixed dtype", x32, sc, nil, 1e-5, "dtype"},
		{"negative eps", x, sc, nil, -1, "eps"},
		{"NaN eps", x, sc, nil, math.NaN(), "eps"},
		{"Inf eps", x, sc, nil, math.Inf(1), "eps"},
	} {
		_, err := ops.LayerNorm(tc.x, tc.sc, tc.bias, tc.eps)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}

	// Do with values that do not fit.
	y, err := ops.LayerNorm(x, sc, sc, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	fwd := y.Op().(*ops.LayerNormOp)
	dense := func(sh ...int) G.Value {
		return tensor.New(tensor.WithShape(sh...), tensor.WithBacking(make([]float64, tensor.Shape(sh).TotalSize())))
	}
	dense32 := tensor.New(tensor.WithShape(2, 3, 4), tensor.WithBacking(make([]float32, 24)))
	xv, v4, v3 := dense(2, 3, 4), dense(4), dense(3)
	type doer interface {
		Do(...G.Value) (G.Value, error)
	}
	g := G.NewGraph()
	gx := G.NewTensor(g, tensor.Float64, 3, G.WithShape(2, 3, 4), G.WithName("gx"))
	gs := G.NewVector(g, tensor.Float64, G.WithShape(4), G.WithName("gs"))
	gy, err := ops.LayerNorm(gx, gs, nil, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := gy.Op().(G.SDOp).SymDiff(G.Nodes{gx, gx, gs}, gy, gx)
	if err != nil {
		t.Fatal(err)
	}
	gradOp, meanOp, paramOp := grads[0].Op().(doer), grads[1].Op().(doer), grads[2].Op().(doer)
	for _, tc := range []struct {
		name string
		op   doer
		in   []G.Value
	}{
		{"forward arity", fwd, []G.Value{xv, xv, v4}},
		{"forward scale", fwd, []G.Value{xv, xv, v3, v4}},
		{"forward bias", fwd, []G.Value{xv, xv, v4, v3}},
		{"forward second x", fwd, []G.Value{xv, dense(2, 4), v4, v4}},
		{"forward rank", fwd, []G.Value{v4, v4, v4, v4}},
		{"forward mixed dtype", fwd, []G.Value{dense32, dense32, v4, v4}},
		{"gradient dy", gradOp, []G.Value{xv, v4, dense(2, 4)}},
		{"gradient scale", gradOp, []G.Value{xv, v3, xv}},
		{"gradient dtype", gradOp, []G.Value{xv, v4, dense32}},
		{"mean gradient rank", meanOp, []G.Value{v4}},
		{"mean gradient arity", meanOp, []G.Value{xv, xv}},
		{"param gradient dy", paramOp, []G.Value{xv, dense(2, 4)}},
		{"param gradient x", paramOp, []G.Value{dense32, xv}},
	} {
		if _, err := tc.op.Do(tc.in...); err == nil {
			t.Errorf("%s: Do succeeded, want an error", tc.name)
		}
	}
}
