package ops

import "fmt"

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
			for ; p+8 <= m; p += 8 {
				for c0 := 0; c0 < n; c0 += w2 {
					w := min(w2, n-c0)
					if w <= w2/2 {
						narrowTall32(&c[p*ldc+c0], &a[p*rsA], &b[c0], ldc, rsA, incA, ldb, k, w, acc)
						continue
					}
					narrowWide32(&c[p*ldc+c0], &a[p*rsA], &b[c0], ldc, rsA, incA, ldb, k, w, acc)
					narrowWide32(&c[(p+4)*ldc+c0], &a[(p+4)*rsA], &b[c0], ldc, rsA, incA, ldb, k, w, acc)
				}
			}
			for ; p+4 <= m; p += 4 {
				for c0 := 0; c0 < n; c0 += w2 {
					narrowWide32(&c[p*ldc+c0], &a[p*rsA], &b[c0], ldc, rsA, incA, ldb, k, min(w2, n-c0), acc)
				}
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
		}
	}
	for ; p < m; p++ {
		MulAddRow(c[p*ldc:], a[p*rsA:], incA, b, ldb, k, n, acc)
	}
}
