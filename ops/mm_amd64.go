//go:build amd64 && !purego

package ops

import "golang.org/x/sys/cpu"

// haveRowKernel reports whether rowKernel32 may run: it needs AVX2 and FMA.
var haveRowKernel = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// rowKernel32 sets (acc false) or increments (acc true) c[j], j < n, by
// Σ_{l<k} a[l·inca]·b[l·ldb + j], with AVX2/FMA (mm_amd64.s). The caller
// guarantees that every element read or written exists.
//
//go:noescape
func rowKernel32(c, a, b *float32, inca, ldb, k, n int, acc bool)

// rowKernel64 is rowKernel32 for float64.
//
//go:noescape
func rowKernel64(c, a, b *float64, inca, ldb, k, n int, acc bool)
