//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

//go:generate go run gen_kernels.go

// The micro-kernels of kernels_amd64.s (see gen_kernels.go) and the row
// kernels of rows_amd64.s. The caller guarantees that every element read or
// written exists.

//go:noescape
func kernAVX512F32(k int, a, b, c *float32, ldc, mode int, next *float32)

//go:noescape
func kernAVX512F64(k int, a, b, c *float64, ldc, mode int, next *float64)

//go:noescape
func kernAVX2F32(k int, a, b, c *float32, ldc, mode int, next *float32)

//go:noescape
func kernAVX2F64(k int, a, b, c *float64, ldc, mode int, next *float64)

// kernAVX2F32A and kernAVX2F64A are kernAVX2F32 and kernAVX2F64 with the
// A micro-panel read where it is stored: rows a[i·lda:], i < 6.
//
//go:noescape
func kernAVX2F32A(k int, a *float32, lda int, b, c *float32, ldc, mode int, next *float32)

//go:noescape
func kernAVX2F64A(k int, a *float64, lda int, b, c *float64, ldc, mode int, next *float64)

// rowKernel32 sets (acc false) or increments (acc true) c[j], j < n, by
// Σ_{l<k} a[l·inca]·b[l·ldb + j], with AVX2/FMA, 32 columns per pass.
//
//go:noescape
func rowKernel32(c, a, b *float32, inca, ldb, k, n int, acc bool)

// rowKernel64 is rowKernel32 for float64 (16 columns per pass).
//
//go:noescape
func rowKernel64(c, a, b *float64, inca, ldb, k, n int, acc bool)

var (
	// avx512 needs AVX-512 F (and the AVX2/FMA row kernels).
	avx512 = &kernels{
		name: "avx512",
		f32:  blocking[float32]{mr: 12, nr: 32, kc: 256, mc: 2400, nc: 512, kern: kernAVX512F32, rows: rowKernel32},
		f64:  blocking[float64]{mr: 12, nr: 16, kc: 256, mc: 1200, nc: 256, kern: kernAVX512F64, rows: rowKernel64},
	}
	// avx2 needs AVX2 and FMA.
	avx2 = &kernels{
		name: "avx2",
		f32:  blocking[float32]{mr: 6, nr: 16, kc: 256, kcStore: 512, mc: 2400, nc: 512, kern: kernAVX2F32, kernA: kernAVX2F32A, rows: rowKernel32},
		f64:  blocking[float64]{mr: 6, nr: 8, kc: 256, mc: 1200, nc: 256, kern: kernAVX2F64, kernA: kernAVX2F64A, rows: rowKernel64},
	}
)

// available lists the instruction sets this machine runs, best first.
func available() []*kernels {
	var ks []*kernels
	haveAVX2 := cpu.X86.HasAVX2 && cpu.X86.HasFMA
	if haveAVX2 && cpu.X86.HasAVX512F {
		ks = append(ks, avx512)
	}
	if haveAVX2 {
		ks = append(ks, avx2)
	}
	return append(ks, portable)
}
