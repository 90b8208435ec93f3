package ops

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LayerNorm returns layer normalisation of x over its last axis,
//
//	y = (x − mean(x)) / sqrt(var(x) + eps) · scale + bias,
//
// with the biased variance (divisor D), for x of shape (..., D) and rank >=
// 2, scale of shape (D) and bias of shape (D) or nil (no bias). eps is
// used as given (converted to x's dtype); it must be finite and >= 0.
//
// The op computes, forward and backward, the same floating-point
// operations in the same order as the Gorgonia graph layers.LayerNorm
// composed before (Sum, divide by D, Neg, broadcast Add, Square, Sum,
// divide, Add eps, Sqrt, Inverse, broadcast products and sums, and the
// gradient graph G.Grad built from them), so its values are those of that
// graph bit for bit. One exception: for x of rank >= 4 that graph's scale
// and bias gradients were wrong (Gorgonia's sum along a middle axis, see
// docs/gorgonia-bugs.md); the op's are the sums over every row.
//
// x enters the node twice (inputs 0 and 1): the centring x − mean and the
// mean each pass a gradient to x, and Gorgonia sums the gradients a node
// receives in the order its readers are differentiated. Two inputs keep
// the two terms apart, so x's gradient is the same sum, in the same order,
// as in the composed graph, including when x has other readers (the
// residual stream of a transformer block).
func LayerNorm(x, scale, bias *G.Node, eps float64) (*G.Node, error) {
	if x == nil || scale == nil {
		return nil, fmt.Errorf("ops: layernorm: nil input or scale")
	}
	sh := x.Shape()
	if len(sh) < 2 || sh[len(sh)-1] < 1 || sh.TotalSize() < 1 {
		return nil, fmt.Errorf("ops: layernorm of %q: shape %v, want (..., D) of rank >= 2", x.Name(), sh)
	}
	if err := checkFloat(x.Dtype()); err != nil {
		return nil, fmt.Errorf("ops: layernorm of %q: %w", x.Name(), err)
	}
	d := sh[len(sh)-1]
	params := G.Nodes{scale}
	if bias != nil {
		params = append(params, bias)
	}
	for _, p := range params {
		if ps := p.Shape(); len(ps) != 1 || ps[0] != d {
			return nil, fmt.Errorf("ops: layernorm of %q: parameter %q has shape %v, want (%d)", x.Name(), p.Name(), ps, d)
		}
		if p.Dtype() != x.Dtype() {
			return nil, fmt.Errorf("ops: layernorm of %q: parameter %q has dtype %v, want %v", x.Name(), p.Name(), p.Dtype(), x.Dtype())
		}
	}
	if !(eps >= 0) || math.IsInf(eps, 1) {
		return nil, fmt.Errorf("ops: layernorm of %q: eps = %g, want a finite value >= 0", x.Name(), eps)
	}
	op := &LayerNormOp{eps: eps, bias: bias != nil, rank: len(sh)}
	return G.ApplyOp(op, append(G.Nodes{x, x}, params...)...)
}

// LayerNormOp is [LayerNorm]'s op: inputs (x, x, scale) or (x, x, scale,
// bias), output y of x's shape.
type LayerNormOp struct {
	eps  float64
	bias bool
	rank int
}

// Eps returns the ε added to the variance.
func (op *LayerNormOp) Eps() float64 { return op.eps }

// Bias reports whether the op has a bias input.
func (op *LayerNormOp) Bias() bool { return op.bias }

