package ops

import (
	"math"
	"unsafe"

	G "gorgonia.org/gorgonia"
)

// One-hot products. The token encoder multiplies data matrices whose rows
// are one-hot or zero — the labels (B·T, C) times W_eᵀ, the all-ones column
// (B·T, 1) times w̄_eᵀ — and their backward passes multiply the gradient by
// the same matrices (dW_e = dWYᵀ·labels). As products these cost R·C·D
// multiply-adds for R·D useful numbers. MatMulOp takes the shortcut below
// when its data operand turns out, on this run, to have one-hot or zero
// rows (every entry 0 except at most one 1 per row); any other data runs
// the product.
//
// The values are those of the product's row kernels: a row of A·B is
// Σ_c A[r,c]·B[c,:] summed in order by fused multiply-adds from +0, in
// which the zero terms add ±0 to the chain and the one term adds B[h,:]
// exactly, so it is 0 + B[h,:]; a column of Aᵀ·B is the chain of the
// selected rows of A in row order, each step s + A[r,i] rounded once as the
// fused multiply-add s + A[r,i]·1 rounds it. Only non-finite values differ
// (the product turns 0·Inf into NaN, the shortcut skips it). Every path of
// package gemm computes each element as one such chain over k in order
// (see ops.Gemm), so the shortcut gives the product's values whatever the
// sizes and the instruction set.
//
// The data operand is scanned once per run: the gradient product dCᵀ·A
// reuses the hot columns its forward product found on A in the same run
// (its program always runs the forward product first).

// oneHotState is a MatMulOp's state for the shortcut: the hot columns of
// its data operand found on the last run (hot, for the data at src with n
// elements; ok false when it was not one-hot), and for the gradient of a
// product by a data A, the forward op that scanned A on this run.
type oneHotState struct {
	hot   []int32
	src   uintptr
	n     int
	ok    bool
	fwdOf *MatMulOp
}

// shareHot lets the gradient product g (dCᵀ·A, A op's data operand) reuse
// the hot columns op finds on each run instead of scanning A again.
func (op *MatMulOp) shareHot(g *G.Node) {
	if g == nil || !op.dataA {
		return
	}
	if gop, ok := g.Op().(*MatMulOp); ok {
		gop.fwdOf = op
	}
}

// hotRows sets hot[r] to the column of the 1 in row r of the R×C matrix x
// (-1 for a zero row) and reports whether every row is one-hot or zero.
// It reads the bits: ±0 has no bits but the sign, 1 is one pattern. On
// false, hot holds garbage.
func hotRows[F float32 | float64](x []F, R, C int, hot []int32) bool {
	for r := range hot[:R] {
		hot[r] = -1
	}
	if R*C == 0 {
		return true
	}
	switch x := any(x).(type) {
	case []float32:
		return hot32(unsafe.Slice((*uint32)(unsafe.Pointer(&x[0])), R*C), C, hot)
	case []float64:
		return hotBits(unsafe.Slice((*uint64)(unsafe.Pointer(&x[0])), R*C), 0, C, math.Float64bits(1), hot)
	}
	return false
}

// hotBits checks the elements x[i], at positions off+i of the matrix of
// C columns, marking their rows' hot columns.
func hotBits[U uint32 | uint64](x []U, off, C int, one U, hot []int32) bool {
	for i, v := range x {
		if v<<1 == 0 {
			continue // ±0
		}
		if v != one || !markHot(off+i, C, hot) {
			return false
		}
	}
	return true
}

// hot32 is hotBits for float32, skipping pairs of zeros eight bytes at a
// time (most entries of a one-hot matrix are zero).
func hot32(x []uint32, C int, hot []int32) bool {
	one := math.Float32bits(1)
	head := 0
	if uintptr(unsafe.Pointer(&x[0]))%8 != 0 {
		head = 1
	}
	if !hotBits(x[:head], 0, C, one, hot) {
		return false
	}
	pairs := (len(x) - head) / 2
	if pairs > 0 {
		w := unsafe.Slice((*uint64)(unsafe.Pointer(&x[head])), pairs)
		for p, v := range w {
			if v&0x7fffffff7fffffff == 0 {
				continue
			}
			i := head + 2*p
			if !hotBits(x[i:i+2], i, C, one, hot) {
				return false
			}
		}
	}
	tail := head + 2*pairs
	return hotBits(x[tail:], tail, C, one, hot)
}

// markHot records the 1 at position i of the matrix of C columns; false
// when its row already has one.
func markHot(i, C int, hot []int32) bool {
	r := i / C
	if hot[r] >= 0 {
		return false
	}
	hot[r] = int32(i - r*C)
	return true
}

// oneHot returns the hot columns of the data matrix x (R×C) on this run,
// or nil when x is not one-hot: those the forward op found, when op is
// the gradient of a product by the same data, else a scan of x.
func oneHot[F float32 | float64](op *MatMulOp, x []F, R, C int) []int32 {
	if len(x) < R*C || R*C == 0 {
		return nil
	}
	src := uintptr(unsafe.Pointer(&x[0]))
	if f := op.fwdOf; f != nil && f.src == src && f.n == R*C && len(f.hot) == R {
		if !f.ok {
			return nil
		}
		return f.hot
	}
	if cap(op.hot) < R {
		op.hot = make([]int32, R)
	}
	op.hot = op.hot[:R]
	op.src, op.n = src, R*C
	op.ok = hotRows(x, R, C, op.hot)
	if !op.ok {
		return nil
	}
	return op.hot
}

// oneHotRows sets c (R×N) to 0 + row hot[r] of b (row r zero for -1): a
// one-hot A times B. With bT, b is stored transposed (N×K): the row is
// column hot[r] of b.
func oneHotRows[F float32 | float64, I int32 | int](hot []I, b []F, K, N int, bT bool, c []F) {
	for r, h := range hot {
		row := c[r*N : (r+1)*N]
		if h < 0 {
			clear(row)
			continue
		}
		if bT {
			for j := range row {
				row[j] = 0 + b[j*K+int(h)]
			}
			continue
		}
		for j, v := range b[int(h)*N : int(h)*N+N] {
			row[j] = 0 + v
		}
	}
}

// oneHotCols sets c (M×C) to Aᵀ·X for a one-hot X (R×C, hot columns hot)
// and A (R×M): column j of c is the sum, in row order from +0, of the rows
// r of A with hot[r] = j.
func oneHotCols[F float32 | float64, I int32 | int](hot []I, a []F, M, C int, c []F) {
	clear(c[:M*C])
	for r, h := range hot {
		if h < 0 {
			continue
		}
		for i, v := range a[r*M : (r+1)*M] {
			c[i*C+int(h)] += v
		}
	}
}

// oneHotDo computes op's product by the shortcut when a data operand is
// one-hot on this run: A·B or A·Bᵀ for a data A, Aᵀ·B for a data B. It
// reports false, touching nothing, otherwise.
func oneHotDo[F float32 | float64](op *MatMulOp, m, n, k int, a, b, c []F) bool {
	switch {
	case op.dataA && !op.transA && !op.dataB:
		hot := oneHot(op, a, m, k)
		if hot == nil {
			return false
		}
		oneHotRows(hot, b, k, n, op.transB, c)
		return true
	case op.dataB && !op.dataA && op.transA && !op.transB:
		hot := oneHot(op, b, k, n)
		if hot == nil {
			return false
		}
		oneHotCols(hot, a, m, n, c)
		return true
	}
	return false
}
