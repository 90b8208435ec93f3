package ops

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// KernelApplyOfData returns out = κ(q, k)·r (B, Tq, P): the weights of a
// built-in kernel ([KernelWeightsOfData]: queries q (B, Tq, D) and keys k
// (B, Tk, D) that are data, g a scalar node or nil for the fixed gFixed, no
// mask) applied to the values r (B, Tk, P), in one op. Its backward pass
// computes the gradients of r and g.
//
// It computes the same numbers, bit for bit, as
//
//	w := KernelWeightsOfData(kind, q, k, g, gFixed, nil)
//	out := BatchedMatMul(w, r, false, false)
//
// with the same gradients, but a sequence at a time: the raw scores and, in
// the backward pass, dL/dW of one sequence are computed in a scratch block
// that stays in cache, instead of as (B, Tq, Tk) tensors written to memory
// and read back by the next op (at the authors' context sizes, N = 125 to
// 250, each such tensor is 32 to 128 MB at batch 512: the step is bound by
// memory traffic, not arithmetic). The weights are kept for the backward
// pass (the op's only (B, Tq, Tk) array).
//
// The GD models use it for a single block with a single head (gd.Model):
// with more blocks the weights are shared by every block, and computing
// them once (KernelWeightsOfData) is cheaper.
func KernelApplyOfData(kind KernelKind, q, k, g *G.Node, gFixed float64, r *G.Node) (*G.Node, error) {
	if !kind.valid() {
		return nil, fmt.Errorf("ops: kernel apply: unknown kind %v", kind)
	}
	if q == nil || k == nil || r == nil {
		return nil, fmt.Errorf("ops: kernel apply %v: nil query, key or value", kind)
	}
	qs, ks, rs := q.Shape(), k.Shape(), r.Shape()
	if len(qs) != 3 || len(ks) != 3 || qs[0] != ks[0] || qs[2] != ks[2] {
		return nil, fmt.Errorf("ops: kernel apply %v: query shape %v and key shape %v, want (B, Tq, D) and (B, Tk, D)", kind, qs, ks)
	}
	if len(rs) != 3 || rs[0] != ks[0] || rs[1] != ks[1] {
		return nil, fmt.Errorf("ops: kernel apply %v: value shape %v, want (B, Tk, P) = (%d, %d, P)", kind, rs, ks[0], ks[1])
	}
	if err := checkFloat(q.Dtype()); err != nil || k.Dtype() != q.Dtype() || r.Dtype() != q.Dtype() {
		return nil, fmt.Errorf("ops: kernel apply %v: query, key and value dtypes %v, %v, %v, want all float32 or all float64", kind, q.Dtype(), k.Dtype(), r.Dtype())
	}
	if g != nil && (!g.IsScalar() || g.Dtype() != q.Dtype()) {
		return nil, fmt.Errorf("ops: kernel apply %v: g %q (%v %v) must be a scalar of the query's dtype", kind, g.Name(), g.Dtype(), g.Shape())
	}
	if g == nil && kind != KindLinear && !(gFixed > 0 && !math.IsInf(gFixed, 1)) {
		return nil, fmt.Errorf("ops: kernel apply %v: g = %v, want a finite positive value", kind, gFixed)
	}
	in := []*G.Node{q, k}
	if g != nil {
		in = append(in, g)
	}
	in = append(in, r)
	op := &KernelApplyOp{kern: KernelOp{kind: kind, g: gFixed, learnG: g != nil, dataQK: true, c: &kernelCache{}}, c: &applyCache{}}
	return G.ApplyOp(op, in...)
}

// KernelApplyOp is [KernelApplyOfData]'s op. Inputs: q, k, then g if the
// kernel's g is learnt, then r.
type KernelApplyOp struct {
	kern KernelOp // the kernel: kind, g, LearnG (no mask, q and k data)
	c    *applyCache
}