func (op *LayerNormOp) Arity() int {
	if op.bias {
		return 4
	}
	return 3
}
func (op *LayerNormOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	tx := &G.TensorType{Dims: op.rank, Of: a}
	t1 := &G.TensorType{Dims: 1, Of: a}
	ts := []hm.Type{tx, tx, t1}
	if op.bias {
		ts = append(ts, t1)
	}
	return hm.NewFnType(append(ts, tx)...)
}
func (op *LayerNormOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("ops: layernorm: cannot infer shape from %T", in[0])
	}
	return s.Clone(), nil
}
func (op *LayerNormOp) ReturnsPtr() bool     { return false }
func (op *LayerNormOp) CallsExtern() bool    { return false }
func (op *LayerNormOp) OverwritesInput() int { return -1 }
func (op *LayerNormOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.layernorm{eps=%v,bias=%v,rank=%d}", op.eps, op.bias, op.rank)
}
func (op *LayerNormOp) Hashcode() uint32 { return hashOf(op) }
func (op *LayerNormOp) String() string   { return fmt.Sprintf("LayerNorm{eps=%g}", op.eps) }

func (op *LayerNormOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *LayerNormOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) { return op.do(p, vals) }

func (op *LayerNormOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != op.Arity() {
		return nil, fmt.Errorf("ops: layernorm: %d inputs, want %d", len(vals), op.Arity())
	}
	shape, d, err := lnCheckRows("layernorm", vals[0])
	if err != nil {
		return nil, err
	}
	if !vals[1].Shape().Eq(shape) {
		return nil, fmt.Errorf("ops: layernorm: second x input has shape %v, want %v", vals[1].Shape(), shape)
	}
	switch x := denseData(vals[0]).(type) {
	case []float64:
		return lnForward(p, op, shape, d, x, vals[2:])
	case []float32:
		return lnForward(p, op, shape, d, x, vals[2:])
	}
	return nil, fmt.Errorf("ops: layernorm: unsupported data %T", vals[0].Data())
}

func lnForward[F float32 | float64](p G.Value, op *LayerNormOp, shape tensor.Shape, d int, x []F, params []G.Value) (G.Value, error) {
	scale, err := lnVector[F]("layernorm", "scale", params[0], d)
	if err != nil {
		return nil, err
	}
	var bias []F
	if op.bias {
		if bias, err = lnVector[F]("layernorm", "bias", params[1], d); err != nil {
			return nil, err
		}
	}
	out := outBuf[F](p, len(x), false)
	lnForwardRows(x, scale, bias, out, d, F(op.eps))
	return wrapOut(p, shape, out), nil
}

// lnStats returns the row's −mean, sqrt(var + eps) and its inverse as the
// composed graph computes them: Σ x (from 0, in index order) ÷ D, negated;
// Σ (x − mean)² the same way ÷ D, + eps, Sqrt, Inverse. The explicit
// conversions keep the compiler from fusing a product into an addition.
func lnStats[F float32 | float64](row []F, d, eps F) (negMean, sd, rstd F) {
	var s F
	for _, v := range row {
		s += v
	}
	negMean = -(s / d)
	var q F
	for _, v := range row {
		c := negMean + v
		q += F(c * c)
	}
	sd, rstd = lnFinish(q, d, eps)
	return negMean, sd, rstd
}

// lnFinish returns sqrt(q/D + eps) and its inverse.
func lnFinish[F float32 | float64](q, d, eps F) (sd, rstd F) {
	v := F(q/d) + eps
	sd = F(math.Sqrt(float64(v))) // correctly rounded in float32 too
	return sd, 1 / sd
}

