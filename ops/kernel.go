package ops

import (
	"fmt"
	"hash"
	"math"
	"runtime"
	"sync"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// KernelKind names a built-in kernel of [KernelOp] and [HeadOp].
type KernelKind int

// The built-in kernels; g > 0 is the kernel's parameter.
const (
	KindLinear    KernelKind = iota // q·k
	KindRBF                         // exp(−g ||q − k||²)
	KindExp                         // exp(g q·k)
	KindLaplacian                   // exp(−g ||q − k||)
	KindSoftmax                     // exp(g q·k) / Σ_keys exp(g q·k')
)

var kindNames = [...]string{"linear", "rbf", "exp", "laplacian", "softmax"}

// String is the kernel's name ("linear", "rbf", "exp", "laplacian",
// "softmax").
func (k KernelKind) String() string {
	if k.valid() {
		return kindNames[k]
	}
	return fmt.Sprintf("KernelKind(%d)", int(k))
}

func (k KernelKind) valid() bool { return k >= KindLinear && k <= KindSoftmax }

// DotProduct reports whether the kernel is a function of q·k alone (linear,
// exp, softmax): the kernels [AttentionHead] computes.
func (k KernelKind) DotProduct() bool { return k == KindLinear || k == KindExp || k == KindSoftmax }

// KernelOp computes the weights W (B, Tq, Tk) of a built-in kernel in one
// Gorgonia op, with a hand-written backward pass ([KernelGradOp]). Inputs:
// q (B, Tq, D), k (B, Tk, D), then g (a scalar node) if LearnG, then the
// 0/1 keep mask (B, Tq, Tk) if Masked. A fixed g is held in the op.
//
// One op instead of a chain of generic ones: the kernels are the hot loop of
// every attention layer, Gorgonia runs a batched product of tiny matrices
// one Sgemm call per batch element, and the distance kernels need the
// differences q_j − k_i, which generic broadcasts compute only through
// rank-4 tensors (whose broadcast gradient is wrong in Gorgonia v0.9.18).
type KernelOp struct {
	kind   KernelKind
	g      float64 // fixed g when !learnG
	learnG bool
	masked bool
	// dataQK: q and k are data (no gradient flows to them), so the
	// backward pass computes dg only.
	dataQK bool
	// c keeps the raw scores of the last forward run and the gradients of
	// the last backward run (shared with the gradient ops, which copy op).
	c *kernelCache
}

// Kind is the kernel.
func (op *KernelOp) Kind() KernelKind { return op.kind }

// FixedG is the kernel parameter g held by the op; it is used only when
// LearnG is false.
func (op *KernelOp) FixedG() float64 { return op.g }

// LearnG reports whether g is the op's third input (a scalar node).
func (op *KernelOp) LearnG() bool { return op.learnG }

// Masked reports whether the op's last input is a 0/1 keep mask
// (B, Tq, Tk).
func (op *KernelOp) Masked() bool { return op.masked }

// DataQK reports whether q and k are data: the backward pass then computes
// the gradient of g alone.
func (op *KernelOp) DataQK() bool { return op.dataQK }

// kernelCache holds, for one kernel node, the forward run's q·k or
// ||q − k||² (what the backward pass needs besides W) and the backward run's
// three gradients, each with the buffers it was computed from; a gradient
// op uses them only when its inputs are those buffers, and recomputes
// otherwise.
type kernelCache struct {
	raw        any // []F, (B, Tq, Tk)
	q, k, w    any // *F of the forward inputs and output
	rawValid   bool
	dq, dk     any // []F
	dg         float64
	gq, gk, gw any // *F of the backward run's q, k, W
	gdw        any // *F of its dW
	gradValid  bool
}

// KernelWeights returns W = κ(q, k) (B, Tq, Tk) for queries q (B, Tq, D)
// and keys k (B, Tk, D) with the built-in kernel kind, as one [KernelOp]
// node: out[b, j, i] = κ(q[b, j], k[b, i]). g is the kernel parameter as a
// scalar node (learnable), or nil for the fixed value gFixed (which must
// then be finite and positive; linear ignores it). keep is nil or a 0/1
// node (B, Tq, Tk): a pair with keep 0 gets weight exactly 0, and softmax
// normalises over the kept keys only (a query that keeps none gets zeros).
//
// q and k that are data ([IsData]) get no gradients.
func KernelWeights(kind KernelKind, q, k, g *G.Node, gFixed float64, keep *G.Node) (*G.Node, error) {
	return kernelWeights(kind, q, k, g, gFixed, keep, IsData(q) && IsData(k))
}

// KernelWeightsOfData is [KernelWeights] for q and k that are data whether
// or not [IsData] knows it: the backward pass computes the gradient of g
// alone. Do not use it for q or k that depend on parameters: their
// gradients would be missing.
func KernelWeightsOfData(kind KernelKind, q, k, g *G.Node, gFixed float64, keep *G.Node) (*G.Node, error) {
	return kernelWeights(kind, q, k, g, gFixed, keep, true)
}

func kernelWeights(kind KernelKind, q, k, g *G.Node, gFixed float64, keep *G.Node, dataQK bool) (*G.Node, error) {
	if !kind.valid() {
		return nil, fmt.Errorf("ops: kernel: unknown kind %v", kind)
	}
	if q == nil || k == nil {
		return nil, fmt.Errorf("ops: kernel %v: nil query or key", kind)
	}
	qs, ks := q.Shape(), k.Shape()
	if len(qs) != 3 || len(ks) != 3 || qs[0] != ks[0] || qs[2] != ks[2] {
		return nil, fmt.Errorf("ops: kernel %v: query shape %v and key shape %v, want (B, Tq, D) and (B, Tk, D)", kind, qs, ks)
	}
	if err := checkFloat(q.Dtype()); err != nil || k.Dtype() != q.Dtype() {
		return nil, fmt.Errorf("ops: kernel %v: query dtype %v and key dtype %v, want both float32 or both float64", kind, q.Dtype(), k.Dtype())
	}
	if g != nil && (!g.IsScalar() || g.Dtype() != q.Dtype()) {
		return nil, fmt.Errorf("ops: kernel %v: g %q (%v %v) must be a scalar of the query's dtype", kind, g.Name(), g.Dtype(), g.Shape())
	}
	if g == nil && kind != KindLinear && !(gFixed > 0 && !math.IsInf(gFixed, 1)) {
		return nil, fmt.Errorf("ops: kernel %v: g = %v, want a finite positive value", kind, gFixed)
	}
	in := []*G.Node{q, k}
	if g != nil {
		in = append(in, g)
	}
	if keep != nil {
		if want := (tensor.Shape{qs[0], qs[1], ks[1]}); !keep.Shape().Eq(want) || keep.Dtype() != q.Dtype() {
			return nil, fmt.Errorf("ops: kernel %v: mask %v %v, want %v %v", kind, keep.Dtype(), keep.Shape(), q.Dtype(), want)
		}
		in = append(in, keep)
	}
	op := &KernelOp{kind: kind, g: gFixed, learnG: g != nil, masked: keep != nil, dataQK: dataQK, c: &kernelCache{}}
	return G.ApplyOp(op, in...)
}

func (op *KernelOp) Arity() int {
	n := 2
	if op.learnG {
		n++
	}
	if op.masked {
		n++
	}
	return n
}

func (op *KernelOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t3 := &G.TensorType{Dims: 3, Of: a}
	ts := []hm.Type{t3, t3}
	if op.learnG {
		ts = append(ts, a)
	}
	if op.masked {
		ts = append(ts, t3)
	}
	return hm.NewFnType(append(ts, t3)...)
}

func (op *KernelOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	qs, ok1 := in[0].(tensor.Shape)
	ks, ok2 := in[1].(tensor.Shape)
	if !ok1 || !ok2 || len(qs) != 3 || len(ks) != 3 {
		return nil, fmt.Errorf("ops: kernel op: cannot infer shape from %v, %v", in[0], in[1])
	}
	return tensor.Shape{qs[0], qs[1], ks[1]}, nil
}
func (op *KernelOp) ReturnsPtr() bool     { return false }
func (op *KernelOp) CallsExtern() bool    { return false }
func (op *KernelOp) OverwritesInput() int { return -1 }
func (op *KernelOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.kernel %d g=%v learn=%v masked=%v data=%v", op.kind, op.g, op.learnG, op.masked, op.dataQK)
}
func (op *KernelOp) Hashcode() uint32 { return hashOf(op) }
func (op *KernelOp) String() string   { return "Kernel{" + op.kind.String() + "}" }

func (op *KernelOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *KernelOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) { return op.do(p, vals) }

func (op *KernelOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	a, err := op.unpack(vals)
	if err != nil {
		return nil, err
	}
	shape := tensor.Shape{a.b, a.tq, a.tk}
	switch q := vals[0].Data().(type) {
	case []float64:
		w := outBuf[float64](p, a.b*a.tq*a.tk, true)
		k, ok := vals[1].Data().([]float64)
		if !ok {
			return nil, fmt.Errorf("ops: kernel op: mixed dtypes")
		}
		kernelForwardCached(op, a, q, k, maskOf[float64](op, vals), w)
		return wrapOut(p, shape, w), nil
	case []float32:
		w := outBuf[float32](p, a.b*a.tq*a.tk, true)
		k, ok := vals[1].Data().([]float32)
		if !ok {
			return nil, fmt.Errorf("ops: kernel op: mixed dtypes")
		}
		kernelForwardCached(op, a, q, k, maskOf[float32](op, vals), w)
		return wrapOut(p, shape, w), nil
	}
	return nil, fmt.Errorf("ops: kernel op: unsupported data %T", vals[0].Data())
}

func (op *KernelOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	d[0], d[1] = !op.dataQK, !op.dataQK
	if op.learnG {
		d[2] = true
	}
	return d
}

func (op *KernelOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	out := make(G.Nodes, len(inputs))
	gradIn := append(append(G.Nodes{}, inputs...), output, grad)
	var wrt []int
	if !op.dataQK {
		wrt = append(wrt, 0, 1)
	}
	if op.learnG {
		wrt = append(wrt, 2)
	}
	for _, w := range wrt {
		n, err := G.ApplyOp(&KernelGradOp{fwd: *op, wrt: w}, gradIn...)
		if err != nil {
			return nil, err
		}
		out[w] = n
	}
	return out, nil
}

// kernelArgs are the sizes and g of one evaluation.
type kernelArgs struct {
	b, tq, tk, d int
	g            float64
}

func (op *KernelOp) unpack(vals []G.Value) (kernelArgs, error) {
	if len(vals) < op.Arity() {
		return kernelArgs{}, fmt.Errorf("ops: kernel op: %d inputs, want %d", len(vals), op.Arity())
	}
	qs, ks := vals[0].Shape(), vals[1].Shape()
	if len(qs) != 3 || len(ks) != 3 || qs[0] != ks[0] || qs[2] != ks[2] {
		return kernelArgs{}, fmt.Errorf("ops: kernel op: query %v and key %v shapes", qs, ks)
	}
	a := kernelArgs{b: qs[0], tq: qs[1], tk: ks[1], d: qs[2], g: op.g}
	if op.learnG {
		switch v := vals[2].Data().(type) {
		case float64:
			a.g = v
		case float32:
			a.g = float64(v)
		default:
			return kernelArgs{}, fmt.Errorf("ops: kernel op: g has type %T", vals[2].Data())
		}
	}
	return a, nil
}

// maskOf returns the keep mask, the last forward input when present.
func maskOf[F float32 | float64](op *KernelOp, vals []G.Value) []F {
	if !op.masked {
		return nil
	}
	m, _ := vals[op.Arity()-1].Data().([]F)
	return m
}

// kernelForwardCached is kernelForward keeping the raw scores in op.c.
func kernelForwardCached[F float32 | float64](op *KernelOp, a kernelArgs, q, k, keep, w []F) {
	c := op.c
	c.rawValid, c.gradValid = false, false
	raw, _ := c.raw.([]F)
	raw = grow(raw, len(w))
	c.raw = raw
	kernelForward(op.kind, a, q, k, keep, w, raw)
	if len(q) > 0 && len(k) > 0 && len(w) > 0 {
		c.q, c.k, c.w = &q[0], &k[0], &w[0]
		c.rawValid = true
	}
}

// kernelForward writes W into w and, if raw is non-nil, the raw scores
// (q·k for the dot-product kernels, ||q − k||² for the distance kernels; 0
// for masked pairs) into raw.
func kernelForward[F float32 | float64](kind KernelKind, a kernelArgs, q, k, keep, w, raw []F) {
	d := a.d
	exp := math.Exp
	if is32[F]() {
		exp = Exp32 // float32 weights: see Exp32
	}
	// Unmasked dot-product kernels: the scores of a sequence as one matrix
	// product Q Kᵀ (Gemm: (Tq, d)·(Tk, d)ᵀ), then the weights of each row
	// with the fused exponential (dotWeights).
	fast := keep == nil && raw != nil && (kind == KindLinear || kind == KindExp || kind == KindSoftmax)
	// The other dot-product evaluations: each row's q·k_i four keys at a
	// time (keyDots), the same sums as dot.
	dotKind := !fast && kind.DotProduct()
	// The sequences are independent: two halves of them on two goroutines
	// when GOMAXPROCS > 1 and the work is large (the same values).
	if a.b < 2 || runtime.GOMAXPROCS(0) < 2 {
		// One sequence (the fused op's calls) or one thread: no closure
		// to allocate.
		kernelForwardSeqs(kind, a, q, k, keep, w, raw, exp, fast, dotKind, 0, a.b)
		return
	}
	parallelRows(a.b, a.tq*a.tk*max(d, 1), func(lo, hi int) {
		kernelForwardSeqs(kind, a, q, k, keep, w, raw, exp, fast, dotKind, lo, hi)
	})
}

// kernelForwardSeqs is kernelForward's work on the sequences lo..hi-1.
func kernelForwardSeqs[F float32 | float64](kind KernelKind, a kernelArgs, q, k, keep, w, raw []F, exp func(float64) float64, fast, dotKind bool, lo, hi int) {
	if kernelRowsForward(kind, a.d, any(q), fast) {
		kernelForwardRows32(kind, a, any(q).([]float32), any(k).([]float32), any(keep).([]float32), any(w).([]float32), any(raw).([]float32), lo, hi)
		return
	}
	d := a.d
	var dots []float64
	if dotKind {
		dots = make([]float64, a.tk)
	}
	// The distance kernels: a sequence's squared distances from its dot
	// products and norms (sqDists), then the weights pair by pair.
	var sd *sqDistScratch
	if kind == KindRBF || kind == KindLaplacian {
		// From a pool: the kernel-apply op calls this a sequence at a
		// time, and a scratch of its own each time would allocate its
		// buffers anew for every sequence.
		sd = getSqDistScratch()
		defer sqDistPool.Put(sd)
	}
	for b := lo; b < hi; b++ {
		var dist []float64 // (Tq, Tk): ||q_j − k_i||² of sequence b
		if sd != nil {
			dist = sqDists(sd, a.tq, a.tk, d, q[b*a.tq*d:(b+1)*a.tq*d], k[b*a.tk*d:(b+1)*a.tk*d])
		}
		if fast {
			o := b * a.tq * a.tk
			Gemm(false, true, a.tq, a.tk, d, 1, q[b*a.tq*d:(b+1)*a.tq*d], d, k[b*a.tk*d:(b+1)*a.tk*d], d, 0, raw[o:o+a.tq*a.tk], a.tk)
			if kind == KindSoftmax {
				continue // the weights of all the rows below
			}
			for j := 0; j < a.tq; j++ {
				o := (b*a.tq + j) * a.tk
				dotWeights(kind, a.g, raw[o:o+a.tk], w[o:o+a.tk])
			}
			continue
		}
		for j := 0; j < a.tq; j++ {
			qj := q[(b*a.tq+j)*d : (b*a.tq+j+1)*d]
			row := w[(b*a.tq+j)*a.tk : (b*a.tq+j+1)*a.tk]
			var keepRow []F
			if keep != nil {
				keepRow = keep[(b*a.tq+j)*a.tk : (b*a.tq+j+1)*a.tk]
			}
			if dotKind {
				keyDots(qj, k[b*a.tk*d:(b+1)*a.tk*d], d, keepRow, dots)
			}
			var rawRow []F
			if raw != nil {
				rawRow = raw[(b*a.tq+j)*a.tk : (b*a.tq+j+1)*a.tk]
			}
			mx := math.Inf(-1)
			for i := range row {
				if keepRow != nil && keepRow[i] == 0 {
					row[i] = 0
					if rawRow != nil {
						rawRow[i] = 0
					}
					continue
				}
				var v, r float64
				switch kind {
				case KindLinear:
					r = dots[i]
					v = r
				case KindExp:
					r = dots[i]
					v = exp(a.g * r)
				case KindRBF:
					r = dist[j*a.tk+i]
					v = exp(-a.g * r)
				case KindLaplacian:
					r = dist[j*a.tk+i]
					v = exp(-a.g * math.Sqrt(r))
				case KindSoftmax:
					r = dots[i]
					v = a.g * r
					mx = math.Max(mx, v)
				}
				row[i] = F(v)
				if rawRow != nil {
					rawRow[i] = F(r)
				}
			}
			if kind != KindSoftmax || math.IsInf(mx, -1) {
				continue
			}
			var sum float64
			for i := range row {
				if keepRow != nil && keepRow[i] == 0 {
					continue
				}
				e := exp(float64(row[i]) - mx)
				row[i] = F(e)
				sum += e
			}
			for i := range row {
				row[i] = F(float64(row[i]) / sum)
			}
		}
	}
	if fast && kind == KindSoftmax {
		// The rows of the sequences lo..hi-1, eight at a time where it
		// applies: dotWeights' values.
		o, rows := lo*a.tq*a.tk, (hi-lo)*a.tq
		softmaxWeightRows(a.g, raw[o:o+rows*a.tk], w[o:o+rows*a.tk], rows, a.tk)
	}
}

// kernelDG is kernelBackward's dg alone, without a mask: one pass over W,
// dW and the raw scores, the terms added to dg0 row by row.
func kernelDG[F float32 | float64](kind KernelKind, a kernelArgs, w, dw, raw []F, dg0 float64) float64 {
	dg := dg0
	n := a.tk
	if kind == KindSoftmax && n > 0 {
		return kernelDGSoftmax(n, w, dw, raw, dg0)
	}
	for o := 0; o+n <= len(w); o += n {
		wr, dr, rr := w[o:o+n], dw[o:o+n], raw[o:o+n]
		dr, rr = dr[:len(wr)], rr[:len(wr)]
		switch kind {
		case KindSoftmax:
			var rs float64
			for i, wi := range wr {
				rs += float64(wi) * float64(dr[i])
			}
			for i, wi := range wr {
				dg += float64(wi) * (float64(dr[i]) - rs) * float64(rr[i])
			}
		case KindExp:
			for i, wi := range wr {
				dg += float64(wi) * float64(dr[i]) * float64(rr[i])
			}
		case KindRBF:
			for i, wi := range wr {
				dg -= float64(wi) * float64(dr[i]) * float64(rr[i])
			}
		case KindLaplacian:
			for i, wi := range wr {
				dg -= float64(wi) * float64(dr[i]) * math.Sqrt(float64(rr[i]))
			}
		}
	}
	return dg
}

// kernelDGSoftmax is kernelDG for the softmax kernel (rows of n > 0): the
// same sums in the same order, the row sums Σ_i W dW of four rows at a time
// (their chains of additions overlap), then each row's terms of dg in turn.
func kernelDGSoftmax[F float32 | float64](n int, w, dw, raw []F, dg0 float64) float64 {
	dg := dg0
	var rs [4]float64
	rows := len(w) / n
	for r0 := 0; r0 < rows; r0 += 4 {
		h := min(4, rows-r0)
		if h == 4 {
			o := r0 * n
			w0, w1, w2, w3 := w[o:o+n], w[o+n:o+2*n], w[o+2*n:o+3*n], w[o+3*n:o+4*n]
			d0, d1, d2, d3 := dw[o:o+n], dw[o+n:o+2*n], dw[o+2*n:o+3*n], dw[o+3*n:o+4*n]
			w1, w2, w3 = w1[:len(w0)], w2[:len(w0)], w3[:len(w0)]
			d0, d1, d2, d3 = d0[:len(w0)], d1[:len(w0)], d2[:len(w0)], d3[:len(w0)]
			var s0, s1, s2, s3 float64
			for i := range w0 {
				s0 += float64(w0[i]) * float64(d0[i])
				s1 += float64(w1[i]) * float64(d1[i])
				s2 += float64(w2[i]) * float64(d2[i])
				s3 += float64(w3[i]) * float64(d3[i])
			}
			rs = [4]float64{s0, s1, s2, s3}
		} else {
			for r := 0; r < h; r++ {
				o := (r0 + r) * n
				var s float64
				for i, wi := range w[o : o+n] {
					s += float64(wi) * float64(dw[o+i])
				}
				rs[r] = s
			}
		}
		for r := 0; r < h; r++ {
			o := (r0 + r) * n
			wr, dr, rr := w[o:o+n], dw[o:o+n], raw[o:o+n]
			if is32[F]() {
				dg += dgRow32(wr, dr, rr, rs[r])
				continue
			}
			for i, wi := range wr {
				dg += float64(wi) * (float64(dr[i]) - rs[r]) * float64(rr[i])
			}
		}
	}
	return dg
}

// dgRow32 is Σ_i w_i (dw_i − rs) raw_i in float64 for a float32 row, in four
// chains of additions (i mod 4) added at the end, so that they overlap
// (float64 rows keep one chain in index order).
func dgRow32[F float32 | float64](w, dw, raw []F, rs float64) float64 {
	dw, raw = dw[:len(w)], raw[:len(w)]
	var d0, d1, d2, d3 float64
	i := 0
	for ; i+4 <= len(w); i += 4 {
		d0 += float64(w[i]) * (float64(dw[i]) - rs) * float64(raw[i])
		d1 += float64(w[i+1]) * (float64(dw[i+1]) - rs) * float64(raw[i+1])
		d2 += float64(w[i+2]) * (float64(dw[i+2]) - rs) * float64(raw[i+2])
		d3 += float64(w[i+3]) * (float64(dw[i+3]) - rs) * float64(raw[i+3])
	}
	for ; i < len(w); i++ {
		d0 += float64(w[i]) * (float64(dw[i]) - rs) * float64(raw[i])
	}
	return (d0 + d1) + (d2 + d3)
}

// dotWeights sets the weights of one query row from its scores q·k_i for
// the dot-product kernels (linear, exp, softmax), as kernelForward does,
// the exponentials fused into one pass over the row (expRowFast32's fast
// exponential for float32 weights, math.Exp for float64).
func dotWeights[F float32 | float64](kind KernelKind, g float64, raw, row []F) {
	switch kind {
	case KindLinear:
		copy(row, raw)
	case KindExp:
		if r32, ok := any(raw).([]float32); ok {
			expRowFast32(any(row).([]float32), r32, float32(g), 0)
			return
		}
		expRowSum(row, raw, g, 0)
	case KindSoftmax:
		var mx float64
		if g > 0 && len(raw) > 0 {
			// max_i g·r_i = g·max_i r_i; a NaN score makes its weights
			// NaN through exp below either way.
			var mr F
			if r32, ok := any(raw).([]float32); ok {
				mr = F(maxScaledF32(r32, 1)) // 1·r = r exactly
			} else {
				mr = raw[0]
				for _, r := range raw[1:] {
					if r > mr {
						mr = r
					}
				}
			}
			mx = g * float64(mr)
		} else {
			mx = math.Inf(-1)
			for _, r := range raw {
				if v := g * float64(r); v > mx || v != v {
					mx = v
				}
			}
		}
		if r32, ok := any(raw).([]float32); ok {
			scaleRowF(row, 1/expRowFast32(any(row).([]float32), r32, float32(g), float32(mx)))
			return
		}
		scaleRowF(row, 1/expRowSum(row, raw, g, mx))
	}
}

// kernelBackward accumulates the gradients of a loss L with respect to q, k
// and g, given W and dW = dL/dW. Masked pairs have W = 0 and contribute
// nothing. Only the slices that are non-nil are written.
//
// raw holds the forward pass's raw scores (see kernelForward); dg uses them
// instead of recomputing q·k or ||q − k||², and the distances of the
// Laplacian kernel come from them. (float32 raw scores are rounded to
// float32: dg then carries float32 rounding, as the rest of a float32
// gradient does.)
func kernelBackward[F float32 | float64](kind KernelKind, a kernelArgs, q, k, keep, w, dw, dq, dk, raw []F, needDG bool) float64 {
	if dq == nil && dk == nil && keep == nil {
		return kernelDG(kind, a, w, dw, raw, 0)
	}
	if !needDG {
		// Without dg's chain over the whole batch the sequences are
		// independent: two halves on two goroutines when GOMAXPROCS > 1
		// and the work is large (the same dq and dk).
		if kernelRowsBackward(kind, a.d, any(dq), any(dk)) {
			q32, k32, keep32, w32 := any(q).([]float32), any(k).([]float32), any(keep).([]float32), any(w).([]float32)
			dw32, dq32, dk32, raw32 := any(dw).([]float32), any(dq).([]float32), any(dk).([]float32), any(raw).([]float32)
			parallelRows(a.b, a.tq*a.tk*max(a.d, 1), func(lo, hi int) {
				kernelBackwardRows32(kind, a, q32, k32, keep32, w32, dw32, dq32, dk32, raw32, false, lo, hi)
			})
			return 0
		}
		parallelRows(a.b, a.tq*a.tk*max(a.d, 1), func(lo, hi int) {
			kernelBackwardSeqs(kind, a, q, k, keep, w, dw, dq, dk, raw, lo, hi)
		})
		return 0
	}
	return kernelBackwardSeqs(kind, a, q, k, keep, w, dw, dq, dk, raw, 0, a.b)
}

// kernelBackwardSeqs is kernelBackward on the sequences lo..hi-1; it
// returns their dg, the terms added in order.
func kernelBackwardSeqs[F float32 | float64](kind KernelKind, a kernelArgs, q, k, keep, w, dw, dq, dk, raw []F, lo, hi int) float64 {
	if kernelRowsBackward(kind, a.d, any(dq), any(dk)) {
		return kernelBackwardRows32(kind, a, any(q).([]float32), any(k).([]float32), any(keep).([]float32), any(w).([]float32),
			any(dw).([]float32), any(dq).([]float32), any(dk).([]float32), any(raw).([]float32), true, lo, hi)
	}
	d := a.d
	var dg float64
	diff := make([]float64, d)
	for b := lo; b < hi; b++ {
		for j := 0; j < a.tq; j++ {
			qj := q[(b*a.tq+j)*d : (b*a.tq+j+1)*d]
			o := (b*a.tq + j) * a.tk
			var rowSum float64 // softmax: Σ_i W dW over the row
			if kind == KindSoftmax {
				for i := 0; i < a.tk; i++ {
					rowSum += float64(w[o+i]) * float64(dw[o+i])
				}
			}
			for i := 0; i < a.tk; i++ {
				if keep != nil && keep[o+i] == 0 {
					continue
				}
				ki := k[(b*a.tk+i)*d : (b*a.tk+i+1)*d]
				wi, dwi := float64(w[o+i]), float64(dw[o+i])
				// cq and ck are the coefficients of k_i in dq_j and of q_j in
				// dk_i for the dot-product kernels; cd those of (q_j − k_i)
				// in dq_j (and −cd in dk_i) for the distance kernels.
				var cq, cd float64
				switch kind {
				case KindLinear:
					cq = dwi
				case KindExp:
					e := dwi * wi
					cq = a.g * e
					dg += e * float64(raw[o+i])
				case KindSoftmax:
					e := wi * (dwi - rowSum)
					cq = a.g * e
					dg += e * float64(raw[o+i])
				case KindRBF:
					e := dwi * wi
					cd = -2 * a.g * e
					dg -= e * float64(raw[o+i])
				case KindLaplacian:
					e := dwi * wi
					r := math.Sqrt(float64(raw[o+i]))
					dg -= e * r
					if r > 0 {
						cd = -a.g * e / r
					}
				}
				if cq != 0 {
					if dq != nil {
						axpyRound(dq[(b*a.tq+j)*d:(b*a.tq+j+1)*d], ki, cq)
					}
					if dk != nil {
						axpyRound(dk[(b*a.tk+i)*d:(b*a.tk+i+1)*d], qj, cq)
					}
				}
				if cd != 0 {
					for c := range diff {
						diff[c] = float64(qj[c]) - float64(ki[c])
					}
					if dq != nil {
						dqj := dq[(b*a.tq+j)*d : (b*a.tq+j+1)*d]
						for c := range dqj {
							dqj[c] += F(cd * diff[c])
						}
					}
					if dk != nil {
						dki := dk[(b*a.tk+i)*d : (b*a.tk+i+1)*d]
						for c := range dki {
							dki[c] -= F(cd * diff[c])
						}
					}
				}
			}
		}
	}
	return dg
}

// sqDistScratch holds sqDists' buffers, reused from one sequence to the
// next.
type sqDistScratch struct {
	qn, kn, dist, q64, k64 []float64
}

// sqDistPool keeps the scratches of sqDists between calls.
var sqDistPool sync.Pool

// getSqDistScratch returns a scratch from sqDistPool, or a new one.
func getSqDistScratch() *sqDistScratch {
	if sd, ok := sqDistPool.Get().(*sqDistScratch); ok {
		return sd
	}
	return new(sqDistScratch)
}

// sqDistRefine is the fraction of ||q||² + ||k||² below which sqDists
// recomputes a squared distance directly: the cancellation in ||q||² +
// ||k||² − 2 q·k loses about log2(1/fraction) bits, so every distance it
// keeps carries a relative error of at most about (d + 2)·2⁻⁵²·2¹⁰ (2⁻³⁸
// at d = 10: far below float32 rounding, and a few float64 units).
const sqDistRefine = 1.0 / 1024

// sqDists returns the squared distances ||q_j − k_i||² (Tq×Tk, float64) of
// one sequence's queries q (Tq×d) and keys k (Tk×d) as ||q_j||² + ||k_i||² −
// 2 q_j·k_i: one matrix product of the dot products (Gemm, in float64 for
// either dtype) plus the rows' norms, instead of a loop over the pairs and
// their d differences. A pair whose distance is small against the norms
// (the cancellation would cost precision: a query against itself or a near
// duplicate) is recomputed directly from its differences, so it is exact
// where it matters most (0 for a point and itself, which the Laplacian
// kernel's √r and its gradient are sensitive to).
func sqDists[F float32 | float64](sd *sqDistScratch, tq, tk, d int, q, k []F) []float64 {
	sd.qn, sd.kn, sd.dist = grow(sd.qn, tq), grow(sd.kn, tk), grow(sd.dist, tq*tk)
	var q64, k64 []float64
	switch qq := any(q).(type) {
	case []float64:
		q64, k64 = qq, any(k).([]float64)
	case []float32:
		sd.q64, sd.k64 = grow(sd.q64, tq*d), grow(sd.k64, tk*d)
		q64, k64 = sd.q64, sd.k64
		for i, v := range qq {
			q64[i] = float64(v)
		}
		for i, v := range any(k).([]float32) {
			k64[i] = float64(v)
		}
	}
	for j := range sd.qn {
		sd.qn[j] = dot(q64[j*d:(j+1)*d], q64[j*d:(j+1)*d])
	}
	for i := range sd.kn {
		sd.kn[i] = dot(k64[i*d:(i+1)*d], k64[i*d:(i+1)*d])
	}
	dist := sd.dist
	if tq == 0 || tk == 0 {
		return dist
	}
	Gemm(false, true, tq, tk, d, -2, q64, max(1, d), k64, max(1, d), 0, dist, tk)
	for j := 0; j < tq; j++ {
		qn, row := sd.qn[j], dist[j*tk:(j+1)*tk]
		for i, kn := range sd.kn {
			n := qn + kn
			r := n + row[i]
			if !(r >= sqDistRefine*n) { // also NaN and r < 0
				r = sqdist(q[j*d:(j+1)*d], k[i*d:(i+1)*d])
			}
			row[i] = r
		}
	}
	return dist
}

func dot[F float32 | float64](a, b []F) float64 {
	var s float64
	for i, v := range a {
		s += float64(v) * float64(b[i])
	}
	return s
}

func sqdist[F float32 | float64](a, b []F) float64 {
	var s float64
	for i, v := range a {
		t := float64(v) - float64(b[i])
		s += t * t
	}
	return s
}

// KernelGradOp returns dL/d(input wrt) of a KernelOp. Inputs: the forward
// inputs, then W and dW.
type KernelGradOp struct {
	fwd KernelOp // a copy of the forward op, sharing its cache
	wrt int      // 0: q, 1: k, 2: g
}

// Forward is the forward op whose gradient this op computes (a copy
// holding the same parameters and sharing its cache).
func (op *KernelGradOp) Forward() *KernelOp { return &op.fwd }

// Wrt is the input the gradient is taken with respect to: 0 for q, 1 for
// k, 2 for g.
func (op *KernelGradOp) Wrt() int { return op.wrt }

func (op *KernelGradOp) ReturnsPtr() bool     { return false }
func (op *KernelGradOp) CallsExtern() bool    { return false }
func (op *KernelGradOp) OverwritesInput() int { return -1 }

func (op *KernelGradOp) Arity() int { return op.fwd.Arity() + 2 }
func (op *KernelGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t3 := &G.TensorType{Dims: 3, Of: a}
	ts := []hm.Type{t3, t3}
	if op.fwd.learnG {
		ts = append(ts, a)
	}
	if op.fwd.masked {
		ts = append(ts, t3)
	}
	ts = append(ts, t3, t3)
	if op.wrt == 2 {
		return hm.NewFnType(append(ts, a)...)
	}
	return hm.NewFnType(append(ts, t3)...)
}
func (op *KernelGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	if op.wrt == 2 {
		return tensor.ScalarShape(), nil
	}
	s, ok := in[op.wrt].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("ops: kernel gradient: cannot infer shape from %v", in[op.wrt])
	}
	return s.Clone(), nil
}
func (op *KernelGradOp) WriteHash(h hash.Hash) {
	op.fwd.WriteHash(h)
	fmt.Fprintf(h, " grad wrt %d", op.wrt)
}
func (op *KernelGradOp) Hashcode() uint32 { return hashOf(op) }
func (op *KernelGradOp) String() string {
	return fmt.Sprintf("KernelGrad{%s,%d}", op.fwd.kind, op.wrt)
}
func (op *KernelGradOp) DiffWRT(n int) []bool { return make([]bool, n) }
func (op *KernelGradOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("ops: kernel gradients are not differentiable")
}