// applyCache holds one node's forward weights (with the buffers they were
// computed from) and its backward run's gradients (with theirs), and the
// scratch blocks of one sequence.
type applyCache struct {
	w              any // []F (B, Tq, Tk)
	g              float64
	q, k, out      any // *F
	wValid         bool
	dr             any // []F (B, Tk, P), when drHeld
	drHeld         bool
	dg             float64
	gq, gk, gr, gd any // *F of the backward run's q, k, r, dL/dout
	gradValid      bool
	raw, dw        any // []F (Tq, Tk) scratch
	// rawAll is the forward's raw scores of every sequence (B, Tq, Tk),
	// kept with w (rawKept) when the backward pass needs them (keepRaw).
	rawAll  any
	rawKept bool
}

// maxKeptRaw is the largest raw-score array (elements) a kernel-apply node
// keeps from its forward pass for the backward one; above it the backward
// pass recomputes the scores of each sequence.
const maxKeptRaw = 1 << 22

// keepRaw reports whether the forward pass keeps the raw scores: the
// backward pass reads them for dg (a learnt g of a kernel other than
// linear), and the array is small (the GD models' query row: Tq = 1).
func (op *KernelApplyOp) keepRaw(a applyArgs) bool {
	return op.kern.learnG && op.kern.kind != KindLinear && a.b*a.tq*a.tk <= maxKeptRaw
}

// Kernel is the kernel's op (its kind, g, LearnG): what a backend reads to
// compute the weights (it has a cache of its own, unused by this op).
func (op *KernelApplyOp) Kernel() *KernelOp { return &op.kern }

func (op *KernelApplyOp) Arity() int { return op.kern.Arity() + 1 }
func (op *KernelApplyOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t3 := &G.TensorType{Dims: 3, Of: a}
	ts := []hm.Type{t3, t3}
	if op.kern.learnG {
		ts = append(ts, a)
	}
	return hm.NewFnType(append(ts, t3, t3)...)
}
func (op *KernelApplyOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	qs, ok1 := in[0].(tensor.Shape)
	rs, ok2 := in[len(in)-1].(tensor.Shape)
	if !ok1 || !ok2 || len(qs) != 3 || len(rs) != 3 {
		return nil, fmt.Errorf("ops: kernel apply op: cannot infer shape from %v, %v", in[0], in[len(in)-1])
	}
	return tensor.Shape{qs[0], qs[1], rs[2]}, nil
}
func (op *KernelApplyOp) ReturnsPtr() bool     { return false }
func (op *KernelApplyOp) CallsExtern() bool    { return false }
func (op *KernelApplyOp) OverwritesInput() int { return -1 }
func (op *KernelApplyOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.kernelapply %d g=%v learn=%v", op.kern.kind, op.kern.g, op.kern.learnG)
}
func (op *KernelApplyOp) Hashcode() uint32 { return hashOf(op) }
func (op *KernelApplyOp) String() string   { return "KernelApply{" + op.kern.kind.String() + "}" }

// applyArgs are the sizes of one evaluation: the kernel's and P.
type applyArgs struct {
	kernelArgs
	p int
}

func (op *KernelApplyOp) unpack(vals []G.Value) (applyArgs, error) {
	nk := op.kern.Arity()
	if len(vals) < nk+1 {
		return applyArgs{}, fmt.Errorf("ops: kernel apply op: %d inputs, want %d", len(vals), nk+1)
	}
	a, err := op.kern.unpack(vals[:nk])
	if err != nil {
		return applyArgs{}, err
	}
	rs := vals[nk].Shape()
	if len(rs) != 3 || rs[0] != a.b || rs[1] != a.tk {
		return applyArgs{}, fmt.Errorf("ops: kernel apply op: value shape %v, want (%d, %d, P)", rs, a.b, a.tk)
	}
	return applyArgs{kernelArgs: a, p: rs[2]}, nil
}

func (op *KernelApplyOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *KernelApplyOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) { return op.do(p, vals) }