// lnRowStats returns lnStats of every row of x. Four rows run at a time:
// each row's sums still add its elements one after the other in index
// order (the same bits), but four independent sums keep the adder busy.
func lnRowStats[F float32 | float64](x []F, d int, eps F) (negMean, sd, rstd []F) {
	n := len(x) / d
	buf := make([]F, 3*n)
	negMean, sd, rstd = buf[:n], buf[n:2*n], buf[2*n:]
	df := F(d)
	r := 0
	for ; r+4 <= n; r += 4 {
		a := x[r*d : (r+1)*d]
		b := x[(r+1)*d : (r+2)*d][:len(a)]
		c := x[(r+2)*d : (r+3)*d][:len(a)]
		e := x[(r+3)*d : (r+4)*d][:len(a)]
		var s0, s1, s2, s3 F
		for j, v := range a {
			s0 += v
			s1 += b[j]
			s2 += c[j]
			s3 += e[j]
		}
		m0, m1, m2, m3 := -(s0 / df), -(s1 / df), -(s2 / df), -(s3 / df)
		var q0, q1, q2, q3 F
		for j, v := range a {
			c0, c1, c2, c3 := m0+v, m1+b[j], m2+c[j], m3+e[j]
			q0 += F(c0 * c0)
			q1 += F(c1 * c1)
			q2 += F(c2 * c2)
			q3 += F(c3 * c3)
		}
		negMean[r], negMean[r+1], negMean[r+2], negMean[r+3] = m0, m1, m2, m3
		sd[r], rstd[r] = lnFinish(q0, df, eps)
		sd[r+1], rstd[r+1] = lnFinish(q1, df, eps)
		sd[r+2], rstd[r+2] = lnFinish(q2, df, eps)
		sd[r+3], rstd[r+3] = lnFinish(q3, df, eps)
	}
	for ; r < n; r++ {
		negMean[r], sd[r], rstd[r] = lnStats(x[r*d:(r+1)*d], df, eps)
	}
	return negMean, sd, rstd
}

// lnForwardRows writes y = ((x − mean)·rstd)·scale + bias row by row,
// each product rounded as the composed graph's broadcast products.
func lnForwardRows[F float32 | float64](x, scale, bias, out []F, d int, eps F) {
	negMeans, _, rstds := lnRowStats(x, d, eps)
	for i, negMean := range negMeans {
		row, o, rstd := x[i*d:(i+1)*d], out[i*d:(i+1)*d], rstds[i]
		if bias == nil {
			for j, v := range row {
				o[j] = F(F((negMean+v)*rstd) * scale[j])
			}
			continue
		}
		for j, v := range row {
			o[j] = F(F((negMean+v)*rstd)*scale[j]) + bias[j]
		}
	}
}

func (op *LayerNormOp) DiffWRT(inputs int) []bool {
	w := make([]bool, inputs)
	for i := range w {
		w[i] = true
	}
	return w
}

func (op *LayerNormOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != op.Arity() {
		return nil, fmt.Errorf("ops: layernorm: %d inputs, want %d", len(inputs), op.Arity())
	}
	x, scale := inputs[0], inputs[2]
	dxc, err := G.ApplyOp(&LayerNormGradOp{fwd: op}, x, scale, grad)
	if err != nil {
		return nil, err
	}
	dmean, err := G.ApplyOp(&LayerNormMeanGradOp{fwd: op}, dxc)
	if err != nil {
		return nil, err
	}
	dscale, err := G.ApplyOp(&LayerNormParamGradOp{fwd: op}, x, grad)
	if err != nil {
		return nil, err
	}
	grads := G.Nodes{dxc, dmean, dscale}
	if op.bias {
		dbias, err := G.ApplyOp(&LayerNormParamGradOp{fwd: op, bias: true}, grad)
		if err != nil {
			return nil, err
		}
		grads = append(grads, dbias)
	}
	return grads, nil
}

// LayerNormGradOp maps (x, scale, dy) to the gradient that reaches x
// through the centring x − mean (LayerNormOp's input 0): for each row,
// with c = x − mean, r = 1/s, s = sqrt(var + eps), ĝ = scale ⊙ dy,
//
//	dc = r·ĝ + (2c)·(((−r²)·Σ c ⊙ ĝ) / (2s) / D).
type LayerNormGradOp struct{ fwd *LayerNormOp }

// Forward returns the forward op.
func (op *LayerNormGradOp) Forward() *LayerNormOp { return op.fwd }

