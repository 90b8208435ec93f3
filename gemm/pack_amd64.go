//go:build amd64 && !purego

package gemm

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:generate go run gen_pack.go

// The AVX-512 packing routines of pack_amd64.s (see gen_pack.go for their
// contracts). The callers below check every bound the routines rely on by
// slicing first (a bad slice panics in Go, never in the assembly).

//go:noescape
func transPack32(dst, src *float32, ld, h, kb, width int)

//go:noescape
func transPack64(dst, src *float64, ld, h, kb, width int)

//go:noescape
func colsPack32(dst, src *float32, lda, full, rem, kb, mr int)

//go:noescape
func colsPack64(dst, src *float64, lda, full, rem, kb, mr int)

// packAsm selects the AVX-512 packing routines, once: they need AVX-512 F
// only (masked moves, 512-bit shuffles), whichever kernels run.
var packAsm = cpu.X86.HasAVX512F

// vecPair is the most elements packCols moves per line in assembly: two
// 64-byte vectors.
func vecPair[F Float]() int {
	var z F
	return 128 / int(unsafe.Sizeof(z))
}

func is32[F Float]() bool {
	var z F
	return unsafe.Sizeof(z) == 4
}

// gatherRows is gatherRowsGo, in AVX-512 assembly where the CPU has it.
func gatherRows[F Float](dst, src []F, off, ld, h, kb, width int) {
	if !packAsm || h <= 0 || kb <= 0 || h > width {
		gatherRowsGo(dst, src, off, ld, h, kb, width)
		return
	}
	dst = dst[:kb*width]
	src = src[off : off+(h-1)*ld+kb]
	if is32[F]() {
		transPack32((*float32)(unsafe.Pointer(&dst[0])), (*float32)(unsafe.Pointer(&src[0])), ld, h, kb, width)
	} else {
		transPack64((*float64)(unsafe.Pointer(&dst[0])), (*float64)(unsafe.Pointer(&src[0])), ld, h, kb, width)
	}
}

// packCols is packColsGo, in AVX-512 assembly where the CPU has it.
func packCols[F Float](dst, src []F, lda, cols, kb, mr int) {
	if !packAsm || cols <= 0 || kb <= 0 || mr <= 0 || mr > vecPair[F]() {
		packColsGo(dst, src, lda, cols, kb, mr)
		return
	}
	panels := (cols + mr - 1) / mr
	dst = dst[:panels*mr*kb]
	src = src[:(kb-1)*lda+cols]
	full, rem := cols/mr, cols%mr
	if is32[F]() {
		colsPack32((*float32)(unsafe.Pointer(&dst[0])), (*float32)(unsafe.Pointer(&src[0])), lda, full, rem, kb, mr)
	} else {
		colsPack64((*float64)(unsafe.Pointer(&dst[0])), (*float64)(unsafe.Pointer(&src[0])), lda, full, rem, kb, mr)
	}
}