func (op *KernelApplyOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	a, err := op.unpack(vals)
	if err != nil {
		return nil, err
	}
	r := vals[op.kern.Arity()].Data()
	switch q := vals[0].Data().(type) {
	case []float64:
		return applyDo(op, p, a, q, vals[1].Data(), r)
	case []float32:
		return applyDo(op, p, a, q, vals[1].Data(), r)
	}
	return nil, fmt.Errorf("ops: kernel apply op: unsupported data %T", vals[0].Data())
}

func applyDo[F float32 | float64](op *KernelApplyOp, p G.Value, a applyArgs, q []F, kv, rv any) (G.Value, error) {
	k, ok1 := kv.([]F)
	r, ok2 := rv.([]F)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("ops: kernel apply op: mixed dtypes")
	}
	out := outBuf[F](p, a.b*a.tq*a.p, false) // applyForward overwrites every element
	c := op.c
	c.wValid, c.gradValid = false, false
	w, _ := c.w.([]F)
	w = grow(w, a.b*a.tq*a.tk)
	c.w = w
	var rawAll []F
	if op.keepRaw(a) {
		rawAll = scratch[F](&c.rawAll, len(w))
	}
	applyForward(op.kern.kind, a, q, k, r, w, scratch[F](&c.raw, a.tq*a.tk), rawAll, out)
	if len(q) > 0 && len(k) > 0 && len(out) > 0 && len(w) > 0 {
		c.q, c.k, c.out, c.g = &q[0], &k[0], &out[0], a.g
		c.wValid = true
		c.rawKept = rawAll != nil
	}
	return wrapOut(p, tensor.Shape{a.b, a.tq, a.p}, out), nil
}

// scratch returns *buf grown to n elements of F.
func scratch[F float32 | float64](buf *any, n int) []F {
	s, _ := (*buf).([]F)
	s = grow(s, n)
	*buf = s
	return s
}

// applyForward sets w (B, Tq, Tk) to the kernel weights and out (B, Tq, P)
// to w·r, a sequence at a time: kernelForward on the sequence (its raw
// scores in raw, a Tq×Tk scratch, or in rawAll (B, Tq, Tk) when that is
// non-nil), then the narrow product (mulAddRows: gemm's chains).
func applyForward[F float32 | float64](kind KernelKind, a applyArgs, q, k, r, w, raw, rawAll, out []F) {
	tq, tk, d, p := a.tq, a.tk, a.d, a.p
	one := a.kernelArgs
	one.b = 1
	// The sequences are independent: two halves on two goroutines when
	// GOMAXPROCS > 1 and the work is large (the second with its own
	// scratch), the same values.
	parallelRows(a.b, tq*tk*max(d, 1), func(lo, hi int) {
		rs := raw
		if lo > 0 {
			rs = make([]F, len(raw))
		}
		applyForwardSeqs(kind, one, tq, tk, d, p, q, k, r, w, rs, rawAll, out, make([]F, padSize(d, p)), lo, hi)
	})
}

