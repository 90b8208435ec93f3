//go:build amd64 && !purego

package train

import "golang.org/x/sys/cpu"

// haveAdamAVX2 reports whether the AVX2 update kernels may run.
var haveAdamAVX2 = cpu.X86.HasAVX2

// adamAVX2M32 is adamUpdateScaled's loop for float32 parameters, gradients
// and moments on n elements (a multiple of 4), four at a time in AVX2
// registers, the same operations in the same order (adam_amd64.s).
//
//go:noescape
func adamAVX2M32(w, grad, m, v *float32, n int, c *adamVec) (mmax, vmax float64)

// adamAVX2M64 is adamAVX2M32 with float64 moments.
//
//go:noescape
func adamAVX2M64(w, grad *float32, m, v *float64, n int, c *adamVec) (mmax, vmax float64)
