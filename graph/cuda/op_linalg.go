package cuda

import (
	"github.com/gdattn/gdattn/ops"
)

// gemmOp is a (batched) matrix product on Backend.Gemm: for b < batch,
// C_b = op(A_b)·op(B_b) with A, B and C row-major and contiguous.
type gemmOp struct {
	transA, transB bool
	m, n, k        int
	lda, ldb       int
	sA, sB, sC     int64
	batch          int
}

func (g *gemmOp) run(x *Exec, v *value) error {
	return x.b.Gemm(v.dt, g.transA, g.transB, g.m, g.n, g.k, 1,
		v.ins[0].ptr, g.lda, g.sA, v.ins[1].ptr, g.ldb, g.sB,
		0, v.ptr, g.n, g.sC, g.batch)
}

// lowerLinAlg maps Gorgonia's linAlgBinOp: "A × B" (matrix product),
// "A ××× B" (batched, 3-d), "A × b" (matrix-vector), with the transposes
// the op records (linAlgArgs). Vector dot and outer products stay on the
// fallback.
func lowerLinAlg(v *value, transA, transB, batched bool) devOp {
	if len(v.ins) != 2 {
		return nil
	}
	as, bs := v.ins[0].shape, v.ins[1].shape
	switch {
	case batched:
		if len(as) != 3 || len(bs) != 3 || as[0] != bs[0] {
			return nil
		}
		return gemm3(v, transA, transB)
	case len(as) == 2 && len(bs) == 2:
		return gemm2(v, transA, transB)
	case len(as) == 2 && len(bs) == 1:
		// y = op(A)·x: a product with a k×1 matrix.
		m, k := as[0], as[1]
		if transA {
			m, k = k, m
		}
		if bs[0] != k || v.size != m {
			return nil
		}
		return &gemmOp{transA: transA, m: m, n: 1, k: k, lda: as[1], ldb: 1, batch: 1}
	}
	return nil
}

// gemm2 is the product of two matrices with optional transposes.
func gemm2(v *value, transA, transB bool) devOp {
	as, bs := v.ins[0].shape, v.ins[1].shape
	if len(as) != 2 || len(bs) != 2 {
		return nil
	}
	m, k := as[0], as[1]
	if transA {
		m, k = k, m
	}
	n, kb := bs[1], bs[0]
	if transB {
		n, kb = kb, n
	}
	if kb != k || v.size != m*n {
		return nil
	}
	return &gemmOp{transA: transA, transB: transB, m: m, n: n, k: k, lda: as[1], ldb: bs[1], batch: 1}
}

// lowerMM maps ops.MatMul: op(a)·op(b) where a node of rank above 2
// counts as the matrix of its rows ((B, T, K) is (B·T, K)).
func lowerMM(v *value, transA, transB bool) devOp {
	if len(v.ins) != 2 {
		return nil
	}
	asMatrix := func(in *value) (rows, cols int, ok bool) {
		s := in.shape
		if len(s) < 2 {
			return 0, 0, false
		}
		cols = s[len(s)-1]
		if cols == 0 {
			return 0, 0, false
		}
		return in.size / cols, cols, true
	}
	ar, ac, ok1 := asMatrix(v.ins[0])
	br, bc, ok2 := asMatrix(v.ins[1])
	if !ok1 || !ok2 {
		return nil
	}
	m, k := ar, ac
	if transA {
		m, k = ac, ar
	}
	n, kb := bc, br
	if transB {
		n, kb = br, bc
	}
	if k != kb || v.size != m*n {
		return nil
	}
	return &gemmOp{transA: transA, transB: transB, m: m, n: n, k: k, lda: ac, ldb: bc, batch: 1}
}

// gemm3 is the product of two (B, ·, ·) tensors with optional transposes of
// their last two axes.
func gemm3(v *value, transA, transB bool) devOp {
	as, bs := v.ins[0].shape, v.ins[1].shape
	m, k := as[1], as[2]
	if transA {
		m, k = k, m
	}
	n, kb := bs[2], bs[1]
	if transB {
		n, kb = kb, n
	}
	if kb != k || v.size != as[0]*m*n {
		return nil
	}
	return &gemmOp{transA: transA, transB: transB, m: m, n: n, k: k, lda: as[2], ldb: bs[2],
		sA: int64(as[1] * as[2]), sB: int64(bs[1] * bs[2]), sC: int64(m * n), batch: as[0]}
}

// lowerBMM maps ops.BatchedMatMul.
func lowerBMM(v *value, transA, transB bool) devOp {
	if len(v.ins) != 2 {
		return nil
	}
	as, bs := v.ins[0].shape, v.ins[1].shape
	if len(as) != 3 || len(bs) != 3 || as[0] != bs[0] {
		return nil
	}
	return gemm3(v, transA, transB)
}

// lowerTied maps the tied output layer's three products (ops.TiedLogitsOp:
// ops.TiedLogits and its two gradients) onto one Gemm each; the op's host
// buffers are not used on the device, where the output is the node's buffer
// and cuBLAS reads w transposed in place.
func lowerTied(v *value, op *ops.TiedLogitsOp) devOp {
	n, V, d := op.Dims()
	if n <= 0 || V <= 0 || d <= 0 || len(v.ins) != 2 {
		return nil
	}
	a, b := v.ins[0].size, v.ins[1].size
	switch op.Mode() {
	case ops.TiedForward: // (h (n, d), w (v, d)) -> h·wᵀ (n, v)
		if a != n*d || b != V*d || v.size != n*V {
			return nil
		}
		return &gemmOp{transB: true, m: n, n: V, k: d, lda: d, ldb: d, batch: 1}
	case ops.TiedGradH: // (dY (n, v), w (v, d)) -> dY·w (n, d)
		if a != n*V || b != V*d || v.size != n*d {
			return nil
		}
		return &gemmOp{m: n, n: d, k: V, lda: V, ldb: d, batch: 1}
	case ops.TiedGradW: // (dY (n, v), h (n, d)) -> dYᵀ·h (v, d)
		if a != n*V || b != n*d || v.size != V*d {
			return nil
		}
		return &gemmOp{transA: true, m: V, n: d, k: n, lda: V, ldb: d, batch: 1}
	}
	return nil
}