// applyForwardSeqs is applyForward's work on the sequences lo..hi-1, raw a
// Tq×Tk scratch of its own (unused when rawAll is non-nil), pad tallRows'
// scratch (padSize).
func applyForwardSeqs[F float32 | float64](kind KernelKind, one kernelArgs, tq, tk, d, p int, q, k, r, w, raw, rawAll, out, pad []F, lo, hi int) {
	if tq == 1 && kind == KindSoftmax && rawAll != nil && tk > 0 {
		// One query a sequence, its scores kept: all the sequences'
		// scores, then their weights eight rows at a time
		// (softmaxWeightRows: dotWeights' values), then the products.
		for b := lo; b < hi; b++ {
			queryScores(tk, d, q[b*d:(b+1)*d], k[b*tk*d:(b+1)*tk*d], rawAll[b*tk:(b+1)*tk], pad)
		}
		softmaxWeightRows(one.g, rawAll[lo*tk:hi*tk], w[lo*tk:hi*tk], hi-lo, tk)
		for b := lo; b < hi; b++ {
			applyRow(tq, tk, p, w, r, out, b)
		}
		return
	}
	for b := lo; b < hi; b++ {
		wb := w[b*tq*tk : (b+1)*tq*tk]
		if rawAll != nil {
			raw = rawAll[b*tq*tk : (b+1)*tq*tk]
		}
		qb, kb := q[b*tq*d:(b+1)*tq*d], k[b*tk*d:(b+1)*tk*d]
		if tq == 1 && kind.DotProduct() {
			// kernelForward's dot-product path (Gemm's q·kᵀ, then
			// dotWeights) for a single query: the scores as the column
			// K·q (mulAddRows, keys side by side: the same chains of
			// fused multiply-adds, without copying Kᵀ).
			queryScores(tk, d, qb, kb, raw, pad)
			dotWeights(kind, one.g, raw[:tk], wb)
		} else {
			kernelForward(kind, one, qb, kb, nil, wb, raw)
		}
		applyRow(tq, tk, p, w, r, out, b)
	}
}

// applyRow sets sequence b's rows of out (Tq, P) to its weights (Tq, Tk)
// times its values r (Tk, P): mulAddRows, gemm's chains.
func applyRow[F float32 | float64](tq, tk, p int, w, r, out []F, b int) {
	if p > 0 && tk > 0 {
		mulAddRows(tq, p, tk, w[b*tq*tk:(b+1)*tq*tk], tk, 1, r[b*tk*p:(b+1)*tk*p], p, out[b*tq*p:(b+1)*tq*p], p, false)
	} else {
		clear(out[b*tq*p : (b+1)*tq*p])
	}
}

// queryScores sets raw[i] = q·k_i for the tk keys k_i (rows of d in k) of
// one query q: the column K·q, each element gemm's chain of fused
// multiply-adds over the d coordinates in order, as Gemm's q·kᵀ computes
// it (tallRows with the keys as the rows of A: no copy of Kᵀ). pad is
// tallRows' scratch (nil: none).
func queryScores[F float32 | float64](tk, d int, q, k, raw, pad []F) {
	if tk == 0 {
		return
	}
	if k32, ok := any(k).([]float32); ok && d > 0 && haveNarrowAVX2 && HaveRowKernel() {
		// dotCols32: the same chains, eight keys to a vector.
		q32, r32 := any(q).([]float32), any(raw).([]float32)
		_, _, _ = q32[d-1], k32[tk*d-1], r32[tk-1]
		dotCols32(&r32[0], &k32[0], &q32[0], d, d, tk)
		return
	}
	tallRows(tk, 1, d, k, d, 1, q, 1, raw, 1, pad)
}

// padSize is the scratch tallRows needs for the products of a kernel-apply
// op with depth d and values of width p: queryScores' (k = d or p, n = 1)
// and applyDR's for a single query (k = 1, n = p).
func padSize(d, p int) int { return 8 * (max(d, p, 1) + max(p, 1)) }

// tallRows is mulAddRows with acc false for a narrow C (n at most the
// kernels' column chunk): the last m mod 8 rows of A are copied into pad
// and computed as one group of eight rows beside whatever the rest of pad
// holds (those results are dropped), instead of a row at a time through
// MulAddRow. Every row of C is the same chain of fused multiply-adds
// whichever group computes it, so the results are mulAddRows' bits. pad
// needs 8·(k+n) elements; with less, or without the AVX2 kernels, it is
// mulAddRows.
func tallRows[F float32 | float64](m, n, k int, a []F, rsA, incA int, b []F, ldb int, c []F, ldc int, pad []F) {
	head := m &^ 7
	rem := m - head
	if rem == 0 || k == 0 || n == 0 || n > narrowCols[F]() || len(pad) < 8*(k+n) || !haveNarrowAVX2 || !HaveRowKernel() {
		mulAddRows(m, n, k, a, rsA, incA, b, ldb, c, ldc, false)
		return
	}
	mulAddRows(head, n, k, a, rsA, incA, b, ldb, c, ldc, false)
	pa, pc := pad[:8*k], pad[8*k:8*(k+n)]
	for i := 0; i < rem; i++ {
		row, o := pa[i*k:(i+1)*k], (head+i)*rsA
		if incA == 1 {
			copy(row, a[o:o+k])
			continue
		}
		for l := range row {
			row[l] = a[o+l*incA]
		}
	}
	mulAddRows(8, n, k, pa, k, 1, b, ldb, pc, n, false)
	for i := 0; i < rem; i++ {
		copy(c[(head+i)*ldc:(head+i)*ldc+n], pc[i*n:(i+1)*n])
	}
}

