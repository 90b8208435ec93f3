package ops

import (
	"fmt"
	"runtime"
	"sync"
)

// narrowCols is the widest product (columns of C) that mulAddRows takes
// over from gemm's row kernels: two vectors of the dtype.
func narrowCols[F float32 | float64]() int {
	if is32[F]() {
		return 16
	}
	return 8
}

// mulAddRows sets (acc false) or increments (acc true) the m×n matrix C
// (rows ldc apart) by the product of A (element (p, l) at a[p·rsA + l·incA])
// and B (element (l, j) at b[l·ldb + j]), inner dimension k:
//
//	c[p·ldc + j] (+)= Σ_{l<k} a[p·rsA + l·incA]·b[l·ldb + j].
//
// It is [MulAddRow] for m rows at once: with rsA = lda, incA = 1 the rows
// of A, with rsA = 1, incA = lda the rows of Aᵀ. Every element of C is the
// chain of fused multiply-adds over l that MulAddRow (and [Gemm]) computes,
// so the results are the same bits; the AVX2 kernels run four or eight
// rows side by side, so that the chains of different rows overlap instead
// of each waiting on the latency of its own multiply-adds, which is what
// bounds a narrow product (n of a few columns, k long) done a row at a
// time. Columns are taken in chunks of two vectors.
//
// It panics, like a slice expression, when a slice is too short for the
// sizes: the calling op has checked its shapes.
func mulAddRows[F float32 | float64](m, n, k int, a []F, rsA, incA int, b []F, ldb int, c []F, ldc int, acc bool) {
	if m < 0 || n < 0 || k < 0 || rsA < 0 || incA < 0 || ldb < 0 || ldc < n ||
		(m > 0 && n > 0 && len(c) < (m-1)*ldc+n) || (m > 0 && n > 0 && k > 0 && (len(a) < (m-1)*rsA+(k-1)*incA+1 || len(b) < (k-1)*ldb+n || (k > 1 && ldb < n))) {
		panic(fmt.Sprintf("ops: mulAddRows: m %d, n %d, k %d, rsA %d, incA %d, ldb %d, ldc %d do not fit a (%d), b (%d), c (%d)",
			m, n, k, rsA, incA, ldb, ldc, len(a), len(b), len(c)))
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		if !acc {
			for p := 0; p < m; p++ {
				clear(c[p*ldc : p*ldc+n])
			}
		}
		return
	}
	p := 0
	if haveNarrowAVX2 && HaveRowKernel() {
		w2 := narrowCols[F]()
		switch a := any(a).(type) {
		case []float32:
			b, c := any(b).([]float32), any(c).([]float32)
			if !acc && k > 2*narrowKC && m >= 16 && n > 16 {
				mulAddRowsDeep32(m, n, k, a, rsA, incA, b, ldb, c, ldc)
				return
			}
			mode := narrowSet
			if acc {
				mode = narrowAdd
			}
			p = narrowGroups32(m, n, k, a, rsA, incA, b, ldb, c, ldc, w2, mode)
			if p < m && m >= 4 && !acc && k <= 256 {
				// The last one to three rows of a short product with the
				// four before them (a call instead of one a row, which a
				// deep product does not need): rows m−4..p−1 are stored
				// again, the same chains.
				for c0 := 0; c0 < n; c0 += w2 {
					narrowWide32(&c[(m-4)*ldc+c0], &a[(m-4)*rsA], &b[c0], ldc, rsA, incA, ldb, k, min(w2, n-c0), narrowSet)
				}
				p = m
			}
			if p < m && m >= 4 && acc && k <= 256 {
				// The same with acc: rows m−4..m−1 stored into a scratch,
				// the last one to three then added to C (the kernels add
				// a chain to C at its end, as MulAddRow).
				var t [4 * 16]float32
				for c0 := 0; c0 < n; c0 += w2 {
					w := min(w2, n-c0)
					narrowWide32(&t[0], &a[(m-4)*rsA], &b[c0], w, rsA, incA, ldb, k, w, narrowSet)
					addTail(c[p*ldc+c0:], ldc, t[(p-(m-4))*w:], w, m-p)
				}
				p = m
			}
		case []float64:
			b, c := any(b).([]float64), any(c).([]float64)
			for ; p+8 <= m; p += 8 {
				for c0 := 0; c0 < n; c0 += w2 {
					w := min(w2, n-c0)
					if w <= w2/2 {
						narrowTall64(&c[p*ldc+c0], &a[p*rsA], &b[c0], ldc, rsA, incA, ldb, k, w, acc)
						continue
					}
					narrowWide64(&c[p*ldc+c0], &a[p*rsA], &b[c0], ldc, rsA, incA, ldb, k, w, acc)
					narrowWide64(&c[(p+4)*ldc+c0], &a[(p+4)*rsA], &b[c0], ldc, rsA, incA, ldb, k, w, acc)
				}
			}
			for ; p+4 <= m; p += 4 {
				for c0 := 0; c0 < n; c0 += w2 {
					narrowWide64(&c[p*ldc+c0], &a[p*rsA], &b[c0], ldc, rsA, incA, ldb, k, min(w2, n-c0), acc)
				}
			}
			if p < m && m >= 4 && !acc && k <= 256 {
				for c0 := 0; c0 < n; c0 += w2 {
					narrowWide64(&c[(m-4)*ldc+c0], &a[(m-4)*rsA], &b[c0], ldc, rsA, incA, ldb, k, min(w2, n-c0), false)
				}
				p = m
			}
			if p < m && m >= 4 && acc && k <= 256 {
				var t [4 * 8]float64
				for c0 := 0; c0 < n; c0 += w2 {
					w := min(w2, n-c0)
					narrowWide64(&t[0], &a[(m-4)*rsA], &b[c0], w, rsA, incA, ldb, k, w, false)
					addTail(c[p*ldc+c0:], ldc, t[(p-(m-4))*w:], w, m-p)
				}
				p = m
			}
		}
	}
	for ; p < m; p++ {
		MulAddRow(c[p*ldc:], a[p*rsA:], incA, b, ldb, k, n, acc)
	}
}

