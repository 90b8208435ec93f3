package ops

import "fmt"

// mulAddRowsSeqs is [mulAddRows] for nseq products of the same sizes, the
// s-th with A at a[s·sa:], B at b[s·sb:] and C at c[s·sc:] (the attention
// heads' per-sequence products): for every s,
//
//	mulAddRows(m, n, k, a[s·sa:], rsA, incA, b[s·sb:], ldb, c[s·sc:], ldc, acc).
//
// For float32 with the AVX2 kernels, m ≥ 4 and 1 ≤ k ≤ 256, every group of
// four rows and chunk of sixteen columns of all the products is one call of
// narrowWideSeqs32 (narrowWide32's instructions for each product) instead of
// a call per product: every element is the chain of fused multiply-adds
// over l that mulAddRows computes, stored or added to C at its end, so the
// same bits (TestMulAddRowsSeqsBits). The last one to three rows are
// computed with the four rows before them, as mulAddRows does: stored
// again (acc false), or into the scratch buffer t (grown and returned)
// and then added to C (acc true). Other products run mulAddRows one at a
// time.
//
// It panics, like a slice expression, when a slice is too short for the
// sizes: the calling op has checked its shapes.
func mulAddRowsSeqs[F float32 | float64](nseq, m, n, k int, a []F, rsA, incA, sa int, b []F, ldb, sb int, c []F, ldc, sc int, acc bool, t []F) []F {
	if nseq < 0 || sa < 0 || sb < 0 || sc < 0 {
		panic(fmt.Sprintf("ops: mulAddRowsSeqs: nseq %d, strides %d, %d, %d", nseq, sa, sb, sc))
	}
	if nseq == 0 || m == 0 || n == 0 {
		return t
	}
	a32, ok := any(a).([]float32)
	if !ok || !haveNarrowAVX2 || !HaveRowKernel() || m < 4 || k < 1 || k > 256 {
		for s := 0; s < nseq; s++ {
			mulAddRows(m, n, k, a[s*sa:], rsA, incA, b[s*sb:], ldb, c[s*sc:], ldc, acc)
		}
		return t
	}
	b32, c32 := any(b).([]float32), any(c).([]float32)
	last := nseq - 1
	if m < 0 || n < 0 || rsA < 0 || incA < 0 || ldc < n || (k > 1 && ldb < n) ||
		len(c32) < last*sc+(m-1)*ldc+n || len(a32) < last*sa+(m-1)*rsA+(k-1)*incA+1 || len(b32) < last*sb+(k-1)*ldb+n {
		panic(fmt.Sprintf("ops: mulAddRowsSeqs: %d products of m %d, n %d, k %d (rsA %d, incA %d, ldb %d, ldc %d, strides %d, %d, %d) do not fit a (%d), b (%d), c (%d)",
			nseq, m, n, k, rsA, incA, ldb, ldc, sa, sb, sc, len(a32), len(b32), len(c32)))
	}
	const w2 = 16
	mode := narrowSet
	if acc {
		mode = narrowAdd
	}
	p := 0
	for ; p+4 <= m; p += 4 {
		for c0 := 0; c0 < n; c0 += w2 {
			narrowWideSeqs32(&c32[p*ldc+c0], &a32[p*rsA], &b32[c0], ldc, rsA, incA, ldb, k, min(w2, n-c0), mode, nseq, sc, sa, sb)
		}
	}
	if p == m {
		return t
	}
	if !acc {
		// Rows m−4..m−1 again: rows m−4..p−1 are stored with the same
		// chains.
		for c0 := 0; c0 < n; c0 += w2 {
			narrowWideSeqs32(&c32[(m-4)*ldc+c0], &a32[(m-4)*rsA], &b32[c0], ldc, rsA, incA, ldb, k, min(w2, n-c0), narrowSet, nseq, sc, sa, sb)
		}
		return t
	}
	// acc: rows m−4..m−1 of every product into t (4·w2 a product), the
	// last m−p of them then added to C (the kernels add a chain to C at
	// its end, as mulAddRows' tail).
	t = grow(t, nseq*4*w2)
	t32 := any(t).([]float32)
	for c0 := 0; c0 < n; c0 += w2 {
		w := min(w2, n-c0)
		narrowWideSeqs32(&t32[0], &a32[(m-4)*rsA], &b32[c0], w, rsA, incA, ldb, k, w, narrowSet, nseq, 4*w2, sa, sb)
		for s := 0; s < nseq; s++ {
			addTail(c32[s*sc+p*ldc+c0:], ldc, t32[s*4*w2+(p-(m-4))*w:], w, m-p)
		}
	}
	return t
}