// rawScores sets raw (Tq×Tk) to one sequence's raw scores as kernelForward
// computes them: q·k (gemm) for the dot-product kernels, ||q − k||² for the
// distance kernels (sqDists).
func rawScores[F float32 | float64](kind KernelKind, sd *sqDistScratch, tq, tk, d int, q, k, raw, pad []F) {
	if kind.DotProduct() {
		if tq == 1 {
			queryScores(tk, d, q, k, raw, pad)
			return
		}
		Gemm(false, true, tq, tk, d, 1, q, d, k, d, 0, raw, tk)
		return
	}
	for i, r := range sqDists(sd, tq, tk, d, q, k) {
		raw[i] = F(r)
	}
}

func (op *KernelApplyOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	if op.kern.learnG {
		d[2] = true
	}
	d[n-1] = true
	return d
}

func (op *KernelApplyOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	out := make(G.Nodes, len(inputs))
	gradIn := append(append(G.Nodes{}, inputs...), output, grad)
	wrt := []int{len(inputs) - 1}
	if op.kern.learnG {
		wrt = append(wrt, 2)
	}
	for _, w := range wrt {
		n, err := G.ApplyOp(&KernelApplyGradOp{fwd: op, wrt: w}, gradIn...)
		if err != nil {
			return nil, err
		}
		out[w] = n
	}
	return out, nil
}

// KernelApplyGradOp returns dL/d(input wrt) of a [KernelApplyOp]: wrt is r
// (the last forward input) or g (2). Inputs: the forward inputs, the
// forward output and dL/dout.
type KernelApplyGradOp struct {
	fwd *KernelApplyOp
	wrt int
}

// Forward is the forward op.
func (op *KernelApplyGradOp) Forward() *KernelApplyOp { return op.fwd }

// Wrt is the forward input the gradient is taken with respect to.
func (op *KernelApplyGradOp) Wrt() int { return op.wrt }

func (op *KernelApplyGradOp) isG() bool { return op.fwd.kern.learnG && op.wrt == 2 }

func (op *KernelApplyGradOp) Arity() int { return op.fwd.Arity() + 2 }
func (op *KernelApplyGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t3 := &G.TensorType{Dims: 3, Of: a}
	ts := []hm.Type{t3, t3}
	if op.fwd.kern.learnG {
		ts = append(ts, a)
	}
	ts = append(ts, t3, t3, t3)
	if op.isG() {
		return hm.NewFnType(append(ts, a)...)
	}
	return hm.NewFnType(append(ts, t3)...)
}
func (op *KernelApplyGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	if op.isG() {
		return tensor.ScalarShape(), nil
	}
	s, ok := in[op.wrt].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("ops: kernel apply gradient: cannot infer shape from %v", in[op.wrt])
	}
	return s.Clone(), nil
}
func (op *KernelApplyGradOp) ReturnsPtr() bool     { return false }
func (op *KernelApplyGradOp) CallsExtern() bool    { return false }
func (op *KernelApplyGradOp) OverwritesInput() int { return -1 }
func (op *KernelApplyGradOp) WriteHash(h hash.Hash) {
	op.fwd.WriteHash(h)
	fmt.Fprintf(h, " grad wrt %d", op.wrt)
}
func (op *KernelApplyGradOp) Hashcode() uint32 { return hashOf(op) }
func (op *KernelApplyGradOp) String() string {
	return fmt.Sprintf("KernelApplyGrad{%s,%d}", op.fwd.kern.kind, op.wrt)
}
func (op *KernelApplyGradOp) DiffWRT(n int) []bool { return make([]bool, n) }
func (op *KernelApplyGradOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("ops: kernel apply gradients are not differentiable")
}