// addTail adds the rows×w block t (rows w apart) to C's block at c (rows
// ldc apart).
func addTail[F float32 | float64](c []F, ldc int, t []F, w, rows int) {
	for r := 0; r < rows; r++ {
		cr, tr := c[r*ldc:][:w], t[r*w:][:w]
		for j, v := range tr {
			cr[j] += v
		}
	}
}

// Modes of the float32 kernels (narrowWide32, narrowTall32): store the
// chains, add them to C, or go on with the chains from C's values.
const (
	narrowSet uint8 = iota
	narrowAdd
	narrowCont
)

// narrowKC is the slice of k that mulAddRowsDeep32 takes at a time: the
// rows of A and B it reads for one slice stay in cache while every chunk
// of C's rows and columns goes over them. The TF heads' dh = zᵀ·gb (25 ×
// 50 × 5632) takes about a quarter less time with 128 than with 256 (its
// slice of gb and z, 38 KB, then stays near the core's 32 KB L1).
const narrowKC = 128

// narrowGroups32 runs the float32 narrow kernels over the rows of C in
// groups of eight (two four-row calls per chunk of w2 columns, or one
// tall call for a chunk of at most w2/2) and then of four, and returns
// the first row left (fewer than four remain).
func narrowGroups32(m, n, k int, a []float32, rsA, incA int, b []float32, ldb int, c []float32, ldc, w2 int, mode uint8) int {
	p := 0
	for ; p+8 <= m; p += 8 {
		for c0 := 0; c0 < n; c0 += w2 {
			w := min(w2, n-c0)
			if w <= w2/2 {
				narrowTall32(&c[p*ldc+c0], &a[p*rsA], &b[c0], ldc, rsA, incA, ldb, k, w, mode)
				continue
			}
			narrowWide32(&c[p*ldc+c0], &a[p*rsA], &b[c0], ldc, rsA, incA, ldb, k, w, mode)
			narrowWide32(&c[(p+4)*ldc+c0], &a[(p+4)*rsA], &b[c0], ldc, rsA, incA, ldb, k, w, mode)
		}
	}
	for ; p+4 <= m; p += 4 {
		for c0 := 0; c0 < n; c0 += w2 {
			narrowWide32(&c[p*ldc+c0], &a[p*rsA], &b[c0], ldc, rsA, incA, ldb, k, min(w2, n-c0), mode)
		}
	}
	return p
}

