package ops

import (
	"fmt"
	"hash"
	"math"
	"sync/atomic"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// HeadOp is a whole kernel attention head with a dot-product kernel
// (linear, exp, softmax) and context or all keys, in one Gorgonia op:
//
//	out_j = Σ_i κ(z_j W_Q · z_i W_K) z_i W_V P
//
// Inputs: z (B, T, DIn), W_Q (DIn, DK), W_K (DIn, DK), W_V (DIn, DV),
// P (DV, DOut), then g (scalar) if LearnG. It computes the same function as
// a chain of nodes (projections, [KernelWeights], a batched product)
// rearranged: q_j·k_i = z_j A z_iᵀ with A = W_Q W_Kᵀ (DIn×DIn), and the
// values through U = W_V P (DIn×DOut), so that the token-sized products are
// one (B·T, DIn)×(DIn, DIn+DOut) matrix product forward and two backward,
// each with long rows. The backward pass is hand-written ([HeadGradOp] for
// z, [HeadParamGradOp] for the matrices and g).
//
// The op keeps its intermediate values (z[A U], the raw scores and the
// weights) between the forward and the backward pass of one run; the
// backward pass checks that they belong to the values it is given (the same
// z and output buffers, the same matrices and g) and recomputes them
// otherwise.
type HeadOp struct {
	kind   KernelKind
	gFixed float64
	learnG bool
	ctx    bool // ContextKeys: keys are the positions 0..T-2
	query  bool // the last position's output only (AttentionHeadQuery)
	// regroup: a query op's value side as (Σ_i w_i z_i)·U
	// (AttentionHeadQueryRegrouped).
	regroup bool
	id      uint64
	st      any // *headState[F] of the last forward run
}

var headOpIDs atomic.Uint64

// AttentionHead returns the output (B, T, DOut) of the kernel attention
// head out_j = Σ_i κ(z_j W_Q · z_i W_K) z_i W_V P for tokens z (B, T, DIn),
// W_Q and W_K (DIn, DK), W_V (DIn, DV) and P (DV, DOut), as one [HeadOp]
// node. kind must be a dot-product kernel (linear, exp, softmax); g is its
// parameter as a scalar node, or nil for the fixed gFixed. With
// contextKeys the keys are the positions 0..T-2 (every position, the last
// included, attends to the context) and T must be at least 2; otherwise
// all T positions are keys.
func AttentionHead(kind KernelKind, g *G.Node, gFixed float64, contextKeys bool, z, wq, wk, wv, p *G.Node) (*G.Node, error) {
	return attentionHead(kind, g, gFixed, contextKeys, false, false, z, wq, wk, wv, p)
}

func attentionHead(kind KernelKind, g *G.Node, gFixed float64, contextKeys, query, regroup bool, z, wq, wk, wv, p *G.Node) (*G.Node, error) {
	if !kind.DotProduct() {
		return nil, fmt.Errorf("ops: attention head: kernel %v is not a dot-product kernel (linear, exp, softmax)", kind)
	}
	in := []*G.Node{z, wq, wk, wv, p}
	for i, n := range in {
		if n == nil {
			return nil, fmt.Errorf("ops: attention head: input %d is nil", i)
		}
		if err := checkFloat(n.Dtype()); err != nil || n.Dtype() != z.Dtype() {
			return nil, fmt.Errorf("ops: attention head: input %q has dtype %v, want that of z (float32 or float64)", n.Name(), n.Dtype())
		}
	}
	zs, qs, ks, vs, ps := z.Shape(), wq.Shape(), wk.Shape(), wv.Shape(), p.Shape()
	if len(zs) != 3 || len(qs) != 2 || len(ks) != 2 || len(vs) != 2 || len(ps) != 2 ||
		qs[0] != zs[2] || ks[0] != zs[2] || vs[0] != zs[2] || qs[1] != ks[1] || ps[0] != vs[1] {
		return nil, fmt.Errorf("ops: attention head: shapes z %v, W_Q %v, W_K %v, W_V %v, P %v; want (B, T, DIn), (DIn, DK), (DIn, DK), (DIn, DV), (DV, DOut)", zs, qs, ks, vs, ps)
	}
	if contextKeys && zs[1] < 2 {
		return nil, fmt.Errorf("ops: attention head: T = %d positions leave no context key", zs[1])
	}
	if g != nil {
		if !g.IsScalar() || g.Dtype() != z.Dtype() {
			return nil, fmt.Errorf("ops: attention head: g %q (%v %v) must be a scalar of z's dtype", g.Name(), g.Dtype(), g.Shape())
		}
		in = append(in, g)
	} else if kind != KindLinear && !(gFixed > 0 && !math.IsInf(gFixed, 1)) {
		return nil, fmt.Errorf("ops: attention head: g = %v, want a finite positive value", gFixed)
	}
	op := &HeadOp{kind: kind, gFixed: gFixed, learnG: g != nil, ctx: contextKeys, query: query, regroup: regroup, id: headOpIDs.Add(1)}
	return G.ApplyOp(op, in...)
}

// AttentionHeadQuery returns the output (B, 1, DOut) of the attention head
// of [AttentionHead] with context keys at the last position (the query)
// only:
//
//	out_{T-1} = Σ_{i<T-1} κ(z_{T-1} W_Q · z_i W_K) z_i W_V P,
//
// for a model whose loss reads the query alone (the last layer of the
// in-context models). It computes one row of scores per sequence instead
// of T, and its backward pass the gradients that the full head's computes
// when dL/dout is zero at the context positions. The numbers are the same
// bits as the last row of [AttentionHead]'s output and as its gradients
// for such a dL/dout: every element is the same chain of multiply-adds,
// the context rows' zero terms left out.
func AttentionHeadQuery(kind KernelKind, g *G.Node, gFixed float64, z, wq, wk, wv, p *G.Node) (*G.Node, error) {
	return attentionHead(kind, g, gFixed, true, true, false, z, wq, wk, wv, p)
}

// AttentionHeadQueryRegrouped is [AttentionHeadQuery] with the value side
// regrouped: with U = W_V P and w_i the query's weights,
//
//	r = Σ_{i<T-1} w_i z_i (a DIn-vector per sequence),  out_{T-1} = r·U,
//
// and backward, with d = dL/dout and u = U·d (once per sequence),
// dU = Σ_b r_bᵀ d_b, dz_i += w_i u and dL/dw_i = z_i·u. The value side then
// costs O(B·T·DIn) instead of the O(B·T·DIn·DOut) of z·U at every
// position and its gradients. It is the same function, but the sums run
// in another order, so the numbers differ from AttentionHeadQuery's in the
// last bits (within the usual float64 and float32 tolerances): an option
// for speed, not the default of the models, whose outputs the examples'
// goldens pin.
func AttentionHeadQueryRegrouped(kind KernelKind, g *G.Node, gFixed float64, z, wq, wk, wv, p *G.Node) (*G.Node, error) {
	return attentionHead(kind, g, gFixed, true, true, true, z, wq, wk, wv, p)
}

// Kind is the head's kernel (linear, exp or softmax).
func (op *HeadOp) Kind() KernelKind { return op.kind }

// FixedG is the kernel parameter g held by the op; it is used only when
// LearnG is false.
func (op *HeadOp) FixedG() float64 { return op.gFixed }

// LearnG reports whether g is the op's sixth input (a scalar node).
func (op *HeadOp) LearnG() bool { return op.learnG }

// ContextKeys reports whether the keys are the positions 0..T-2 (else all
// T positions).
func (op *HeadOp) ContextKeys() bool { return op.ctx }

// QueryOnly reports whether the op computes the last position's output
// only, (B, 1, DOut) ([AttentionHeadQuery]).
func (op *HeadOp) QueryOnly() bool { return op.query }

// Regrouped reports whether a query op computes its value side as
// (Σ_i w_i z_i)·U ([AttentionHeadQueryRegrouped]).
func (op *HeadOp) Regrouped() bool { return op.regroup }

func (op *HeadOp) Arity() int {
	if op.learnG {
		return 6
	}
	return 5
}

func (op *HeadOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t2 := &G.TensorType{Dims: 2, Of: a}
	t3 := &G.TensorType{Dims: 3, Of: a}
	ts := []hm.Type{t3, t2, t2, t2, t2}
	if op.learnG {
		ts = append(ts, a)
	}
	return hm.NewFnType(append(ts, t3)...)
}

func (op *HeadOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	zs, ok1 := in[0].(tensor.Shape)
	ps, ok2 := in[4].(tensor.Shape)
	if !ok1 || !ok2 || len(zs) != 3 || len(ps) != 2 {
		return nil, fmt.Errorf("ops: attention head op: cannot infer shape from %v, %v", in[0], in[4])
	}
	if op.query {
		return tensor.Shape{zs[0], 1, ps[1]}, nil
	}
	return tensor.Shape{zs[0], zs[1], ps[1]}, nil
}
func (op *HeadOp) ReturnsPtr() bool     { return false }
func (op *HeadOp) CallsExtern() bool    { return false }
func (op *HeadOp) OverwritesInput() int { return -1 }
func (op *HeadOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.head#%d %d g=%v learn=%v ctx=%v query=%v regroup=%v", op.id, op.kind, op.gFixed, op.learnG, op.ctx, op.query, op.regroup)
}
func (op *HeadOp) Hashcode() uint32 { return hashOf(op) }
func (op *HeadOp) String() string {
	if op.regroup {
		return "AttentionHeadQueryRegrouped{" + op.kind.String() + "}"
	}
	if op.query {
		return "AttentionHeadQuery{" + op.kind.String() + "}"
	}
	return "AttentionHead{" + op.kind.String() + "}"
}

func (op *HeadOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	for i := range d {
		d[i] = true
	}
	return d
}

// SymDiff returns dz from one HeadGradOp node, and the gradients of the
// matrices and g from HeadParamGradOp nodes that read what that node
// computed (they take dz as an input so that they run after it).
func (op *HeadOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	in := append(append(G.Nodes{}, inputs...), output, grad)
	dz, err := G.ApplyOp(&HeadGradOp{head: op}, in...)
	if err != nil {
		return nil, err
	}
	out := G.Nodes{dz}
	for w := 1; w < len(inputs); w++ {
		n, err := G.ApplyOp(&HeadParamGradOp{head: op, wrt: w}, append(append(G.Nodes{}, in...), dz)...)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// headDims are the sizes of one evaluation; rows is the number of output
// rows per sequence (T, or 1 for a query op).
type headDims struct {
	b, t, tk, din, dk, dv, dout, rows int
	g                                 float64
}

// dimsOf reads and checks the sizes from the forward inputs.
func (op *HeadOp) dimsOf(vals []G.Value) (headDims, error) {
	if len(vals) < op.Arity() {
		return headDims{}, fmt.Errorf("ops: attention head op: %d inputs, want %d", len(vals), op.Arity())
	}
	zs, qs, ks, vs, ps := vals[0].Shape(), vals[1].Shape(), vals[2].Shape(), vals[3].Shape(), vals[4].Shape()
	if len(zs) != 3 || len(qs) != 2 || len(ks) != 2 || len(vs) != 2 || len(ps) != 2 ||
		qs[0] != zs[2] || ks[0] != zs[2] || vs[0] != zs[2] || qs[1] != ks[1] || ps[0] != vs[1] {
		return headDims{}, fmt.Errorf("ops: attention head op: shapes %v %v %v %v %v", zs, qs, ks, vs, ps)
	}
	d := headDims{b: zs[0], t: zs[1], tk: zs[1], din: zs[2], dk: qs[1], dv: vs[1], dout: ps[1], rows: zs[1], g: op.gFixed}
	if op.ctx {
		d.tk--
	}
	if op.query {
		d.rows = 1
	}
	if d.tk < 1 {
		return headDims{}, fmt.Errorf("ops: attention head op: %d positions leave no key", d.t)
	}
	if op.learnG {
		switch v := vals[5].Data().(type) {
		case float64:
			d.g = v
		case float32:
			d.g = float64(v)
		default:
			return headDims{}, fmt.Errorf("ops: attention head op: g has type %T", vals[5].Data())
		}
	}
	return d, nil
}

// headInputs are the forward inputs' data.
type headInputs[F float32 | float64] struct {
	z, wq, wk, wv, wo []F
}

func inputsOf[F float32 | float64](vals []G.Value) (headInputs[F], error) {
	var in headInputs[F]
	ptrs := []*[]F{&in.z, &in.wq, &in.wk, &in.wv, &in.wo}
	for i, p := range ptrs {
		s, ok := vals[i].Data().([]F)
		if !ok {
			return in, fmt.Errorf("ops: attention head op: input %d has data %T, mixed dtypes", i, vals[i].Data())
		}
		*p = s
	}
	return in, nil
}

// headState holds one forward run's intermediate values and what they were
// computed from.
type headState[F float32 | float64] struct {
	dims headDims
	// h = [A | U] (DIn, DIn+DOut); zh = z h (B·T, DIn+DOut): z_j A in the
	// first DIn columns, z_j U in the others.
	h, zh []F
	// s are the raw scores z_j A z_iᵀ and w the weights (B, T, Tk).
	s, w []F
	// What the values were computed from: the z and output buffers and
	// copies of the matrices.
	z, out         *F
	wq, wk, wv, wo []F
	valid          bool
	// Backward scratch and results: dL/dw and dL/ds of one sequence
	// (T, Tk), [dL/d(zA) | dL/d(zU)] (B·T, DIn+DOut), zᵀ times that
	// ([dA | dU]), the matrices' gradients and dg, and the dz buffer they
	// go with; bt is one sequence's right factor transposed (seqGemmT),
	// or a block's (headForwardSeqs, headBackwardSeqs), and tail their
	// scratch (mulAddRowsSeqs).
	dw, dsb, bt, tail  []F
	gb, dh             []F
	dwq, dwk, dwv, dwo []F
	dg                 float64
	dz                 *F
	gradValid          bool
	// A regrouped query op's values (B, DIn) each: pq = z_q A, r = Σ_i
	// w_i z_i, and backward u = U·d and dpq = dL/d(z_q A); dots is the
	// float64 scratch of keyDots (Tk).
	pq, r, u, dpq []F
	dots          []float64
}

func stateOf[F float32 | float64](p *any) *headState[F] {
	if st, ok := (*p).(*headState[F]); ok {
		return st
	}
	st := &headState[F]{}
	*p = st
	return st
}

func (op *HeadOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *HeadOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) { return op.do(p, vals) }

func (op *HeadOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	d, err := op.dimsOf(vals)
	if err != nil {
		return nil, err
	}
	shape := tensor.Shape{d.b, d.rows, d.dout}
	switch vals[0].Data().(type) {
	case []float64:
		in, err := inputsOf[float64](vals)
		if err != nil {
			return nil, err
		}
		out := outBuf[float64](p, d.b*d.rows*d.dout, op.query) // the full head writes every element
		headForward(op, stateOf[float64](&op.st), d, in, out)
		return wrapOut(p, shape, out), nil
	case []float32:
		in, err := inputsOf[float32](vals)
		if err != nil {
			return nil, err
		}
		out := outBuf[float32](p, d.b*d.rows*d.dout, op.query)
		headForward(op, stateOf[float32](&op.st), d, in, out)
		return wrapOut(p, shape, out), nil
	}
	return nil, fmt.Errorf("ops: attention head op: unsupported data %T", vals[0].Data())
}

// headForward computes the head output into out (zeroed for a query op;
// the full head writes every element) and keeps the intermediate values in
// st.
func headForward[F float32 | float64](op *HeadOp, st *headState[F], d headDims, in headInputs[F], out []F) {
	B, T, Tk, Din, Dout := d.b, d.t, d.tk, d.din, d.dout
	nh := Din + Dout
	st.dims = d
	st.valid = false
	st.gradValid = false
	headMatrices(st, d, in)
	if op.regroup {
		headForwardRegrouped(op, st, d, in, out)
		st.keep(in, out)
		return
	}
	if op.query {
		headForwardQuery(op, st, d, in, out)
		st.keep(in, out)
		return
	}
	M := B * T
	st.zh = grow(st.zh, M*nh)
	tokenGemm(false, M, nh, Din, in.z, Din, st.h, nh, 0, st.zh, nh)
	st.s = grow(st.s, M*Tk)
	st.w = grow(st.w, M*Tk)
	if headSeqsOK(d) {
		headForwardSeqs(op, st, d, in, out)
	} else {
		headForwardLoop(op, st, d, in, out)
	}
	st.keep(in, out)
}

// headForwardLoop is the per-sequence part of headForward (the scores, the
// weights and the values) a sequence at a time. st.zh must hold z[A U].
func headForwardLoop[F float32 | float64](op *HeadOp, st *headState[F], d headDims, in headInputs[F], out []F) {
	B, T, Tk, Din, Dout := d.b, d.t, d.tk, d.din, d.dout
	nh := Din + Dout
	g := F(d.g)
	for b := 0; b < B; b++ {
		zb := in.z[b*T*Din : (b+1)*T*Din]
		hb := st.zh[b*T*nh : (b+1)*T*nh]
		// The sequence's products over all its queries at once (Gemm for
		// the scores, Tk columns wide; mulAddRows for the narrow output:
		// the same chains as a row at a time, rows side by side), the
		// weights row by row in between; s and w of one sequence stay in
		// cache from one to the next.
		sb, wb := st.s[b*T*Tk:(b+1)*T*Tk], st.w[b*T*Tk:(b+1)*T*Tk]
		st.bt = seqGemmT(T, Tk, Din, hb, nh, zb, Din, sb, st.bt) // s_ji = P_j·z_i
		kernelRows(op.kind, g, sb, wb, T, Tk)
		mulAddRows(T, Dout, Tk, wb, Tk, 1, hb[Din:], nh, out[b*T*Dout:], Dout, false) // out_j = Σ_i w_ji Vu_i
	}
}

// keep records what the forward values were computed from.
func (st *headState[F]) keep(in headInputs[F], out []F) {
	st.z, st.out = &in.z[0], &out[0]
	st.wq = append(st.wq[:0], in.wq...)
	st.wk = append(st.wk[:0], in.wk...)
	st.wv = append(st.wv[:0], in.wv...)
	st.wo = append(st.wo[:0], in.wo...)
	st.valid = true
}

// headForwardQuery is headForward for a query op: out (B, DOut) is the last
// position's output. z U is computed for every position (the values; the
// query's is unused) and z A for the query only; each element is the same
// chain as the full head's (z h, one product, computes both for every
// position).
func headForwardQuery[F float32 | float64](op *HeadOp, st *headState[F], d headDims, in headInputs[F], out []F) {
	B, T, Tk, Din, Dout := d.b, d.t, d.tk, d.din, d.dout
	nh := Din + Dout
	M := B * T
	q := T - 1
	st.zh = grow(st.zh, M*nh)
	tokenGemm(false, M, Dout, Din, in.z, Din, st.h[Din:], nh, 0, st.zh[Din:], nh)       // z U, every position
	tokenGemm(false, B, Din, Din, in.z[q*Din:], T*Din, st.h, nh, 0, st.zh[q*nh:], T*nh) // z A, the queries
	st.s = grow(st.s, B*Tk)
	st.w = grow(st.w, B*Tk)
	g := F(d.g)
	for b := 0; b < B; b++ {
		zb := in.z[b*T*Din : (b+1)*T*Din]
		hb := st.zh[b*T*nh : (b+1)*T*nh]
		Gemm(false, true, 1, Tk, Din, 1, hb[q*nh:], nh, zb, Din, 0, st.s[b*Tk:(b+1)*Tk], Tk) // s_i = P_q·z_i
	}
	kernelRows(op.kind, g, st.s, st.w, B, Tk) // every sequence's weights at once
	for b := 0; b < B; b++ {
		hb := st.zh[b*T*nh : (b+1)*T*nh]
		mulAddRows(1, Dout, Tk, st.w[b*Tk:(b+1)*Tk], Tk, 1, hb[Din:], nh, out[b*Dout:], Dout, false) // out_q = Σ_i w_i Vu_i
	}
}

// headForwardRegrouped is headForwardQuery with the value side regrouped
// (AttentionHeadQueryRegrouped): the scores s_i = (z_q A)·z_i, the weights,
// r = Σ_i w_i z_i per sequence, then out = r U for all sequences at once.
func headForwardRegrouped[F float32 | float64](op *HeadOp, st *headState[F], d headDims, in headInputs[F], out []F) {
	B, T, Tk, Din, Dout := d.b, d.t, d.tk, d.din, d.dout
	nh := Din + Dout
	q := T - 1
	st.pq = grow(st.pq, B*Din)
	st.r = grow(st.r, B*Din)
	tokenGemm(false, B, Din, Din, in.z[q*Din:], T*Din, st.h, nh, 0, st.pq, Din) // z A, the queries
	st.s = grow(st.s, B*Tk)
	st.w = grow(st.w, B*Tk)
	g := F(d.g)
	for b := 0; b < B; b++ {
		zb := in.z[b*T*Din : (b+1)*T*Din]
		st.dots = rowsDot(st.pq[b*Din:(b+1)*Din], zb, st.s[b*Tk:(b+1)*Tk], st.dots) // s_i = P_q·z_i
	}
	kernelRows(op.kind, g, st.s, st.w, B, Tk) // every sequence's weights at once
	for b := 0; b < B; b++ {
		zb := in.z[b*T*Din : (b+1)*T*Din]
		mulAddRows(1, Din, Tk, st.w[b*Tk:(b+1)*Tk], Tk, 1, zb, Din, st.r[b*Din:], Din, false) // r = Σ_i w_i z_i
	}
	tokenGemm(false, B, Dout, Din, st.r, Din, st.h[Din:], nh, 0, out, Dout) // out = r U
}

// headMatrices sets st.h = [W_Q W_Kᵀ | W_V P] (DIn, DIn+DOut).
func headMatrices[F float32 | float64](st *headState[F], d headDims, in headInputs[F]) {
	Din, Dout := d.din, d.dout
	nh := Din + Dout
	st.h = grow(st.h, Din*nh)
	for r := 0; r < Din; r++ {
		row := st.h[r*nh : (r+1)*nh]
		qr := in.wq[r*d.dk : (r+1)*d.dk]
		for c := 0; c < Din; c++ {
			row[c] = dotF(qr, in.wk[c*d.dk:(c+1)*d.dk])
		}
		u := row[Din:]
		clear(u)
		vr := in.wv[r*d.dv : (r+1)*d.dv]
		for l, v := range vr {
			axpyF(v, in.wo[l*Dout:(l+1)*Dout], u)
		}
	}
}

// kernelRow maps raw scores s to the weights w of one query.
func kernelRow[F float32 | float64](kind KernelKind, g F, s, w []F) {
	switch kind {
	case KindLinear:
		copy(w, s)
	case KindExp:
		if s32, ok := any(s).([]float32); ok {
			expRowFast32(any(w).([]float32), s32, float32(g), 0)
			return
		}
		for i, v := range s {
			w[i] = F(math.Exp(float64(g * v)))
		}
	case KindSoftmax:
		var sum float64
		if s32, ok := any(s).([]float32); ok {
			g32 := float32(g)
			sum = expRowFast32(any(w).([]float32), s32, g32, maxScaledF32(s32, g32))
		} else {
			mx := g * s[0]
			for _, v := range s[1:] {
				if g*v > mx {
					mx = g * v
				}
			}
			for i, v := range s {
				e := math.Exp(float64(g*v - mx))
				w[i] = F(e)
				sum += e
			}
		}
		scaleRowF(w, 1/sum)
	}
}

// kernelRows maps rows rows of n raw scores s (rows n apart) to their
// weights w, kernelRow row by row; float32 softmax rows run softmaxRows32
// (the same instructions, so the same bits) where the CPU allows, without
// a call per row.
func kernelRows[F float32 | float64](kind KernelKind, g F, s, w []F, rows, n int) {
	j := 0
	if s32, ok := any(s).([]float32); ok && kind == KindSoftmax && haveSoftmaxRows && rows > 0 && n > 0 {
		w32 := any(w).([]float32)
		_, _ = s32[rows*n-1], w32[rows*n-1]
		for j < rows {
			j += softmaxRows32(&w32[j*n], &s32[j*n], rows-j, n, float32(g))
			if j < rows { // a row with an argument above exp8Hi or NaN
				kernelRow(kind, g, s[j*n:(j+1)*n], w[j*n:(j+1)*n])
				j++
			}
		}
		return
	}
	for ; j < rows; j++ {
		kernelRow(kind, g, s[j*n:(j+1)*n], w[j*n:(j+1)*n])
	}
}

// matches reports whether st holds the forward values of these inputs.
func (st *headState[F]) matches(d headDims, in headInputs[F], out []F) bool {
	return st.valid && st.dims == d && len(out) > 0 && st.z == &in.z[0] && st.out == &out[0] &&
		equalF(st.wq, in.wq) && equalF(st.wk, in.wk) && equalF(st.wv, in.wv) && equalF(st.wo, in.wo)
}

func equalF[F float32 | float64](a, b []F) bool {
	if len(a) != len(b) {
		return false
	}
	for i, v := range a {
		if b[i] != v {
			return false
		}
	}
	return true
}

// headBackward computes dz (written into dz, zeroed), and the gradients of
// the matrices and g (kept in st), from dout = dL/dout.
func headBackward[F float32 | float64](op *HeadOp, st *headState[F], d headDims, in headInputs[F], out, dout, dz []F) {
	if !st.matches(d, in, out) {
		headForward(op, st, d, in, make([]F, len(out)))
		st.out = &out[0]
	}
	if op.regroup {
		headBackwardRegrouped(op, st, d, in, dout, dz)
		return
	}
	if op.query {
		headBackwardQuery(op, st, d, in, dout, dz)
		return
	}
	B, T, Tk, Din, Dout := d.b, d.t, d.tk, d.din, d.dout
	nh := Din + Dout
	M := B * T
	// gb = [dP | dVu] (B·T, DIn+DOut): dL/d(z A) and dL/d(z U). The
	// products below store every element of it but dVu at the positions
	// that are no key (the query, with context keys), which are zero.
	st.gb = grow(st.gb, M*nh)
	gb := st.gb
	for b := 0; b < B; b++ {
		clear(gb[(b*T+Tk)*nh : (b+1)*T*nh])
	}
	var dg float64
	if headSeqsOK(d) {
		dg = headBackwardSeqs(op, st, d, in, dout, dz)
	} else {
		dg = headBackwardLoop(op, st, d, in, dout, dz)
	}
	// dz += gb hᵀ.
	tokenGemm(true, M, Din, nh, gb, nh, st.h, nh, 1, dz, Din)
	headParamGrads(st, d, in, dg, dz)
}

// headBackwardLoop is the per-sequence part of headBackward (dL/dw, the
// score gradients and dg, dVu and dP into st.gb, dZc into dz) a sequence at
// a time. It returns dg.
func headBackwardLoop[F float32 | float64](op *HeadOp, st *headState[F], d headDims, in headInputs[F], dout, dz []F) float64 {
	B, T, Tk, Din, Dout := d.b, d.t, d.tk, d.din, d.dout
	nh := Din + Dout
	g := F(d.g)
	gb := st.gb
	st.dw = grow(st.dw, T*Tk)
	dwb := st.dw
	st.dsb = grow(st.dsb, T*Tk)
	dsb := st.dsb
	var dg float64
	var rsb []F
	if op.kind == KindSoftmax {
		rsb = make([]F, T)
	}
	for b := 0; b < B; b++ {
		zb := in.z[b*T*Din : (b+1)*T*Din]
		hb := st.zh[b*T*nh : (b+1)*T*nh]
		gbb := gb[b*T*nh : (b+1)*T*nh]
		dzb := dz[b*T*Din : (b+1)*T*Din]
		db := dout[b*T*Dout : (b+1)*T*Dout]
		wb := st.w[b*T*Tk : (b+1)*T*Tk]
		st.bt = seqGemmT(T, Tk, Dout, db, Dout, hb[Din:], nh, dwb, st.bt) // dw_ji = d_j·Vu_i
		if op.kind == KindSoftmax {
			rowDots(rsb, wb, dwb, T, Tk) // rs_j = Σ_i w_ji dw_ji
		}
		for j := 0; j < T; j++ {
			o := (b*T + j) * Tk
			srow, wrow := st.s[o:o+Tk], st.w[o:o+Tk]
			dw := dwb[j*Tk : (j+1)*Tk]
			ds := dsb[j*Tk : (j+1)*Tk]
			dg = rowScoreGrads(op.kind, ds, wrow, dw, srow, rsb, j, g, dg)
		}
		// The sequence's products (mulAddRows, rows side by side):
		// dVu = wᵀ dout, dP = ds Zc (into gb), dZc += dsᵀ P.
		mulAddRows(Tk, Dout, T, wb, 1, Tk, db, Dout, gbb[Din:], nh, false)
		mulAddRows(Tk, Din, T, dsb, 1, Tk, hb, nh, dzb, Din, true)
		mulAddRows(T, Din, Tk, dsb, Tk, 1, zb, Din, gbb, nh, false)
	}
	return dg
}

// headBackwardQuery is headBackward for a query op, dout (B, DOut) the
// gradient of the last position's output. It computes what headBackward
// computes for a dL/dout that is zero at the context positions, leaving
// out the products of zeros: gb's context rows hold dVu only and its query
// rows dP only, so dz += gb hᵀ is two products over the nonzero blocks
// (the same chains, whose other terms are zero), and so is dh = zᵀ gb
// (headParamGrads).
func headBackwardQuery[F float32 | float64](op *HeadOp, st *headState[F], d headDims, in headInputs[F], dout, dz []F) {
	B, T, Tk, Din, Dout := d.b, d.t, d.tk, d.din, d.dout
	nh := Din + Dout
	M := B * T
	q := T - 1
	g := F(d.g)
	st.gb = grow(st.gb, M*nh)
	gb := st.gb
	clear(gb)
	st.dw = grow(st.dw, Tk)
	dw := st.dw
	st.dsb = grow(st.dsb, Tk)
	ds := st.dsb
	var dg float64
	for b := 0; b < B; b++ {
		zb := in.z[b*T*Din : (b+1)*T*Din]
		hb := st.zh[b*T*nh : (b+1)*T*nh]
		gbb := gb[b*T*nh : (b+1)*T*nh]
		dzb := dz[b*T*Din : (b+1)*T*Din]
		db := dout[b*Dout : (b+1)*Dout]
		srow, wrow := st.s[b*Tk:(b+1)*Tk], st.w[b*Tk:(b+1)*Tk]
		Gemm(false, true, 1, Tk, Dout, 1, db, Dout, hb[Din:], nh, 0, dw, Tk) // dw_i = d·Vu_i
		dg = scoreGrads(op.kind, g, ds, wrow, dw, srow, dg)
		// dVu_i = w_i d (into gb), dZc_i += ds_i P_q, dP_q = ds Zc.
		mulAddRows(Tk, Dout, 1, wrow, 1, 1, db, Dout, gbb[Din:], nh, false)
		mulAddRows(Tk, Din, 1, ds, 1, 1, hb[q*nh:], nh, dzb, Din, true)
		mulAddRows(1, Din, Tk, ds, Tk, 1, zb, Din, gbb[q*nh:], nh, false)
	}
	// dz += gb hᵀ: the dVu columns at every position (zero at the
	// queries), then the dP columns at the queries.
	tokenGemm(true, M, Din, Dout, gb[Din:], nh, st.h[Din:], nh, 1, dz, Din)
	tokenGemm(true, B, Din, Din, gb[q*nh:], T*nh, st.h, nh, 1, dz[q*Din:], T*Din)
	headParamGrads(st, d, in, dg, dz)
}

// headBackwardRegrouped is headBackwardQuery for a regrouped op
// (AttentionHeadQueryRegrouped): with u = U d per sequence, dL/dw_i =
// z_i·u, dz_i += w_i u + ds_i P_q for the keys, dP_q = Σ_i ds_i z_i and
// dz_q = dP_q Aᵀ; dA = z_qᵀ dP_q and dU = rᵀ d over the sequences. It
// writes every element of dz, whatever dz held before.
func headBackwardRegrouped[F float32 | float64](op *HeadOp, st *headState[F], d headDims, in headInputs[F], dout, dz []F) {
	B, T, Tk, Din, Dout := d.b, d.t, d.tk, d.din, d.dout
	nh := Din + Dout
	q := T - 1
	g := F(d.g)
	st.u = grow(st.u, B*Din)
	st.dpq = grow(st.dpq, B*Din)
	tokenGemm(true, B, Din, Dout, dout, Dout, st.h[Din:], nh, 0, st.u, Din) // u = U d
	// wd = [w | ds] (2, Tk) and up = [u | P_q] (2, DIn) of each sequence
	// of a block of headSeqBlock: the context rows' dz is the one product
	// wdᵀ up, run for the whole block by mulAddRowsSeqs (the same chains
	// as mulAddRows a sequence at a time, one kernel call per row group
	// for all of them).
	nbMax := min(B, headSeqBlock)
	st.dsb = grow(st.dsb, nbMax*2*Tk)
	st.dw = grow(st.dw, Tk+nbMax*2*Din)
	dw, upB := st.dw[:Tk], st.dw[Tk:]
	var dg float64
	for b0 := 0; b0 < B; b0 += headSeqBlock {
		nb := min(headSeqBlock, B-b0)
		for i := 0; i < nb; i++ {
			b := b0 + i
			zb := in.z[b*T*Din : (b+1)*T*Din]
			ub := st.u[b*Din : (b+1)*Din]
			srow, wrow := st.s[b*Tk:(b+1)*Tk], st.w[b*Tk:(b+1)*Tk]
			wd, up := st.dsb[i*2*Tk:(i+1)*2*Tk], upB[i*2*Din:(i+1)*2*Din]
			ds := wd[Tk:]
			st.dots = rowsDot(ub, zb, dw, st.dots) // dw_i = z_i·u
			dg = scoreGrads(op.kind, g, ds, wrow, dw, srow, dg)
			copy(wd[:Tk], wrow)
			copy(up[:Din], ub)
			copy(up[Din:], st.pq[b*Din:(b+1)*Din])
			// dP_q = ds Zc.
			mulAddRows(1, Din, Tk, ds, Tk, 1, zb, Din, st.dpq[b*Din:], Din, false)
		}
		// dZc_i = w_i u + ds_i P_q (dz is zero there).
		st.tail = mulAddRowsSeqs(nb, Tk, Din, 2, st.dsb, 1, Tk, 2*Tk, upB, Din, 2*Din, dz[b0*T*Din:], Din, T*Din, false, st.tail)
	}
	// dz_q = dP_q Aᵀ (the query is no key): with the context rows above,
	// every element of dz is written, so dz need not be zeroed first.
	tokenGemm(true, B, Din, Din, st.dpq, Din, st.h, nh, 0, dz[q*Din:], T*Din)
	// dh = [dA | dU] = [z_qᵀ dP_q | rᵀ d].
	st.dh = grow(st.dh, Din*nh)
	gemm(true, false, Din, Din, B, in.z[q*Din:], T*Din, st.dpq, Din, 0, st.dh, nh)
	gemm(true, false, Din, Dout, B, st.r, Din, dout, Dout, 0, st.dh[Din:], nh)
	matrixGrads(st, d, in, dg, dz)
}

// rowsDot sets out[i] = q·k_i for the first len(out) rows k_i of k (rows
// of len(q)): for float32 each summed in float64 (keyDots: sixteen rows at
// a time in AVX2) and rounded once, with dots the float64 scratch (grown
// and returned); for float64 one product through Gemm.
func rowsDot[F float32 | float64](q, k, out []F, dots []float64) []float64 {
	d := len(q)
	if !is32[F]() {
		Gemm(false, true, 1, len(out), d, 1, q, d, k, d, 0, out, len(out))
		return dots
	}
	dots = grow(dots, len(out))
	keyDots(q, k[:len(out)*len(q)], len(q), nil, dots)
	for i, v := range dots {
		out[i] = F(v)
	}
	return dots
}

// scoreGrads sets ds, the gradients of one query's raw scores s from those
// of its weights w (dw), and returns dg plus the row's share of dL/dg
// (added term by term, in the order of the rows before it).
func scoreGrads[F float32 | float64](kind KernelKind, g F, ds, w, dw, s []F, dg float64) float64 {
	switch kind {
	case KindLinear:
		copy(ds, dw)
	case KindExp:
		for i, wi := range w {
			e := wi * dw[i]
			ds[i] = g * e
			dg += float64(e) * float64(s[i])
		}
	case KindSoftmax:
		var rs [1]F
		rowDots(rs[:], w, dw, 1, len(w)) // rs = Σ_i w_i dw_i
		dg += softmaxDS(ds, w, dw, s, rs[0], g)
	}
	return dg
}

// headParamGrads computes dh = zᵀ gb = [dA | dU] and from it the matrices'
// gradients, and records dg and the dz buffer they go with.
func headParamGrads[F float32 | float64](st *headState[F], d headDims, in headInputs[F], dg float64, dz []F) {
	Din, Dout := d.din, d.dout
	nh := Din + Dout
	M := d.b * d.t
	gb := st.gb
	st.dh = grow(st.dh, Din*nh)
	dh := st.dh
	if d.rows == 1 {
		// A query op's gb holds dP at the queries only: dA = z_qᵀ dP_q
		// over those rows, dU = zᵀ dU over every row (zero at the
		// queries); each element the chain over k of the full product
		// less its zero terms.
		q := d.t - 1
		gemm(true, false, Din, Din, d.b, in.z[q*Din:], d.t*Din, gb[q*nh:], d.t*nh, 0, dh, nh)
		gemm(true, false, Din, Dout, M, in.z, Din, gb[Din:], nh, 0, dh[Din:], nh)
	} else {
		gemm(true, false, Din, nh, M, in.z, Din, gb, nh, 0, dh, nh)
	}
	matrixGrads(st, d, in, dg, dz)
}

// matrixGrads computes the matrices' gradients from dh = [dA | dU], and
// records dg and the dz buffer they go with.
func matrixGrads[F float32 | float64](st *headState[F], d headDims, in headInputs[F], dg float64, dz []F) {
	Din, Dout := d.din, d.dout
	nh := Din + Dout
	dh := st.dh
	// dW_Q = dA W_K, dW_K = dAᵀ W_Q, dW_V = dU Pᵀ, dP = W_Vᵀ dU.
	st.dwq = grow(st.dwq, Din*d.dk)
	st.dwk = grow(st.dwk, Din*d.dk)
	st.dwv = grow(st.dwv, Din*d.dv)
	st.dwo = grow(st.dwo, d.dv*Dout)
	clear(st.dwq)
	clear(st.dwk)
	clear(st.dwo)
	for r := 0; r < Din; r++ {
		da := dh[r*nh : r*nh+Din]
		du := dh[r*nh+Din : (r+1)*nh]
		qrow := st.dwq[r*d.dk : (r+1)*d.dk]
		for c, v := range da {
			axpyF(v, in.wk[c*d.dk:(c+1)*d.dk], qrow)                      // dW_Q[r] += dA[r,c] W_K[c]
			axpyF(v, in.wq[r*d.dk:(r+1)*d.dk], st.dwk[c*d.dk:(c+1)*d.dk]) // dW_K[c] += dA[r,c] W_Q[r]
		}
		vrow := st.dwv[r*d.dv : (r+1)*d.dv]
		for l := range vrow {
			vrow[l] = dotF(du, in.wo[l*Dout:(l+1)*Dout])
		}
		for l, v := range in.wv[r*d.dv : (r+1)*d.dv] {
			axpyF(v, du, st.dwo[l*Dout:(l+1)*Dout])
		}
	}
	st.dg = dg
	st.dz = &dz[0]
	st.gradValid = true
}

// HeadGradOp returns dL/dz of a HeadOp. Inputs: the forward inputs, the
// forward output and dL/dout.
type HeadGradOp struct{ head *HeadOp }

// Head is the forward op.
func (op *HeadGradOp) Head() *HeadOp { return op.head }

func (op *HeadGradOp) Arity() int { return op.head.Arity() + 2 }
func (op *HeadGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t2 := &G.TensorType{Dims: 2, Of: a}
	t3 := &G.TensorType{Dims: 3, Of: a}
	ts := []hm.Type{t3, t2, t2, t2, t2}
	if op.head.learnG {
		ts = append(ts, a)
	}
	return hm.NewFnType(append(ts, t3, t3, t3)...)
}
func (op *HeadGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("ops: attention head gradient: cannot infer shape from %v", in[0])
	}
	return s.Clone(), nil
}
func (op *HeadGradOp) ReturnsPtr() bool     { return false }
func (op *HeadGradOp) CallsExtern() bool    { return false }
func (op *HeadGradOp) OverwritesInput() int { return -1 }
func (op *HeadGradOp) WriteHash(h hash.Hash) {
	op.head.WriteHash(h)
	fmt.Fprint(h, " grad z")
}
func (op *HeadGradOp) Hashcode() uint32     { return hashOf(op) }
func (op *HeadGradOp) String() string       { return "AttentionHeadGrad{z}" }
func (op *HeadGradOp) DiffWRT(n int) []bool { return make([]bool, n) }
func (op *HeadGradOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("ops: attention head gradients are not differentiable")
}

func (op *HeadGradOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *HeadGradOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) { return op.do(p, vals) }

func (op *HeadGradOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	nf := op.head.Arity()
	if len(vals) != nf+2 {
		return nil, fmt.Errorf("ops: attention head gradient: %d inputs, want %d", len(vals), nf+2)
	}
	switch vals[0].Data().(type) {
	case []float64:
		return headGradDo[float64](op.head, p, vals, nf)
	case []float32:
		return headGradDo[float32](op.head, p, vals, nf)
	}
	return nil, fmt.Errorf("ops: attention head gradient: unsupported data %T", vals[0].Data())
}

func headGradDo[F float32 | float64](h *HeadOp, p G.Value, vals []G.Value, nf int) (G.Value, error) {
	d, err := h.dimsOf(vals[:nf])
	if err != nil {
		return nil, err
	}
	in, err := inputsOf[F](vals)
	if err != nil {
		return nil, err
	}
	out, ok1 := vals[nf].Data().([]F)
	dout, ok2 := vals[nf+1].Data().([]F)
	if !ok1 || !ok2 || len(out) != d.b*d.rows*d.dout || len(dout) != len(out) {
		return nil, fmt.Errorf("ops: attention head gradient: output or its gradient has the wrong type or size")
	}
	dz := outBuf[F](p, len(in.z), !h.regroup) // a regrouped head writes every element
	headBackward(h, stateOf[F](&h.st), d, in, out, dout, dz)
	return wrapOut(p, vals[0].Shape(), dz), nil
}

// HeadParamGradOp returns dL/d(input wrt) of a HeadOp for wrt = 1..5 (W_Q,
// W_K, W_V, P, g). Inputs: the forward inputs, the forward output, dL/dout
// and dL/dz (the HeadGradOp node, whose run computed these gradients).
type HeadParamGradOp struct {
	head *HeadOp
	wrt  int
}

// Head is the forward op.
func (op *HeadParamGradOp) Head() *HeadOp { return op.head }

// Wrt is the input the gradient is taken with respect to: 1 W_Q, 2 W_K,
// 3 W_V, 4 P, 5 g.
func (op *HeadParamGradOp) Wrt() int { return op.wrt }

func (op *HeadParamGradOp) Arity() int { return op.head.Arity() + 3 }
func (op *HeadParamGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t2 := &G.TensorType{Dims: 2, Of: a}
	t3 := &G.TensorType{Dims: 3, Of: a}
	ts := []hm.Type{t3, t2, t2, t2, t2}
	if op.head.learnG {
		ts = append(ts, a)
	}
	ts = append(ts, t3, t3, t3)
	if op.wrt == 5 {
		return hm.NewFnType(append(ts, a)...)
	}
	return hm.NewFnType(append(ts, t2)...)
}
func (op *HeadParamGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	if op.wrt == 5 {
		return tensor.ScalarShape(), nil
	}
	s, ok := in[op.wrt].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("ops: attention head gradient: cannot infer shape from %v", in[op.wrt])
	}
	return s.Clone(), nil
}
func (op *HeadParamGradOp) ReturnsPtr() bool     { return false }
func (op *HeadParamGradOp) CallsExtern() bool    { return false }
func (op *HeadParamGradOp) OverwritesInput() int { return -1 }
func (op *HeadParamGradOp) WriteHash(h hash.Hash) {
	op.head.WriteHash(h)
	fmt.Fprintf(h, " grad %d", op.wrt)
}
func (op *HeadParamGradOp) Hashcode() uint32 { return hashOf(op) }
func (op *HeadParamGradOp) String() string {
	return fmt.Sprintf("AttentionHeadGrad{%d}", op.wrt)
}
func (op *HeadParamGradOp) DiffWRT(n int) []bool { return make([]bool, n) }
func (op *HeadParamGradOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("ops: attention head gradients are not differentiable")
}

func (op *HeadParamGradOp) Do(vals ...G.Value) (G.Value, error) {
	nf := op.head.Arity()
	if len(vals) != nf+3 {
		return nil, fmt.Errorf("ops: attention head gradient: %d inputs, want %d", len(vals), nf+3)
	}
	switch vals[0].Data().(type) {
	case []float64:
		return headParamGradDo[float64](op, vals, nf)
	case []float32:
		return headParamGradDo[float32](op, vals, nf)
	}
	return nil, fmt.Errorf("ops: attention head gradient: unsupported data %T", vals[0].Data())
}

func headParamGradDo[F float32 | float64](op *HeadParamGradOp, vals []G.Value, nf int) (G.Value, error) {
	h := op.head
	d, err := h.dimsOf(vals[:nf])
	if err != nil {
		return nil, err
	}
	in, err := inputsOf[F](vals)
	if err != nil {
		return nil, err
	}
	out, ok1 := vals[nf].Data().([]F)
	dout, ok2 := vals[nf+1].Data().([]F)
	dz, ok3 := vals[nf+2].Data().([]F)
	if !ok1 || !ok2 || !ok3 || len(out) != d.b*d.rows*d.dout || len(dout) != len(out) || len(dz) != len(in.z) {
		return nil, fmt.Errorf("ops: attention head gradient: inputs have the wrong type or size")
	}
	st := stateOf[F](&h.st)
	if !st.gradValid || st.dz != &dz[0] || !st.matches(d, in, out) {
		// Not the backward run of these values: recompute it.
		headBackward(h, st, d, in, out, dout, make([]F, len(in.z)))
	}
	var src []F
	switch op.wrt {
	case 1:
		src = st.dwq
	case 2:
		src = st.dwk
	case 3:
		src = st.dwv
	case 4:
		src = st.dwo
	default:
		var zero F
		if _, ok := any(zero).(float32); ok {
			return G.NewF32(float32(st.dg)), nil
		}
		return G.NewF64(st.dg), nil
	}
	return tensor.New(tensor.WithShape(vals[op.wrt].Shape().Clone()...), tensor.WithBacking(append([]F(nil), src...))), nil
}

// dotF is Σ a_i b_i over len(a) (b at least as long), in F.
func dotF[F float32 | float64](a, b []F) F {
	b = b[:len(a)]
	var s0, s1, s2, s3 F
	for len(a) >= 4 && len(b) >= 4 {
		s0 += a[0] * b[0]
		s1 += a[1] * b[1]
		s2 += a[2] * b[2]
		s3 += a[3] * b[3]
		a, b = a[4:], b[4:]
	}
	for i, v := range a {
		s0 += v * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpyF adds α x to y (len(y) at least len(x)).
func axpyF[F float32 | float64](alpha F, x, y []F) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

// tokenGemm is gemm for the head's products with A not transposed: for
// float32 with m ≥ 16 rows (the token-sized products, B·T or B rows) and
// k ≤ 256, on mulAddRows' kernels, op(B) = Bᵀ (the head's small matrices)
// copied first. gemm's packed path copies A into its panels, which for
// such a short k costs as much as the product; mulAddRows reads A where it
// is. Every element of C is the chain of fused multiply-adds over k in
// order, from zero, stored (beta 0) or added to C at the end (beta 1),
// that gemm computes for k ≤ 256 (one KC slice), so the same bits
// (TestTokenGemmBits). Other products go to gemm.
func tokenGemm[F float32 | float64](tB bool, m, n, k int, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) {
	if !is32[F]() || !haveNarrowAVX2 || !HaveRowKernel() || m < 16 || k < 1 || k > 256 || !(beta == 0 || beta == 1) {
		gemm(false, tB, m, n, k, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if tB {
		sp := narrowScratch[F](k * n)
		defer narrowPool[F]().Put(sp)
		bt := (*sp)[:k*n]
		transposeInto(bt, b, ldb, n, k)
		b, ldb = bt, n
	}
	mulAddRows(m, n, k, a, lda, 1, b, ldb, c, ldc, beta == 1)
}

// seqGemmT sets the m×n matrix C (rows n apart) to A·Bᵀ, A m×k (rows lda
// apart), B n×k (rows ldb apart): a sequence's product in the full head
// (the scores z_j A z_iᵀ, dL/dw = dout Vuᵀ), which Gemm would run on
// mulAddRows' kernels with Bᵀ copied into a pooled buffer. Here Bᵀ is
// copied into bt (grown if short, and returned), and mulAddRows runs
// directly: the same chains, without Gemm's and narrowGemm's checks and
// the pool at every sequence. Other sizes, and machines without the
// kernels, go to Gemm.
func seqGemmT[F float32 | float64](m, n, k int, a []F, lda int, b []F, ldb int, c []F, bt []F) []F {
	if !haveNarrowAVX2 || !HaveRowKernel() || m < 4 || k < 1 || n < 1 || n > 16 || lda < k || ldb < k ||
		len(a) < (m-1)*lda+k || len(b) < (n-1)*ldb+k || len(c) < m*n {
		Gemm(false, true, m, n, k, 1, a, lda, b, ldb, 0, c, n)
		return bt
	}
	bt = grow(bt, k*n)
	transposeInto(bt, b, ldb, n, k)
	mulAddRows(m, n, k, a, lda, 1, bt, n, c, n, false)
	return bt
}

// gemm is C = op(A) op(B) + beta C on row-major slices (Gemm).
func gemm[F float32 | float64](tA, tB bool, m, n, k int, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) {
	Gemm(tA, tB, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
}

// rowDots sets out[j] = Σ_i w[j·n + i]·v[j·n + i] for j < m, each sum a
// chain of F additions in index order (as a loop over one row computes
// it), four rows at a time so that their chains overlap.
func rowDots[F float32 | float64](out, w, v []F, m, n int) {
	j := 0
	for ; j+4 <= m; j += 4 {
		w0, w1, w2, w3 := w[j*n:(j+1)*n], w[(j+1)*n:(j+2)*n], w[(j+2)*n:(j+3)*n], w[(j+3)*n:(j+4)*n]
		v0, v1, v2, v3 := v[j*n:(j+1)*n], v[(j+1)*n:(j+2)*n], v[(j+2)*n:(j+3)*n], v[(j+3)*n:(j+4)*n]
		w1, w2, w3 = w1[:len(w0)], w2[:len(w0)], w3[:len(w0)]
		v0, v1, v2, v3 = v0[:len(w0)], v1[:len(w0)], v2[:len(w0)], v3[:len(w0)]
		var s0, s1, s2, s3 F
		for i := range w0 {
			s0 += w0[i] * v0[i]
			s1 += w1[i] * v1[i]
			s2 += w2[i] * v2[i]
			s3 += w3[i] * v3[i]
		}
		out[j], out[j+1], out[j+2], out[j+3] = s0, s1, s2, s3
	}
	for ; j < m; j++ {
		var s F
		for i, x := range w[j*n : (j+1)*n] {
			s += x * v[j*n+i]
		}
		out[j] = s
	}
}

// rowScoreGrads sets a head row's score gradients ds from its weights w,
// their gradients dw and scores s for the kernel kind (rs[j]: the softmax
// row's Σ_i w_i dw_i, read for the softmax kernel only), and returns dg plus
// the row's share of dL/dg, added in index order (the exponential kernel) or
// as softmaxDS adds it.
func rowScoreGrads[F float32 | float64](kind KernelKind, ds, w, dw, s, rs []F, j int, g F, dg float64) float64 {
	switch kind {
	case KindLinear:
		copy(ds, dw)
	case KindExp:
		for i, wi := range w {
			e := wi * dw[i]
			ds[i] = g * e
			dg += float64(e) * float64(s[i])
		}
	case KindSoftmax:
		dg += softmaxDS(ds, w, dw, s, rs[j], g)
	}
	return dg
}

// softmaxDS sets ds_i = g·w_i·(dw_i − rs), the softmax row's score
// gradients, and returns Σ_i w_i·(dw_i − rs)·s_i, its share of dL/dg: for
// float64 one chain of additions in index order, for float32 four chains
// (i mod 4) added at the end, so that the float64 additions overlap.
func softmaxDS[F float32 | float64](ds, w, dw, s []F, rs, g F) float64 {
	w, dw, s = w[:len(ds)], dw[:len(ds)], s[:len(ds)]
	if !is32[F]() {
		var dg float64
		for i, wi := range w {
			e := wi * (dw[i] - rs)
			ds[i] = g * e
			dg += float64(e) * float64(s[i])
		}
		return dg
	}
	var d0, d1, d2, d3 float64
	i := 0
	for ; i+4 <= len(ds); i += 4 {
		e0 := w[i] * (dw[i] - rs)
		e1 := w[i+1] * (dw[i+1] - rs)
		e2 := w[i+2] * (dw[i+2] - rs)
		e3 := w[i+3] * (dw[i+3] - rs)
		ds[i], ds[i+1], ds[i+2], ds[i+3] = g*e0, g*e1, g*e2, g*e3
		d0 += float64(e0) * float64(s[i])
		d1 += float64(e1) * float64(s[i+1])
		d2 += float64(e2) * float64(s[i+2])
		d3 += float64(e3) * float64(s[i+3])
	}
	for ; i < len(ds); i++ {
		e := w[i] * (dw[i] - rs)
		ds[i] = g * e
		d0 += float64(e) * float64(s[i])
	}
	return (d0 + d1) + (d2 + d3)
}