func (op *KernelApplyGradOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *KernelApplyGradOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) {
	return op.do(p, vals)
}

func (op *KernelApplyGradOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	nf := op.fwd.Arity()
	if len(vals) != nf+2 {
		return nil, fmt.Errorf("ops: kernel apply gradient: %d inputs, want %d", len(vals), nf+2)
	}
	a, err := op.fwd.unpack(vals[:nf])
	if err != nil {
		return nil, err
	}
	switch q := vals[0].Data().(type) {
	case []float64:
		return applyGradDo(op, p, a, vals, q, nf)
	case []float32:
		return applyGradDo(op, p, a, vals, q, nf)
	}
	return nil, fmt.Errorf("ops: kernel apply gradient: unsupported data %T", vals[0].Data())
}

func applyGradDo[F float32 | float64](op *KernelApplyGradOp, p G.Value, a applyArgs, vals []G.Value, q []F, nf int) (G.Value, error) {
	k, ok1 := vals[1].Data().([]F)
	r, ok2 := vals[nf-1].Data().([]F)
	out, ok3 := vals[nf].Data().([]F)
	dout, ok4 := vals[nf+1].Data().([]F)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return nil, fmt.Errorf("ops: kernel apply gradient: mixed dtypes")
	}
	if len(q) == 0 || len(k) == 0 || len(r) == 0 || len(out) == 0 || len(dout) != len(out) {
		return nil, fmt.Errorf("ops: kernel apply gradient: empty or mismatched inputs")
	}
	c := op.fwd.c
	valid := c.gradValid && c.gq == any(&q[0]) && c.gk == any(&k[0]) && c.gr == any(&r[0]) && c.gd == any(&dout[0])
	var o []F // dr's output, when this is its op
	if !op.isG() {
		o = outBuf[F](p, len(r), false)
	}
	if !valid || (o != nil && !c.drHeld) {
		// One pass for both gradients; the other gradient op of the node
		// reads dg from the cache, and dr when the pass was its (dr's op
		// writes dr straight into its output).
		w, _ := c.w.([]F)
		var rawAll []F // the forward's raw scores, when kept
		if !(c.wValid && c.q == any(&q[0]) && c.k == any(&k[0]) && c.out == any(&out[0]) && c.g == a.g && len(w) == a.b*a.tq*a.tk) {
			w = make([]F, a.b*a.tq*a.tk)
			applyForward(op.fwd.kern.kind, a, q, k, r, w, scratch[F](&c.raw, a.tq*a.tk), nil, make([]F, len(out)))
		} else if c.rawKept {
			rawAll, _ = c.rawAll.([]F)
		}
		dr := o
		c.drHeld = o == nil
		if o == nil {
			dr = scratch[F](&c.dr, len(r))
		}
		c.dg = applyBackward(op.fwd.kern.kind, op.fwd.kern.learnG, a, q, k, r, w, rawAll, dout, dr,
			scratch[F](&c.raw, a.tq*a.tk), scratch[F](&c.dw, a.tq*a.tk))
		c.gq, c.gk, c.gr, c.gd = &q[0], &k[0], &r[0], &dout[0]
		c.gradValid = true
		if o != nil {
			return wrapOut(p, vals[nf-1].Shape(), o), nil
		}
	}
	if o != nil { // dr from the g op's pass
		dr, _ := c.dr.([]F)
		copy(o, dr)
		return wrapOut(p, vals[nf-1].Shape(), o), nil
	}
	if is32[F]() {
		return G.NewF32(float32(c.dg)), nil
	}
	return G.NewF64(c.dg), nil
}

