package ops

import (
	"fmt"
	"hash"
	"runtime"

	"github.com/chewxy/hm"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
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
// flags to BLAS Gemm, forward and backward.
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

func (op *MatMulOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("ops: matmul: %d inputs, want 2", len(vals))
	}
	as, bs := vals[0].Shape(), vals[1].Shape()
	if len(as) != op.ra || len(bs) != op.rb {
		return nil, fmt.Errorf("ops: matmul: shapes %v and %v, want ranks %d and %d", as, bs, op.ra, op.rb)
	}
	m, k, n := op.dims(as, bs)
	lda, ldb := as[len(as)-1], bs[len(bs)-1]
	out := op.outShape(as, bs)
	switch a := vals[0].Data().(type) {
	case []float64:
		b, ok := vals[1].Data().([]float64)
		if !ok {
			return nil, fmt.Errorf("ops: matmul: mixed dtypes")
		}
		c := make([]float64, m*n)
		Gemm(op.transA, op.transB, m, n, k, 1, a, lda, b, ldb, 0, c, n)
		return tensor.New(tensor.WithShape(out...), tensor.WithBacking(c)), nil
	case []float32:
		b, ok := vals[1].Data().([]float32)
		if !ok {
			return nil, fmt.Errorf("ops: matmul: mixed dtypes")
		}
		c := make([]float32, m*n)
		Gemm(op.transA, op.transB, m, n, k, 1, a, lda, b, ldb, 0, c, n)
		return tensor.New(tensor.WithShape(out...), tensor.WithBacking(c)), nil
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
// transposes when tA/tB; C is m×n, the inner dimension k), with gonum's
// BLAS, arranged for the thin matrices of attention layers:
//
//   - gonum's kernels run a vector operation per row of C (an axpy of
//     length n for op(B) = B, a dot of length k for op(B) = Bᵀ), so a thin
//     B (at most 4096 values) is passed transposed when that makes the
//     vectors longer, and a product with a thin result Aᵀ·B is computed as
//     its transpose Bᵀ·A;
//   - with GOMAXPROCS = 1 a tall product is cut into bands of rows that
//     gonum runs serially, instead of its goroutine per 64×64 block.
//
// On amd64 with AVX2 and FMA, products with alpha 1 and beta 0 or 1 run on
// gdattn's own kernels instead (rowKernel32/64, mm_amd64.s): one row of C
// at a time, 32 columns per pass in vector registers, fused multiply-adds.
//
// The result is the same product; only the order of the floating-point
// additions (and, with FMA, their rounding) may differ.
func Gemm[F float32 | float64](tA, tB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) {
	if haveRowKernel && alpha == 1 && (beta == 0 || beta == 1) {
		if gemmRows(tA, tB, m, n, k, a, lda, b, ldb, beta == 1, c, ldc) {
			return
		}
	}
	const thin, small = 8, 4096
	switch {
	case !tA && !tB && n < thin && k >= 2*n && k*n <= small:
		// Rows of C as n dots of length k: B transposed (n×k).
		bt := make([]F, n*k)
		for l := 0; l < k; l++ {
			for j := 0; j < n; j++ {
				bt[j*k+l] = b[l*ldb+j]
			}
		}
		gemmBands(false, true, m, n, k, alpha, a, lda, bt, k, beta, c, ldc)
	case !tA && tB && k < thin && n >= 2*k && k*n <= small:
		// Rows of C as k axpys of length n: B (n×k) transposed (k×n).
		bt := make([]F, k*n)
		for j := 0; j < n; j++ {
			for l := 0; l < k; l++ {
				bt[l*n+j] = b[j*ldb+l]
			}
		}
		gemmBands(false, false, m, n, k, alpha, a, lda, bt, n, beta, c, ldc)
	case tA && !tB && n < thin && m >= 2*n && m*n <= small:
		// Cᵀ = Bᵀ A (n×m): axpys of length m instead of n.
		ct := make([]F, n*m)
		gemmBands(true, false, n, m, k, 1, b, ldb, a, lda, 0, ct, m)
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				v := alpha * ct[j*m+i]
				if beta != 0 {
					v += beta * row[j]
				}
				row[j] = v
			}
		}
	default:
		gemmBands(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
}

// gemmBands calls BLAS Gemm, in bands of rows when one thread runs Go.
func gemmBands[F float32 | float64](tA, tB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) {
	const band = 128 // rows; with n <= 64 gonum runs a band serially
	if m <= band || n > 64 || runtime.GOMAXPROCS(0) > 1 {
		gemmRaw(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	for r := 0; r < m; r += band {
		h := min(band, m-r)
		var ab []F
		if tA {
			ab = a[r:] // column offset r of the (k×m) A
		} else {
			ab = a[r*lda:]
		}
		gemmRaw(tA, tB, h, n, k, alpha, ab, lda, b, ldb, beta, c[r*ldc:], ldc)
	}
}

var blasImpl gonum.Implementation

func gemmRaw[F float32 | float64](tA, tB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) {
	ta, tb := blas.NoTrans, blas.NoTrans
	if tA {
		ta = blas.Trans
	}
	if tB {
		tb = blas.Trans
	}
	switch a := any(a).(type) {
	case []float64:
		blasImpl.Dgemm(ta, tb, m, n, k, float64(alpha), a, lda, any(b).([]float64), ldb, float64(beta), any(c).([]float64), ldc)
	case []float32:
		blasImpl.Sgemm(ta, tb, m, n, k, float32(alpha), a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
	}
}

// gemmRows is Gemm with the row kernels, for alpha = 1; acc adds to C
// (beta 1) instead of overwriting it (beta 0). It reports false, having done
// nothing, when the slices are too short for the sizes (Gemm's BLAS path
// then reports it) or a transposed B is too large to copy.
func gemmRows[F float32 | float64](tA, tB bool, m, n, k int, a []F, lda int, b []F, ldb int, acc bool, c []F, ldc int) bool {
	if m <= 0 || n <= 0 || k < 0 {
		return m == 0 || n == 0
	}
	if k == 0 {
		if !acc {
			for i := 0; i < m; i++ {
				clear(c[i*ldc : i*ldc+n])
			}
		}
		return true
	}
	// Shapes as stored: A is m×k (k×m transposed), B k×n (n×k).
	ar, ac := m, k
	if tA {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB {
		br, bc = n, k
	}
	if lda < ac || ldb < bc || ldc < n || len(a) < (ar-1)*lda+ac || len(b) < (br-1)*ldb+bc || len(c) < (m-1)*ldc+n {
		return false
	}
	if tB {
		if k*n > 1<<16 {
			return false
		}
		bt := make([]F, k*n)
		for j := 0; j < n; j++ {
			row := b[j*ldb : j*ldb+k]
			for l, v := range row {
				bt[l*n+j] = v
			}
		}
		b, ldb = bt, n
	}
	for i := 0; i < m; i++ {
		if tA {
			rowKernel(c[i*ldc:], a[i:], b, lda, ldb, k, n, acc)
		} else {
			rowKernel(c[i*ldc:], a[i*lda:], b, 1, ldb, k, n, acc)
		}
	}
	return true
}

// rowKernel calls rowKernel32 or rowKernel64 on the first elements of c, a
// and b (the caller has checked their lengths).
func rowKernel[F float32 | float64](c, a, b []F, inca, ldb, k, n int, acc bool) {
	switch c := any(c).(type) {
	case []float32:
		rowKernel32(&c[0], &any(a).([]float32)[0], &any(b).([]float32)[0], inca, ldb, k, n, acc)
	case []float64:
		rowKernel64(&c[0], &any(a).([]float64)[0], &any(b).([]float64)[0], inca, ldb, k, n, acc)
	}
}

// HaveRowKernel reports whether Gemm and MulAddRow run on gdattn's AVX2/FMA
// kernels on this machine.
func HaveRowKernel() bool { return haveRowKernel }

// MulAddRow sets (acc false) or increments (acc true) c[j], j < n, by
// Σ_{l<k} a[l·inca]·b[l·ldb + j]: one row of a matrix product whose left
// factor's row is read with stride inca (1 for a row of A, the row length
// of A for a column of A, that is a row of Aᵀ). It runs on the AVX2/FMA
// kernels where the machine has them. It panics, like a slice
// expression, when a, b or c is too short.
func MulAddRow[F float32 | float64](c, a []F, inca int, b []F, ldb, k, n int, acc bool) {
	if n <= 0 {
		return
	}
	if k <= 0 {
		if !acc {
			clear(c[:n])
		}
		return
	}
	_ = a[(k-1)*inca]
	_ = b[(k-1)*ldb+n-1]
	_ = c[n-1]
	if haveRowKernel {
		rowKernel(c, a, b, inca, ldb, k, n, acc)
		return
	}
	c = c[:n]
	if !acc {
		clear(c)
	}
	for l := 0; l < k; l++ {
		al := a[l*inca]
		br := b[l*ldb : l*ldb+n]
		for j, v := range br {
			c[j] += al * v
		}
	}
}

// dotRows sets out[j] = x · ys[j·stride : j·stride+len(x)] for every j of
// out, four rows at a time (four independent sums).
func dotRows[F float32 | float64](x, ys []F, stride int, out []F) {
	n := len(x)
	j := 0
	for ; j+4 <= len(out); j += 4 {
		y0 := ys[j*stride:][:n]
		y1 := ys[(j+1)*stride:][:n]
		y2 := ys[(j+2)*stride:][:n]
		y3 := ys[(j+3)*stride:][:n]
		var s0, s1, s2, s3 F
		for c, v := range x {
			s0 += v * y0[c]
			s1 += v * y1[c]
			s2 += v * y2[c]
			s3 += v * y3[c]
		}
		out[j], out[j+1], out[j+2], out[j+3] = s0, s1, s2, s3
	}
	for ; j < len(out); j++ {
		y := ys[j*stride:][:n]
		var s F
		for c, v := range x {
			s += v * y[c]
		}
		out[j] = s
	}
}
