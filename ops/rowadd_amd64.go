//go:build amd64 && !purego

package ops

import "golang.org/x/sys/cpu"

// haveAddAVX2 reports whether vaddF32 and vaddF64 may run.
var haveAddAVX2 = cpu.X86.HasAVX2

// vaddF32 sets dst[i] = a[i] + b[i] for i < n − n%8 with AVX2, each
// element rounded as a scalar addition, a the first operand. The caller
// guarantees that the elements exist; dst may be a or b.
//
//go:noescape
func vaddF32(dst, a, b *float32, n int)

// vaddF64 is vaddF32 for float64, i < n − n%4.
//
//go:noescape
func vaddF64(dst, a, b *float64, n int)