func (op *LayerNormGradOp) Arity() int { return 3 }
func (op *LayerNormGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	tx := &G.TensorType{Dims: op.fwd.rank, Of: a}
	t1 := &G.TensorType{Dims: 1, Of: a}
	return hm.NewFnType(tx, t1, tx, tx)
}
func (op *LayerNormGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("ops: layernorm gradient: cannot infer shape from %T", in[0])
	}
	return s.Clone(), nil
}
func (op *LayerNormGradOp) ReturnsPtr() bool     { return false }
func (op *LayerNormGradOp) CallsExtern() bool    { return false }
func (op *LayerNormGradOp) OverwritesInput() int { return -1 }
func (op *LayerNormGradOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.layernormgrad{eps=%v,rank=%d}", op.fwd.eps, op.fwd.rank)
}
func (op *LayerNormGradOp) Hashcode() uint32 { return hashOf(op) }
func (op *LayerNormGradOp) String() string   { return "LayerNormGrad" }

func (op *LayerNormGradOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *LayerNormGradOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) {
	return op.do(p, vals)
}

func (op *LayerNormGradOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 3 {
		return nil, fmt.Errorf("ops: layernorm gradient: %d inputs, want 3", len(vals))
	}
	shape, d, err := lnCheckRows("layernorm gradient", vals[0])
	if err != nil {
		return nil, err
	}
	if !vals[2].Shape().Eq(shape) {
		return nil, fmt.Errorf("ops: layernorm gradient: output gradient has shape %v, want %v", vals[2].Shape(), shape)
	}
	switch x := denseData(vals[0]).(type) {
	case []float64:
		return lnGrad(p, op.fwd.eps, shape, d, x, vals[1], vals[2])
	case []float32:
		return lnGrad(p, op.fwd.eps, shape, d, x, vals[1], vals[2])
	}
	return nil, fmt.Errorf("ops: layernorm gradient: unsupported data %T", vals[0].Data())
}

func lnGrad[F float32 | float64](p G.Value, eps float64, shape tensor.Shape, d int, x []F, scaleV, dyV G.Value) (G.Value, error) {
	scale, err := lnVector[F]("layernorm gradient", "scale", scaleV, d)
	if err != nil {
		return nil, err
	}
	dy, ok := denseData(dyV).([]F)
	if !ok || len(dy) != len(x) {
		return nil, fmt.Errorf("ops: layernorm gradient: output gradient %T of %d elements, want %d of x's dtype", dyV.Data(), len(dy), len(x))
	}
	out := outBuf[F](p, len(x), false)
	lnGradRows(x, scale, dy, out, d, F(eps))
	return wrapOut(p, shape, out), nil
}

// lnGradRows computes LayerNormGradOp's rows in the composed graph's
// operations: ĝ = scale·dy; Σ c·ĝ from 0; (−(r·r))·Σ; ÷ (2·s), where a
// zero divisor gives +Inf (Gorgonia's vector division); ÷ D; then
// r·ĝ + (c·2)·t.
func lnGradRows[F float32 | float64](x, scale, dy, out []F, d int, eps F) {
	df := F(d)
	negMeans, sds, rstds := lnRowStats(x, d, eps)
	n := len(negMeans)
	// dr[i] = Σ_j c·(scale·dy) of row i, four rows at a time (each sum in
	// index order)
	dr := make([]F, n)
	i := 0
	for ; i+4 <= n; i += 4 {
		x0 := x[i*d : (i+1)*d]
		x1, x2, x3 := x[(i+1)*d : (i+2)*d][:len(x0)], x[(i+2)*d : (i+3)*d][:len(x0)], x[(i+3)*d : (i+4)*d][:len(x0)]
		g0 := dy[i*d : (i+1)*d][:len(x0)]
		g1, g2, g3 := dy[(i+1)*d : (i+2)*d][:len(x0)], dy[(i+2)*d : (i+3)*d][:len(x0)], dy[(i+3)*d : (i+4)*d][:len(x0)]
		sc := scale[:len(x0)]
		m0, m1, m2, m3 := negMeans[i], negMeans[i+1], negMeans[i+2], negMeans[i+3]
		var d0, d1, d2, d3 F
		for j, v := range x0 {
			d0 += F((m0 + v) * F(sc[j]*g0[j]))
			d1 += F((m1 + x1[j]) * F(sc[j]*g1[j]))
			d2 += F((m2 + x2[j]) * F(sc[j]*g2[j]))
			d3 += F((m3 + x3[j]) * F(sc[j]*g3[j]))
		}
		dr[i], dr[i+1], dr[i+2], dr[i+3] = d0, d1, d2, d3
	}
	for ; i < n; i++ {
		row, g, negMean := x[i*d:(i+1)*d], dy[i*d:(i+1)*d], negMeans[i]
		var s F
		for j, v := range row {
			s += F((negMean + v) * F(scale[j]*g[j]))
		}
		dr[i] = s
	}
	for i, negMean := range negMeans {
		row, g, o := x[i*d:(i+1)*d], dy[i*d:(i+1)*d], out[i*d:(i+1)*d]
		rstd := rstds[i]
		b := F(-F(rstd*rstd) * dr[i])
		den := F(2 * sds[i])
		var dv F
		if den == 0 {
			dv = F(math.Inf(1))
		} else {
			dv = b / den
		}
		t := dv / df
		for j, v := range row {
			o[j] = F(rstd*F(scale[j]*g[j])) + F(F((negMean+v)*2)*t)
		}
	}
}