// mulAddRowsDeep32 is mulAddRows for float32, acc false, on the AVX2
// kernels, for a deep product with many chunks of C (k > 2·narrowKC,
// m ≥ 16, n > 16: the TF heads' dh = zᵀ·gb, 25 × 50 × 5632). Row group by
// row group, every kernel call would go over all k rows of A and B, which
// then come from far caches as many times as there are chunks of C
// (BenchmarkNarrowGemm: 25 × 50 × 5632 about a fifth faster; with a few
// chunks, 25 × 5 or 5 × 25, slower, which mulAddRows leaves as they are);
// instead k is taken narrowKC rows at a time, every
// chunk of C over one slice before the next, each chain stored after the
// first slice and continued from C (narrowCont) after the others: the same
// chains of fused multiply-adds over l in order, from zero, so the same
// bits. The one to three rows of C left over after the groups of four are
// computed with the four rows before them into a scratch buffer (the
// chains of those rows go on from the scratch, not from C) and copied at
// the end; with fewer than four rows in all, each row is computed by the
// four-row kernel as four copies of itself (A's row stride and C's 0).
func mulAddRowsDeep32(m, n, k int, a []float32, rsA, incA int, b []float32, ldb int, c []float32, ldc int) {
	const w2 = 16
	var t []float32
	if m >= 4 && m%4 != 0 {
		sp := narrowScratch[float32](4 * n)
		defer narrowPool[float32]().Put(sp)
		t = (*sp)[:4*n]
	}
	for l0 := 0; l0 < k; l0 += narrowKC {
		kc := min(narrowKC, k-l0)
		mode := narrowCont
		if l0 == 0 {
			mode = narrowSet
		}
		al, bl := a[l0*incA:], b[l0*ldb:]
		p := narrowGroups32(m, n, kc, al, rsA, incA, bl, ldb, c, ldc, w2, mode)
		if p < m {
			// The last rows with the four before them (m ≥ 4), into the
			// scratch t whose chains run beside those in C; a single row
			// (m < 4) as four copies of itself (A's row stride and C's 0).
			r0, rs, dst, ldt := m-4, rsA, t, n
			if m < 4 {
				r0, rs, dst, ldt = p, 0, c[p*ldc:], 0
			}
			for ; p < m; p++ {
				for c0 := 0; c0 < n; c0 += w2 {
					narrowWide32(&dst[c0], &al[r0*rsA], &bl[c0], ldt, rs, incA, ldb, kc, min(w2, n-c0), mode)
				}
				if m >= 4 {
					break
				}
				r0++
				dst = c[p*ldc+ldc:]
			}
		}
	}
	for p := m &^ 3; p < m && m >= 4; p++ {
		copy(c[p*ldc:p*ldc+n], t[(p-(m-4))*n:])
	}
}

