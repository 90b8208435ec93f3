//go:build amd64 && !purego

package gemm

import "unsafe"

//go:noescape
func cols6x8f32(dst, src *float32, lda, full, kb, blocks int)

//go:noescape
func cols16f32(dst, src *float32, lda, full, kb int)

// cols16Asm packs cols16's panels for float32 in assembly (SSE2 moves)
// and reports whether it did; false for float64, which is packed in Go.
func cols16Asm[F Float](dst, src []F, lda, full, kb int) bool {
	if !is32[F]() || kb == 0 || full == 0 {
		return false
	}
	_ = src[(kb-1)*lda+full*16-1]
	_ = dst[(full-1)*16*kb+kb*16-1]
	cols16f32((*float32)(unsafe.Pointer(&dst[0])), (*float32)(unsafe.Pointer(&src[0])), lda, full, kb)
	return true
}

// cols6Asm packs the eight-line blocks of cols6 for float32 in assembly
// (SSE2 moves: every amd64 CPU) and returns how many lines it packed (a
// multiple of 8); 0 for float64, which cols6 packs in Go.
func cols6Asm[F Float](dst, src []F, lda, full, kb int) int {
	blocks := kb / 8
	if !is32[F]() || blocks == 0 || full == 0 {
		return 0
	}
	// The bounds the assembly relies on, checked by slicing: the last
	// line it reads, and the last element it writes.
	_ = src[(blocks*8-1)*lda+full*6-1]
	_ = dst[(full-1)*6*kb+blocks*8*6-1]
	cols6x8f32((*float32)(unsafe.Pointer(&dst[0])), (*float32)(unsafe.Pointer(&src[0])), lda, full, kb, blocks)
	return blocks * 8
}