func (op *LayerNormGradOp) DiffWRT(inputs int) []bool { return make([]bool, inputs) }

func (op *LayerNormGradOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("ops: the layernorm gradient has no gradient of its own (second derivatives are unsupported)")
}

// LayerNormMeanGradOp maps the centring gradient dc (LayerNormGradOp's
// output) to the gradient that reaches x through the mean (LayerNormOp's
// input 1): every element of a row is −(Σ dc) / D, the sum from 0 in index
// order.
type LayerNormMeanGradOp struct{ fwd *LayerNormOp }

// Forward returns the forward op.
func (op *LayerNormMeanGradOp) Forward() *LayerNormOp { return op.fwd }

func (op *LayerNormMeanGradOp) Arity() int { return 1 }
func (op *LayerNormMeanGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	tx := &G.TensorType{Dims: op.fwd.rank, Of: a}
	return hm.NewFnType(tx, tx)
}
func (op *LayerNormMeanGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("ops: layernorm mean gradient: cannot infer shape from %T", in[0])
	}
	return s.Clone(), nil
}
func (op *LayerNormMeanGradOp) ReturnsPtr() bool     { return false }
func (op *LayerNormMeanGradOp) CallsExtern() bool    { return false }
func (op *LayerNormMeanGradOp) OverwritesInput() int { return -1 }
func (op *LayerNormMeanGradOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.layernormmeangrad{rank=%d}", op.fwd.rank)
}
func (op *LayerNormMeanGradOp) Hashcode() uint32 { return hashOf(op) }
func (op *LayerNormMeanGradOp) String() string   { return "LayerNormMeanGrad" }

func (op *LayerNormMeanGradOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *LayerNormMeanGradOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) {
	return op.do(p, vals)
}

func (op *LayerNormMeanGradOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 1 {
		return nil, fmt.Errorf("ops: layernorm mean gradient: %d inputs, want 1", len(vals))
	}
	shape, d, err := lnCheckRows("layernorm mean gradient", vals[0])
	if err != nil {
		return nil, err
	}
	switch dc := denseData(vals[0]).(type) {
	case []float64:
		out := outBuf[float64](p, len(dc), false)
		lnMeanGradRows(dc, out, d)
		return wrapOut(p, shape, out), nil
	case []float32:
		out := outBuf[float32](p, len(dc), false)
		lnMeanGradRows(dc, out, d)
		return wrapOut(p, shape, out), nil
	}
	return nil, fmt.Errorf("ops: layernorm mean gradient: unsupported data %T", vals[0].Data())
}

