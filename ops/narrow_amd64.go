//go:build amd64 && !purego

package ops

import "golang.org/x/sys/cpu"

// haveNarrowAVX2 reports whether the kernels of narrow_amd64.s may run.
var haveNarrowAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// narrowWide32 sets (mode narrowSet) or increments (mode narrowAdd)
// c[p·ldc + j], p < 4, j < n ≤ 16, by Σ_{l<k} a[p·rsa + l·inca]·b[l·ldb + j],
// k ≥ 1, each element one chain of fused multiply-adds over l in order,
// from zero; mode narrowCont goes on with the chain from c's values instead
// of from zero (and stores it), so that a deep product computed over slices
// of k, the first stored and the others continued, is the same chain. The
// caller guarantees that every element read or written exists.
//
//go:noescape
func narrowWide32(c, a, b *float32, ldc, rsa, inca, ldb, k, n int, mode uint8)

// narrowTall32 is narrowWide32 for p < 8 and n ≤ 8.
//
//go:noescape
func narrowTall32(c, a, b *float32, ldc, rsa, inca, ldb, k, n int, mode uint8)

// narrowWide64 is narrowWide32 for float64: p < 4, n ≤ 8.
//
//go:noescape
func narrowWide64(c, a, b *float64, ldc, rsa, inca, ldb, k, n int, acc bool)

// narrowTall64 is narrowWide64 for p < 8 and n ≤ 4.
//
//go:noescape
func narrowTall64(c, a, b *float64, ldc, rsa, inca, ldb, k, n int, acc bool)

// dotCols32 sets c[i] = Σ_{l<k} a[i·rsa + l]·b[l] for i < m (k, m ≥ 1):
// the column A·b, each element one chain of fused multiply-adds over l in
// order, from zero (mulAddRows' chains for n = 1), eight rows at a time
// with gathered loads. The caller guarantees that every element read or
// written exists.
//
//go:noescape
func dotCols32(c, a, b *float32, rsa, k, m int)

// outerRows32 sets c[i·n + j] = w[i]·d[j] for i < m, j < n ≤ 8 (m, n ≥ 1),
// each one fused multiply-add from zero (the chain mulAddRows computes for
// k = 1: −0 products are +0). The caller guarantees that the m·n elements
// of c, m of w and n of d exist; nothing beyond them is written.
//
//go:noescape
func outerRows32(c, w, d *float32, m, n int)

// narrowWideSeqs32 is narrowWide32 for nseq ≥ 1 products of the same sizes,
// the s-th at c + s·sc, a + s·sa, b + s·sb (elements): the same instructions
// for each, so the same bits, without a call per product. The caller
// guarantees that every element read or written exists.
//
//go:noescape
func narrowWideSeqs32(c, a, b *float32, ldc, rsa, inca, ldb, k, n int, mode uint8, nseq, sc, sa, sb int)
