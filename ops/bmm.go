package ops

import (
	"fmt"
	"hash"
	"runtime"
	"sync"

	"github.com/chewxy/hm"
	gemmpkg "github.com/gdattn/gdattn/gemm" // head.go has a gemm of its own
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BatchedMatMul returns op(a[i])·op(b[i]) for every i of the leading axis,
// where op transposes when transA/transB: a is (B, M, K) (or (B, K, M)
// transposed), b is (B, K, N) (or (B, N, K)), the result (B, M, N).
//
// gdattn uses it instead of G.BatchedMatMul, which builds tensor views and
// allocates for every batch element (80k allocations per training step of
// the synthetic GD model): this op runs gemm.GemmBatched on the raw slices
// (the batch spread over goroutines when the products are small).
func BatchedMatMul(a, b *G.Node, transA, transB bool) (*G.Node, error) {
	if a == nil || b == nil {
		return nil, fmt.Errorf("ops: BatchedMatMul of a nil node")
	}
	as, bs := a.Shape(), b.Shape()
	if len(as) != 3 || len(bs) != 3 || as[0] != bs[0] {
		return nil, fmt.Errorf("ops: BatchedMatMul: shapes %v and %v, want (B, ·, ·) both", as, bs)
	}
	ka, kb := as[2], bs[1]
	if transA {
		ka = as[1]
	}
	if transB {
		kb = bs[2]
	}
	if ka != kb {
		return nil, fmt.Errorf("ops: BatchedMatMul: inner dimensions differ: %v (transposed %v) and %v (transposed %v)", as, transA, bs, transB)
	}
	if a.Dtype() != b.Dtype() {
		return nil, fmt.Errorf("ops: BatchedMatMul: dtypes %v and %v differ", a.Dtype(), b.Dtype())
	}
	return G.ApplyOp(&BatchedMatMulOp{transA: transA, transB: transB}, a, b)
}

// BatchedMatMulOp is [BatchedMatMul]'s op.
type BatchedMatMulOp struct{ transA, transB bool }

// TransA and TransB report whether the a[i] and b[i] are transposed.
func (op *BatchedMatMulOp) TransA() bool { return op.transA }

// TransB: see TransA.
func (op *BatchedMatMulOp) TransB() bool { return op.transB }

func (op *BatchedMatMulOp) Arity() int { return 2 }
func (op *BatchedMatMulOp) Type() hm.Type {
	t := &G.TensorType{Dims: 3, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t, t)
}
func (op *BatchedMatMulOp) dims(as, bs tensor.Shape) (m, k, n int) {
	m, k = as[1], as[2]
	if op.transA {
		m, k = k, m
	}
	n = bs[2]
	if op.transB {
		n = bs[1]
	}
	return m, k, n
}
func (op *BatchedMatMulOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	as, ok1 := in[0].(tensor.Shape)
	bs, ok2 := in[1].(tensor.Shape)
	if !ok1 || !ok2 || len(as) != 3 || len(bs) != 3 {
		return nil, fmt.Errorf("ops: bmm: cannot infer shape from %v, %v", in[0], in[1])
	}
	m, _, n := op.dims(as, bs)
	return tensor.Shape{as[0], m, n}, nil
}
func (op *BatchedMatMulOp) ReturnsPtr() bool     { return false }
func (op *BatchedMatMulOp) CallsExtern() bool    { return false }
func (op *BatchedMatMulOp) OverwritesInput() int { return -1 }
func (op *BatchedMatMulOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.bmm %v %v", op.transA, op.transB)
}
func (op *BatchedMatMulOp) Hashcode() uint32 { return hashOf(op) }
func (op *BatchedMatMulOp) String() string   { return fmt.Sprintf("BMM{%v,%v}", op.transA, op.transB) }

func (op *BatchedMatMulOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *BatchedMatMulOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) {
	return op.do(p, vals)
}

func (op *BatchedMatMulOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("ops: bmm: %d inputs, want 2", len(vals))
	}
	as, bs := vals[0].Shape(), vals[1].Shape()
	m, k, n := op.dims(as, bs)
	B := as[0]
	sa, sb := as[1]*as[2], bs[1]*bs[2]
	lda, ldb := max(1, as[2]), max(1, bs[2])
	switch a := vals[0].Data().(type) {
	case []float64:
		b, ok := vals[1].Data().([]float64)
		if !ok {
			return nil, fmt.Errorf("ops: bmm: mixed dtypes")
		}
		c := outBuf[float64](p, B*m*n, k == 0)
		if narrowBatched(B, op.transA, op.transB, m, n, k, a, lda, sa, b, ldb, sb, c) {
			return wrapOut(p, tensor.Shape{B, m, n}, c), nil
		}
		if err := gemmpkg.GemmBatched(B, op.transA, op.transB, m, n, k, 1, a, lda, sa, b, ldb, sb, 0, c, max(1, n), m*n); err != nil {
			return nil, fmt.Errorf("ops: bmm: %w", err)
		}
		return wrapOut(p, tensor.Shape{B, m, n}, c), nil
	case []float32:
		b, ok := vals[1].Data().([]float32)
		if !ok {
			return nil, fmt.Errorf("ops: bmm: mixed dtypes")
		}
		c := outBuf[float32](p, B*m*n, k == 0)
		if narrowBatched(B, op.transA, op.transB, m, n, k, a, lda, sa, b, ldb, sb, c) {
			return wrapOut(p, tensor.Shape{B, m, n}, c), nil
		}
		if err := gemmpkg.GemmBatched(B, op.transA, op.transB, m, n, k, 1, a, lda, sa, b, ldb, sb, 0, c, max(1, n), m*n); err != nil {
			return nil, fmt.Errorf("ops: bmm: %w", err)
		}
		return wrapOut(p, tensor.Shape{B, m, n}, c), nil
	}
	return nil, fmt.Errorf("ops: bmm: unsupported data %T", vals[0].Data())
}