func lnMeanGradRows[F float32 | float64](dc, out []F, d int) {
	df := F(d)
	n := len(dc) / d
	fill := func(r int, s F) {
		u := -s / df
		o := out[r*d : (r+1)*d]
		for j := range o {
			o[j] = u
		}
	}
	r := 0
	for ; r+4 <= n; r += 4 {
		a := dc[r*d : (r+1)*d]
		b, c, e := dc[(r+1)*d : (r+2)*d][:len(a)], dc[(r+2)*d : (r+3)*d][:len(a)], dc[(r+3)*d : (r+4)*d][:len(a)]
		var s0, s1, s2, s3 F
		for j, v := range a {
			s0 += v
			s1 += b[j]
			s2 += c[j]
			s3 += e[j]
		}
		fill(r, s0)
		fill(r+1, s1)
		fill(r+2, s2)
		fill(r+3, s3)
	}
	for ; r < n; r++ {
		var s F
		for _, v := range dc[r*d : (r+1)*d] {
			s += v
		}
		fill(r, s)
	}
}

func (op *LayerNormMeanGradOp) DiffWRT(inputs int) []bool { return make([]bool, inputs) }

func (op *LayerNormMeanGradOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("ops: the layernorm mean gradient has no gradient of its own (second derivatives are unsupported)")
}

// LayerNormParamGradOp maps (x, dy) to the gradient of the scale,
// Σ_rows x̂ ⊙ dy with x̂ = (x − mean)·rstd, or with Bias (dy) to the
// gradient of the bias, Σ_rows dy. Rows are summed as Gorgonia sums the
// broadcast axes of the composed graph: the last leading axis first, each
// axis from its first element in index order.
type LayerNormParamGradOp struct {
	fwd  *LayerNormOp
	bias bool
}

// Forward returns the forward op.
func (op *LayerNormParamGradOp) Forward() *LayerNormOp { return op.fwd }

// Bias reports whether the op computes the bias gradient (else the scale's).
func (op *LayerNormParamGradOp) Bias() bool { return op.bias }

func (op *LayerNormParamGradOp) Arity() int {
	if op.bias {
		return 1
	}
	return 2
}
func (op *LayerNormParamGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	tx := &G.TensorType{Dims: op.fwd.rank, Of: a}
	t1 := &G.TensorType{Dims: 1, Of: a}
	if op.bias {
		return hm.NewFnType(tx, t1)
	}
	return hm.NewFnType(tx, tx, t1)
}
func (op *LayerNormParamGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok || len(s) == 0 {
		return nil, fmt.Errorf("ops: layernorm parameter gradient: cannot infer shape from %v", in[0])
	}
	return tensor.Shape{s[len(s)-1]}, nil
}
func (op *LayerNormParamGradOp) ReturnsPtr() bool     { return false }
func (op *LayerNormParamGradOp) CallsExtern() bool    { return false }
func (op *LayerNormParamGradOp) OverwritesInput() int { return -1 }
func (op *LayerNormParamGradOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.layernormparamgrad{eps=%v,rank=%d,bias=%v}", op.fwd.eps, op.fwd.rank, op.bias)
}
func (op *LayerNormParamGradOp) Hashcode() uint32 { return hashOf(op) }
func (op *LayerNormParamGradOp) String() string {
	if op.bias {
		return "LayerNormBiasGrad"
	}
	return "LayerNormScaleGrad"
}

func (op *LayerNormParamGradOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *LayerNormParamGradOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) {
	return op.do(p, vals)
}

func (op *LayerNormParamGradOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != op.Arity() {
		return nil, fmt.Errorf("ops: layernorm parameter gradient: %d inputs, want %d", len(vals), op.Arity())
	}
	shape, d, err := lnCheckRows("layernorm parameter gradient", vals[0])
	if err != nil {
		return nil, err
	}
	dyV := vals[len(vals)-1]
	if !dyV.Shape().Eq(shape) {
		return nil, fmt.Errorf("ops: layernorm parameter gradient: output gradient has shape %v, want %v", dyV.Shape(), shape)
	}
	switch dy := denseData(dyV).(type) {
	case []float64:
		return lnParamGrad(p, op, shape, d, dy, vals)
	case []float32:
		return lnParamGrad(p, op, shape, d, dy, vals)
	}
	return nil, fmt.Errorf("ops: layernorm parameter gradient: unsupported data %T", dyV.Data())
}

