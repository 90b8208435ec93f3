package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	gemmpkg "github.com/gdattn/gdattn/gemm" // head.go has a gemm of its own
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MatMul returns op(a)·op(b), where op transposes when transA/transB: a is
// (M, K) (or (K, M) transposed), b is (K, N) (or (N, K)), the result (M, N).
//
// A node of rank above 2 counts as the matrix of its rows: (B, T, K) is the
// (B·T, K) matrix. An untransposed a of rank above 2 gives a result with
// a's leading dimensions, (B, T, K)·(K, N) = (B, T, N), so token tensors need
// no reshape (which copies) around a projection; b of rank above 2 is
// allowed with transA and not transB only (the weight gradient aᵀ·b of two
// token tensors).
//
// gdattn uses it instead of G.Mul with G.Transpose: Gorgonia's matrix
// product materialises every transpose (its own and those of its backward
// pass) through a strided iterator copy, while this op hands the transpose
// flags to Gemm, forward and backward.
func MatMul(a, b *G.Node, transA, transB bool) (*G.Node, error) {
	if a == nil || b == nil {
		return nil, fmt.Errorf("ops: MatMul of a nil node")
	}
	as, bs := a.Shape(), b.Shape()
	if len(as) < 2 || len(bs) < 2 {
		return nil, fmt.Errorf("ops: MatMul: shapes %v and %v, want matrices", as, bs)
	}
	if len(bs) > 2 || len(as) > 2 && transA {
		// aᵀ·b of two token tensors: the same leading dimensions.
		same := len(as) == len(bs) && transA && !transB
		for i := 0; same && i+1 < len(as); i++ {
			same = as[i] == bs[i]
		}
		if !same {
			return nil, fmt.Errorf("ops: MatMul: shapes %v and %v (transposed %v, %v): a rank above 2 is allowed for an untransposed a, or for aᵀ·b with the same leading dimensions", as, bs, transA, transB)
		}
	}
	op := &MatMulOp{transA: transA, transB: transB, ra: len(as), rb: len(bs), dataA: IsData(a), dataB: IsData(b)}
	_, ka, _ := op.dims(as, bs)
	kb := rows(bs)
	if transB {
		kb = bs[len(bs)-1]
	}
	if ka != kb {
		return nil, fmt.Errorf("ops: MatMul: inner dimensions differ: %v (transposed %v) and %v (transposed %v)", as, transA, bs, transB)
	}
	if a.Dtype() != b.Dtype() {
		return nil, fmt.Errorf("ops: MatMul: dtypes %v and %v differ", a.Dtype(), b.Dtype())
	}
	if err := checkFloat(a.Dtype()); err != nil {
		return nil, fmt.Errorf("ops: MatMul: %w", err)
	}
	return G.ApplyOp(op, a, b)
}

// MatMulOp is [MatMul]'s op: op(a)·op(b), a node of rank above 2 counting
// as the matrix of its rows.
type MatMulOp struct {
	transA, transB bool
	ra, rb         int  // the ranks of a and b
	dataA, dataB   bool // IsData of the inputs: no gradient for them
	oneHotState         // the one-hot shortcut (fused_onehot.go)
}

// TransA and TransB report whether a and b are transposed.
func (op *MatMulOp) TransA() bool { return op.transA }

// TransB: see TransA.
func (op *MatMulOp) TransB() bool { return op.transB }

// Ranks are the ranks of a and b.
func (op *MatMulOp) Ranks() (ra, rb int) { return op.ra, op.rb }

// Data reports, for a and b, whether the input is data ([IsData]): no
// gradient is computed for it.
func (op *MatMulOp) Data() (a, b bool) { return op.dataA, op.dataB }

// outRank is the rank of the result.
func (op *MatMulOp) outRank() int {
	if !op.transA && op.ra > 2 {
		return op.ra
	}
	return 2
}

func (op *MatMulOp) Arity() int { return 2 }
func (op *MatMulOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(&G.TensorType{Dims: op.ra, Of: a}, &G.TensorType{Dims: op.rb, Of: a}, &G.TensorType{Dims: op.outRank(), Of: a})
}

