//go:build amd64 && !purego

package ops

import "golang.org/x/sys/cpu"

// haveNarrowAVX2 reports whether the kernels of narrow_amd64.s may run.
var haveNarrowAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// narrowWide32 sets (acc false) or increments (acc true) c[p·ldc + j], p <
// 4, j < n ≤ 16, by Σ_{l<k} a[p·rsa + l·inca]·b[l·ldb + j], k ≥ 1, each
// element one chain of fused multiply-adds over l in order, from zero. The
// caller guarantees that every element read or written exists.
//
//go:noescape
func narrowWide32(c, a, b *float32, ldc, rsa, inca, ldb, k, n int, acc bool)

// narrowTall32 is narrowWide32 for p < 8 and n ≤ 8.
//
//go:noescape
func narrowTall32(c, a, b *float32, ldc, rsa, inca, ldb, k, n int, acc bool)

// narrowWide64 is narrowWide32 for float64: p < 4, n ≤ 8.
//
//go:noescape
func narrowWide64(c, a, b *float64, ldc, rsa, inca, ldb, k, n int, acc bool)

// narrowTall64 is narrowWide64 for p < 8 and n ≤ 4.
//
//go:noescape
func narrowTall64(c, a, b *float64, ldc, rsa, inca, ldb, k, n int, acc bool)