func lnParamGrad[F float32 | float64](p G.Value, op *LayerNormParamGradOp, shape tensor.Shape, d int, dy []F, vals []G.Value) (G.Value, error) {
	out := outBuf[F](p, d, false)
	lead := shape[:len(shape)-1]
	if op.bias {
		lnSumRows(out, lead, d, func(r int) []F { return dy[r*d : (r+1)*d] })
		return wrapOut(p, tensor.Shape{d}, out), nil
	}
	x, ok := denseData(vals[0]).([]F)
	if !ok || len(x) != len(dy) {
		return nil, fmt.Errorf("ops: layernorm parameter gradient: x %T does not match the output gradient", vals[0].Data())
	}
	negMeans, _, rstds := lnRowStats(x, d, F(op.fwd.eps))
	term := make([]F, d)
	lnSumRows(out, lead, d, func(r int) []F {
		// x̂ ⊙ dy for row r, x̂ = (x − mean)·rstd
		row, g := x[r*d:(r+1)*d], dy[r*d : (r+1)*d][:d]
		negMean, rstd := negMeans[r], rstds[r]
		t := term[:len(row)]
		for j, v := range row {
			t[j] = F(F((negMean+v)*rstd) * g[j])
		}
		return term
	})
	return wrapOut(p, tensor.Shape{d}, out), nil
}

// lnSumRows sums the rows row(0), row(1), ... of a tensor of shape
// (lead..., d) into out (d) as Gorgonia's chain of single-axis sums over
// the broadcast axes does: the last leading axis first, then the one
// before, each sum from its first element in index order. row's result is
// read before the next call.
func lnSumRows[F float32 | float64](out []F, lead tensor.Shape, d int, row func(r int) []F) {
	levels := len(lead)
	acc := make([][]F, levels) // acc[k]: the running sum over axis k
	acc[0] = out
	for k := 1; k < levels; k++ {
		acc[k] = make([]F, d)
	}
	idx := make([]int, levels)
	for r, n := 0, lead.TotalSize(); r < n; r++ {
		v, k := row(r), levels-1
		for {
			if idx[k] == 0 {
				copy(acc[k], v)
			} else {
				a := acc[k][:len(v)]
				for j, e := range v {
					a[j] += e
				}
			}
			idx[k]++
			if k == 0 || idx[k] < lead[k] {
				break
			}
			// axis k is summed: carry its sum into axis k−1
			idx[k] = 0
			v, k = acc[k], k-1
		}
	}
}

func (op *LayerNormParamGradOp) DiffWRT(inputs int) []bool { return make([]bool, inputs) }

func (op *LayerNormParamGradOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("ops: the layernorm parameter gradient has no gradient of its own (second derivatives are unsupported)")
}

// lnCheckRows returns the shape of a layer-norm tensor value and its last
// dimension, or an error unless it has rank >= 2 and elements.
func lnCheckRows(what string, v G.Value) (tensor.Shape, int, error) {
	if v == nil {
		return nil, 0, fmt.Errorf("ops: %s: nil input", what)
	}
	shape := v.Shape()
	if len(shape) < 2 || shape.TotalSize() < 1 {
		return nil, 0, fmt.Errorf("ops: %s: input of shape %v, want (..., D) of rank >= 2", what, shape)
	}
	return shape, shape[len(shape)-1], nil
}

// lnVector returns the data of a (d) parameter value of element type F.
func lnVector[F float32 | float64](what, name string, v G.Value, d int) ([]F, error) {
	if v == nil {
		return nil, fmt.Errorf("ops: %s: %s is nil", what, name)
	}
	data, ok := denseData(v).([]F)
	if !ok || len(data) != d || v.Shape().TotalSize() != d {
		return nil, fmt.Errorf("ops: %s: %s has shape %v and data %T, want (%d) of the input's dtype", what, name, v.Shape(), v.Data(), d)
	}
	return data, nil
}