func (op *KernelGradOp) Do(vals ...G.Value) (G.Value, error) {
	nf := op.fwd.Arity()
	if len(vals) != nf+2 {
		return nil, fmt.Errorf("ops: kernel gradient: %d inputs, want %d", len(vals), nf+2)
	}
	a, err := op.fwd.unpack(vals[:nf])
	if err != nil {
		return nil, err
	}
	switch q := vals[0].Data().(type) {
	case []float64:
		return kernelGradDo(op, a, vals, q, nf)
	case []float32:
		return kernelGradDo(op, a, vals, q, nf)
	}
	return nil, fmt.Errorf("ops: kernel gradient: unsupported data %T", vals[0].Data())
}

func kernelGradDo[F float32 | float64](op *KernelGradOp, a kernelArgs, vals []G.Value, q []F, nf int) (G.Value, error) {
	k, ok1 := vals[1].Data().([]F)
	w, ok2 := vals[nf].Data().([]F)
	dw, ok3 := vals[nf+1].Data().([]F)
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("ops: kernel gradient: mixed dtypes")
	}
	var keep []F
	if op.fwd.masked {
		keep, _ = vals[nf-1].Data().([]F)
	}
	if len(q) == 0 || len(k) == 0 || len(w) == 0 || len(dw) != len(w) {
		return nil, fmt.Errorf("ops: kernel gradient: empty or mismatched inputs")
	}
	c := op.fwd.c
	fresh := c.gradValid && c.gq == any(&q[0]) && c.gk == any(&k[0]) && c.gw == any(&w[0]) && c.gdw == any(&dw[0])
	if !fresh {
		// One pass for all gradients this node's backward needs; the
		// other gradient ops of the node read them from the cache.
		raw, _ := c.raw.([]F)
		if !(c.rawValid && c.q == any(&q[0]) && c.k == any(&k[0]) && c.w == any(&w[0]) && len(raw) == len(w)) {
			raw = make([]F, len(w))
			kernelForward(op.fwd.kind, a, q, k, keep, make([]F, len(w)), raw)
		}
		var dq, dk []F
		if !op.fwd.dataQK {
			dq, _ = c.dq.([]F)
			dk, _ = c.dk.([]F)
			dq, dk = grow(dq, len(q)), grow(dk, len(k))
			clear(dq)
			clear(dk)
			c.dq, c.dk = dq, dk
		}
		c.dg = kernelBackward(op.fwd.kind, a, q, k, keep, w, dw, dq, dk, raw, op.fwd.learnG)
		c.gq, c.gk, c.gw, c.gdw = &q[0], &k[0], &w[0], &dw[0]
		c.gradValid = true
	}
	switch op.wrt {
	case 0, 1:
		src, shape := c.dq, vals[0].Shape()
		if op.wrt == 1 {
			src, shape = c.dk, vals[1].Shape()
		}
		g, ok := src.([]F)
		if !ok {
			return nil, fmt.Errorf("ops: kernel gradient: no gradient for input %d", op.wrt)
		}
		return tensor.New(tensor.WithShape(shape.Clone()...), tensor.WithBacking(append([]F(nil), g...))), nil
	}
	if is32[F]() {
		return G.NewF32(float32(c.dg)), nil
	}
	return G.NewF64(c.dg), nil
}