func (op *BatchedMatMulOp) DiffWRT(int) []bool { return []bool{true, true} }

// SymDiff: for C = op(A)·op(B), the gradients are again batched products.
func (op *BatchedMatMulOp) SymDiff(in G.Nodes, output, dc *G.Node) (G.Nodes, error) {
	a, b := in[0], in[1]
	var da, db *G.Node
	var err error
	switch {
	case !op.transA && !op.transB: // C = A B
		if da, err = BatchedMatMul(dc, b, false, true); err == nil {
			db, err = BatchedMatMul(a, dc, true, false)
		}
	case !op.transA && op.transB: // C = A Bᵀ
		if da, err = BatchedMatMul(dc, b, false, false); err == nil {
			db, err = BatchedMatMul(dc, a, true, false)
		}
	case op.transA && !op.transB: // C = Aᵀ B
		if da, err = BatchedMatMul(b, dc, false, true); err == nil {
			db, err = BatchedMatMul(a, dc, false, false)
		}
	default: // C = Aᵀ Bᵀ
		if da, err = BatchedMatMul(b, dc, true, true); err == nil {
			db, err = BatchedMatMul(dc, a, true, true)
		}
	}
	if err != nil {
		return nil, err
	}
	return G.Nodes{da, db}, nil
}

// narrowBatched computes the batched product C_i = op(A_i)·op(B_i) (C_i
// m×n, contiguous, B_i's rows ldb apart) with mulAddRows when C is narrow
// (n at most two vectors: the GD blocks' products with the d' = 5 columns of
// the residuals, their kernel weights' gradients over N = 10 keys) and has
// m ≥ 4 rows (narrowGemm's rule), and with dotCols32 when op(A_i) is one
// row and op(B_i) = B_iᵀ (float32); it reports false, touching nothing,
// otherwise. gemm runs such a product a row at a time, each row's few
// chains of multiply-adds waiting on their own latency; mulAddRows runs
// rows side by side, the same chains, so the same bits. The batch is spread over
// GOMAXPROCS goroutines as gemm.GemmBatched spreads it.
func narrowBatched[F float32 | float64](batch int, tA, tB bool, m, n, k int, a []F, lda, sa int, b []F, ldb, sb int, c []F) bool {
	if !haveNarrowAVX2 || !HaveRowKernel() || k < 1 || n == 0 || batch == 0 {
		return false
	}
	// One row times op(B_i) = B_iᵀ, float32 (the GD blocks' dL/dw at the
	// query, dE·rᵀ): the n dot products of B_i's rows with the row, eight
	// at a time (dotCols32: the same chains).
	cols := m == 1 && tB && is32[F]() && (!tA || lda == 1)
	if !cols && (n > narrowCols[F]() || m < 4) {
		return false
	}
	rsA, incA := lda, 1
	if tA {
		rsA, incA = 1, lda
	}
	one := func(i int, bt []F) {
		if cols {
			c32, a32, b32 := any(c).([]float32), any(a).([]float32), any(b).([]float32)
			dotCols32(&c32[i*n], &b32[i*sb], &a32[i*sa], ldb, k, n)
			return
		}
		bi, ld := b[i*sb:], ldb
		if tB { // B_i is n×k: its transpose, the rows of op(B_i), into bt
			transposeInto(bt, bi, ldb, n, k)
			bi, ld = bt, n
		}
		mulAddRows(m, n, k, a[i*sa:], rsA, incA, bi, ld, c[i*m*n:(i+1)*m*n], n, false)
	}
	run := func(lo, hi int) {
		var bt []F
		if tB && !cols {
			bt = make([]F, k*n)
		}
		for i := lo; i < hi; i++ {
			one(i, bt)
		}
	}
	// As gemm.GemmBatched: contiguous ranges of at least ~4 MFLOP each.
	const minFlops = 4 << 20
	work := 2 * float64(m) * float64(n) * float64(k) * float64(batch)
	parts := min(runtime.GOMAXPROCS(0), batch, max(1, int(work/minFlops)))
	if parts <= 1 {
		run(0, batch)
		return true
	}
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		lo, hi := p*batch/parts, (p+1)*batch/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(lo, hi)
		}()
	}
	wg.Wait()
	return true
}
