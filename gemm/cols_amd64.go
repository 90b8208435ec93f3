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

//go:noescape
func trans16f32(dst, src *float32, ld, kb4 int)

// gather16Asm runs gather8x2's transposing copy for float32 on the first
// kb rounded down to a multiple of 4 elements of each row in assembly and
// returns how many it copied; 0 for float64, which is gathered in Go.
func gather16Asm[F Float](dst, src []F, off, ld, kb int) int {
	kb4 := kb &^ 3
	if !is32[F]() || kb4 == 0 {
		return 0
	}
	_ = src[off+15*ld+kb4-1]
	_ = dst[kb4*16-1]
	trans16f32((*float32)(unsafe.Pointer(&dst[0])), (*float32)(unsafe.Pointer(&src[off])), ld, kb4)
	return kb4
}