// dims are the sizes of the product as matrices: op(a) is m×k, op(b) k×n.
func (op *MatMulOp) dims(as, bs tensor.Shape) (m, k, n int) {
	m, k = rows(as), as[len(as)-1]
	if op.transA {
		m, k = k, m
	}
	n = bs[len(bs)-1]
	if op.transB {
		n = rows(bs)
	}
	return m, k, n
}

func (op *MatMulOp) outShape(as, bs tensor.Shape) tensor.Shape {
	m, _, n := op.dims(as, bs)
	if op.outRank() > 2 {
		return append(as[:len(as)-1].Clone(), n)
	}
	return tensor.Shape{m, n}
}

func (op *MatMulOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	as, ok1 := in[0].(tensor.Shape)
	bs, ok2 := in[1].(tensor.Shape)
	if !ok1 || !ok2 || len(as) != op.ra || len(bs) != op.rb {
		return nil, fmt.Errorf("ops: matmul: cannot infer shape from %v, %v", in[0], in[1])
	}
	return op.outShape(as, bs), nil
}
func (op *MatMulOp) ReturnsPtr() bool     { return false }
func (op *MatMulOp) CallsExtern() bool    { return false }
func (op *MatMulOp) OverwritesInput() int { return -1 }
func (op *MatMulOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.mm %v %v", op.transA, op.transB)
	if op.ra > 2 || op.rb > 2 {
		fmt.Fprintf(h, " ranks %d %d", op.ra, op.rb)
	}
	if op.dataA || op.dataB {
		fmt.Fprintf(h, " data %v %v", op.dataA, op.dataB)
	}
}
func (op *MatMulOp) Hashcode() uint32 { return hashOf(op) }
func (op *MatMulOp) String() string   { return fmt.Sprintf("MatMul{%v,%v}", op.transA, op.transB) }

func (op *MatMulOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *MatMulOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) { return op.do(p, vals) }

func (op *MatMulOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("ops: matmul: %d inputs, want 2", len(vals))
	}
	as, bs := vals[0].Shape(), vals[1].Shape()
	if len(as) != op.ra || len(bs) != op.rb {
		return nil, fmt.Errorf("ops: matmul: shapes %v and %v, want ranks %d and %d", as, bs, op.ra, op.rb)
	}
	m, k, n := op.dims(as, bs)
	lda, ldb := max(1, as[len(as)-1]), max(1, bs[len(bs)-1])
	out := op.outShape(as, bs)
	switch a := vals[0].Data().(type) {
	case []float64:
		b, ok := vals[1].Data().([]float64)
		if !ok {
			return nil, fmt.Errorf("ops: matmul: mixed dtypes")
		}
		c := outBuf[float64](p, m*n, k == 0)
		if k == 0 || !oneHotDo(op, m, n, k, a, b, c) {
			Gemm(op.transA, op.transB, m, n, k, 1, a, lda, b, ldb, 0, c, max(1, n))
		}
		return wrapOut(p, out, c), nil
	case []float32:
		b, ok := vals[1].Data().([]float32)
		if !ok {
			return nil, fmt.Errorf("ops: matmul: mixed dtypes")
		}
		c := outBuf[float32](p, m*n, k == 0)
		switch {
		case k != 0 && oneHotDo(op, m, n, k, a, b, c):
		case shortMatMul(op.transA, m, n, k):
			tokenGemm(op.transB, m, n, k, a, lda, b, ldb, 0, c, max(1, n))
		default:
			Gemm(op.transA, op.transB, m, n, k, 1, a, lda, b, ldb, 0, c, max(1, n))
		}
		return wrapOut(p, out, c), nil
	}
	return nil, fmt.Errorf("ops: matmul: unsupported data %T", vals[0].Data())
}

func (op *MatMulOp) DiffWRT(int) []bool { return []bool{!op.dataA, !op.dataB} }