// applyBackward sets dr = wᵀ·dout (B, Tk, P) and, when learnG, returns dg,
// a sequence at a time: dL/dW = dout·rᵀ and the raw scores of the sequence
// in the scratch blocks dw and raw (Tq×Tk; rawAll's block instead when the
// forward's raw scores are kept there), then kernelDG's terms of its rows,
// added in the order kernelDG adds them over the whole batch.
func applyBackward[F float32 | float64](kind KernelKind, learnG bool, a applyArgs, q, k, r, w, rawAll, dout, dr, raw, dw []F) float64 {
	tq, tk, d, p := a.tq, a.tk, a.d, a.p
	one := a.kernelArgs
	one.b = 1
	if !learnG || kind == KindLinear {
		// No dg chain across the sequences: dr's blocks are independent,
		// two halves on two goroutines as in applyForward.
		parallelRows(a.b, tq*tk*max(p, 1), func(lo, hi int) {
			pad := make([]F, padSize(d, p))
			for b := lo; b < hi; b++ {
				applyDR(tq, tk, p, w, dout, dr, b, pad)
			}
		})
		return 0
	}
	pad := make([]F, padSize(d, p))
	var dg float64
	sd := getSqDistScratch()
	defer sqDistPool.Put(sd)
	for b := 0; b < a.b; b++ {
		wb := w[b*tq*tk : (b+1)*tq*tk]
		db := dout[b*tq*p : (b+1)*tq*p]
		rb := r[b*tk*p : (b+1)*tk*p]
		if rawAll != nil {
			raw = rawAll[b*tq*tk : (b+1)*tq*tk]
		} else {
			rawScores(kind, sd, tq, tk, d, q[b*tq*d:(b+1)*tq*d], k[b*tk*d:(b+1)*tk*d], raw, pad)
		}
		if tq == 1 {
			// dL/dW of the single query row: the column R·dout
			// (queryScores' product: Gemm's chains, no copy of Rᵀ).
			queryScores(tk, p, db, rb, dw, pad)
		} else {
			Gemm(false, true, tq, tk, p, 1, db, p, rb, p, 0, dw, tk)
		}
		dg = kernelDG(kind, one, wb, dw, raw, dg)
		applyDR(tq, tk, p, w, dout, dr, b, pad)
	}
	return dg
}

// applyDR sets sequence b's block of dr to wᵀ·dout; pad is tallRows'
// scratch for a single query.
func applyDR[F float32 | float64](tq, tk, p int, w, dout, dr []F, b int, pad []F) {
	if p > 0 && p <= 8 && tq == 1 && tk > 0 && is32[F]() && haveNarrowAVX2 && HaveRowKernel() {
		// The outer product w ⊗ dout of the single query row: one fused
		// multiply-add from zero per element, as mulAddRows (k = 1).
		w32, d32, r32 := any(w[b*tk:(b+1)*tk]).([]float32), any(dout[b*p:(b+1)*p]).([]float32), any(dr[b*tk*p:(b+1)*tk*p]).([]float32)
		outerRows32(&r32[0], &w32[0], &d32[0], tk, p)
	} else if p > 0 && tq == 1 {
		tallRows(tk, p, 1, w[b*tk:(b+1)*tk], 1, 1, dout[b*p:(b+1)*p], p, dr[b*tk*p:(b+1)*tk*p], p, pad)
	} else if p > 0 && tq > 0 {
		mulAddRows(tk, p, tq, w[b*tq*tk:(b+1)*tq*tk], 1, tk, dout[b*tq*p:(b+1)*tq*p], p, dr[b*tk*p:(b+1)*tk*p], p, false)
	} else {
		clear(dr[b*tk*p : (b+1)*tk*p])
	}
}
