//go:build amd64 && !purego

package graph

import "golang.org/x/sys/cpu"

// haveAddAVX2 reports whether addF32 and addF64 may run.
var haveAddAVX2 = cpu.X86.HasAVX2

// addF32 sets dst[i] = a[i] + b[i] for i < n − n%32, with AVX2 (each
// element rounded as a scalar addition, a the first operand). The caller
// guarantees that the elements exist; dst may be a or b.
//
//go:noescape
func addF32(dst, a, b *float32, n int)

// addF64 is addF32 for float64, i < n − n%16.
//
//go:noescape
func addF64(dst, a, b *float64, n int)

// subF32 and mulF32 are addF32 with a subtraction (a[i] − b[i]) and a
// product (a[i]·b[i]); subF64 and mulF64 likewise addF64.
//
//go:noescape
func subF32(dst, a, b *float32, n int)

//go:noescape
func subF64(dst, a, b *float64, n int)

//go:noescape
func mulF32(dst, a, b *float32, n int)

//go:noescape
func mulF64(dst, a, b *float64, n int)

// narrowF64 sets dst[i] = float32(src[i]) for i < n − n%16, with AVX (each
// element rounded as Go's conversion rounds it). The caller guarantees that
// the elements exist.
//
//go:noescape
func narrowF64(dst *float32, src *float64, n int)