// SymDiff: for C = op(A)·op(B), the gradients are again products (none
// for a data input).
func (op *MatMulOp) SymDiff(in G.Nodes, output, dc *G.Node) (G.Nodes, error) {
	a, b := in[0], in[1]
	var da, db *G.Node
	var err error
	grad := func(want bool, x, y *G.Node, tx, ty bool) *G.Node {
		if !want || err != nil {
			return nil
		}
		var n *G.Node
		n, err = MatMul(x, y, tx, ty)
		return n
	}
	switch {
	case !op.transA && !op.transB: // C = A B
		da = grad(!op.dataA, dc, b, false, true)
		db = grad(!op.dataB, a, dc, true, false)
	case !op.transA && op.transB: // C = A Bᵀ
		da = grad(!op.dataA, dc, b, false, false)
		db = grad(!op.dataB, dc, a, true, false)
		op.shareHot(db) // dB = dCᵀ·A reads the rows of A this op scanned
	case op.transA && !op.transB: // C = Aᵀ B
		da = grad(!op.dataA, b, dc, false, true)
		db = grad(!op.dataB, a, dc, false, false)
	default: // C = Aᵀ Bᵀ
		da = grad(!op.dataA, b, dc, true, true)
		db = grad(!op.dataB, dc, a, true, true)
	}
	if err != nil {
		return nil, err
	}
	return G.Nodes{da, db}, nil
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C on row-major slices (op
// transposes when tA/tB; C is m×n, the inner dimension k) with package
// gemm: packed, cache-blocked, on AVX-512 or AVX2/FMA micro-kernels where
// the machine has them, over GOMAXPROCS goroutines for large products.
// Every element of C is one chain of fused multiply-adds over k, in order
// (see gemm's package documentation), whatever the path, blocking or number
// of goroutines.
//
// Narrow products (at most 16 columns of C and at least 4 rows, or in
// float32 a few rows of Aᵀ·B deep in k) run on [mulAddRows]' kernels,
// which compute the same chains for several rows side by side (see
// narrowGemm): the same bits, several times faster than gemm's one row at a
// time for the n = 5 products of the expectation op and the TF layers.
//
// Gemm panics, as a BLAS does, when a size, leading dimension or slice
// does not fit: the calling op has checked its shapes, so that is a bug.
func Gemm[F float32 | float64](tA, tB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) {
	if narrowGemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) {
		return
	}
	if err := gemmpkg.Gemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); err != nil {
		panic("ops: " + err.Error())
	}
}

// shortMatMul reports whether a float32 MatMulOp product goes to tokenGemm
// (mulAddRows' kernels when they run, the same bits as Gemm): op(A) not
// transposed, a short k (≤ 16: the TF heads' d' = 5 projections) and a
// narrow n (≤ 64), where gemm's packed path spends as long copying A into
// its panels as multiplying; only up to the work at which narrowGemm
// would split the rows over goroutines (BenchmarkShortMatMul).
func shortMatMul(tA bool, m, n, k int) bool {
	return !tA && k >= 1 && k <= 16 && n > 16 && n <= 64 && 2*m*n*k < 8<<20
}

// HaveRowKernel reports whether Gemm and MulAddRow run on assembly kernels
// (AVX-512 or AVX2/FMA) on this machine; false means the portable Go ones
// (another architecture, or the purego build tag).
func HaveRowKernel() bool { return gemmpkg.Name() != "go" }

// MulAddRow sets (acc false) or increments (acc true) c[j], j < n, by
// Σ_{l<k} a[l·inca]·b[l·ldb + j]: one row of a matrix product whose left
// factor's row is read with stride inca (1 for a row of A, the row length
// of A for a column of A, that is a row of Aᵀ), on gemm's row kernels (the
// same chain of fused multiply-adds as Gemm). It panics, like a slice
// expression, when a, b or c is too short.
func MulAddRow[F float32 | float64](c, a []F, inca int, b []F, ldb, k, n int, acc bool) {
	if err := gemmpkg.MulAddRow(c, a, inca, b, ldb, k, n, acc); err != nil {
		panic("ops: " + err.Error())
	}
}
