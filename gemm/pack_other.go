//go:build !amd64 || purego

package gemm

// packAsm reports whether the packing routines run in assembly: never in
// this build.
const packAsm = false

// gatherRows is gatherRowsGo: this build has no packing assembly.
func gatherRows[F Float](dst, src []F, off, ld, h, kb, width int) {
	gatherRowsGo(dst, src, off, ld, h, kb, width)
}

// packCols is packColsGo.
func packCols[F Float](dst, src []F, lda, cols, kb, mr int) {
	packColsGo(dst, src, lda, cols, kb, mr)
}

// cols6Asm packs nothing: this build has no packing assembly.
func cols6Asm[F Float](dst, src []F, lda, full, kb int) int { return 0 }

// cols16Asm packs nothing: this build has no packing assembly.
func cols16Asm[F Float](dst, src []F, lda, full, kb int) bool { return false }

// gather16Asm copies nothing: this build has no packing assembly.
func gather16Asm[F Float](dst, src []F, off, ld, kb int) int { return 0 }