// narrowGemm computes [Gemm]'s product on mulAddRows' kernels and returns
// true when that is faster and gives the same bits, and returns false,
// touching nothing, otherwise (Gemm then runs package gemm).
//
// The same bits: package gemm computes every element of C as one chain of
// fused multiply-adds over k in order, from zero, stored (beta 0) or added
// to C at the end (beta 1, on its row path and on its packed path for k ≤
// 256, one KC slice); mulAddRows' kernels compute the same chain and store
// it or add it to C at the end. So narrowGemm takes alpha 1 with beta 0 at
// any depth, and beta 1 only for k ≤ 256, where gemm's paths agree.
//
// Faster: gemm's row path (its choice for n ≤ 16 columns, or a few rows)
// runs one row at a time, each chain waiting on the latency of its own
// multiply-adds; mulAddRows runs four or eight rows side by side. It gains
// for n ≤ 16 with m ≥ 4 rows in float32 and float64, and in float32 for the
// deep transposed products Aᵀ·B (k ≥ 1024) with m·n ≤ 2048
// (BenchmarkNarrowGemm measures both against gemm, one thread). Wider
// products stay on gemm's packed micro-kernels. op(B) = Bᵀ
// is copied (k·n elements) into a pooled buffer first, as gemm's row path
// does.
func narrowGemm[F float32 | float64](tA, tB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) bool {
	if !haveNarrowAVX2 || !HaveRowKernel() || alpha != 1 || !(beta == 0 || beta == 1 && k <= 256) || m < 4 || k < 1 {
		return false
	}
	narrow := n >= 1 && n <= 16
	if !narrow && !(is32[F]() && tA && k >= 1024 && n >= 1 && m*n <= 2048) {
		return false
	}
	// op(A) is m×k: stored m×k (lda ≥ k), or k×m (lda ≥ m) when tA; op(B)
	// likewise. A product that does not fit goes to gemm, which reports it.
	ra, ca := m, k
	if tA {
		ra, ca = k, m
	}
	rb, cb := k, n
	if tB {
		rb, cb = n, k
	}
	if lda < ca || ldb < cb || ldc < n || len(a) < (ra-1)*lda+ca || len(b) < (rb-1)*ldb+cb || len(c) < (m-1)*ldc+n {
		return false
	}
	if tB {
		sp := narrowScratch[F](k * n)
		defer narrowPool[F]().Put(sp)
		bt := (*sp)[:k*n]
		transposeInto(bt, b, ldb, n, k)
		b, ldb = bt, n
	}
	rsA, incA := lda, 1 // op(A)'s row stride and step along k
	if tA {
		rsA, incA = 1, lda
	}
	// A large product (the TF heads' dh = zᵀ·[dP dU], 25 × 50 × 5632) is
	// split by rows of C over two goroutines when GOMAXPROCS > 1, at a
	// multiple of 8 rows: each row is the same chain whichever goroutine
	// computes it. (Handing it to gemm's goroutines instead packed the
	// deep operands once per goroutine: twice the CPU time, no faster.)
	if work := 2 * float64(m) * float64(n) * float64(k); work >= 8<<20 && m >= 16 && runtime.GOMAXPROCS(0) > 1 {
		mulAddRowsSplit(m, n, k, a, rsA, incA, b, ldb, c, ldc, beta == 1)
		return true
	}
	mulAddRows(m, n, k, a, rsA, incA, b, ldb, c, ldc, beta == 1)
	return true
}

// transposeInto sets bt[l·n + j] = b[j·ldb + l] for j < n, l < k: the n
// rows of b (k long, ldb apart) as the columns of bt, four rows at a time.
func transposeInto[F float32 | float64](bt, b []F, ldb, n, k int) {
	j := 0
	for ; j+4 <= n; j += 4 {
		r0 := b[j*ldb:][:k]
		r1 := b[(j+1)*ldb:][:k]
		r2 := b[(j+2)*ldb:][:k]
		r3 := b[(j+3)*ldb:][:k]
		for l := 0; l < k; l++ {
			d := bt[l*n+j:][:4]
			d[0] = r0[l]
			d[1] = r1[l]
			d[2] = r2[l]
			d[3] = r3[l]
		}
	}
	for ; j < n; j++ {
		r := b[j*ldb:][:k]
		for l, v := range r {
			bt[l*n+j] = v
		}
	}
}

// mulAddRowsSplit is mulAddRows with the rows of C split at a multiple of
// 8 over two goroutines (a function of its own, so that the common path
// allocates no closure).
func mulAddRowsSplit[F float32 | float64](m, n, k int, a []F, rsA, incA int, b []F, ldb int, c []F, ldc int, acc bool) {
	mid := m / 2 &^ 7
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		mulAddRows(m-mid, n, k, a[mid*rsA:], rsA, incA, b, ldb, c[mid*ldc:], ldc, acc)
	}()
	mulAddRows(mid, n, k, a, rsA, incA, b, ldb, c, ldc, acc)
	wg.Wait()
}

// narrowPools hold narrowGemm's copies of Bᵀ: *[]float32 (index 0) and
// *[]float64 (1).
var narrowPools [2]sync.Pool

func narrowPool[F float32 | float64]() *sync.Pool {
	if is32[F]() {
		return &narrowPools[0]
	}
	return &narrowPools[1]
}

// narrowScratch returns a pooled buffer of at least size elements.
func narrowScratch[F float32 | float64](size int) *[]F {
	if sp, ok := narrowPool[F]().Get().(*[]F); ok && cap(*sp) >= size {
		return sp
	}
	s := make([]F, size)
	return &s
}
