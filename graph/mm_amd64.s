//go:build amd64 && !purego

#include "textflag.h"

// maskTab: 8 int32 of all ones, then 8 zeros. The 8 int32 at
// maskTab + 4·(8−m) have their first m lanes set (m in 0..8).
DATA maskTab<>+0(SB)/8, $0xffffffffffffffff
DATA maskTab<>+8(SB)/8, $0xffffffffffffffff
DATA maskTab<>+16(SB)/8, $0xffffffffffffffff
DATA maskTab<>+24(SB)/8, $0xffffffffffffffff
DATA maskTab<>+32(SB)/8, $0
DATA maskTab<>+40(SB)/8, $0
DATA maskTab<>+48(SB)/8, $0
DATA maskTab<>+56(SB)/8, $0
GLOBL maskTab<>(SB), RODATA|NOPTR, $64

// MASK loads into Y the mask of the first clamp(w−off, 0, 8) lanes; uses
// BX, CX.
#define MASK(w, off, Y) \
	MOVQ w, BX; \
	SUBQ $off, BX; \
	CMPQ BX, $0; \
	JGE 2(PC); \
	XORQ BX, BX; \
	CMPQ BX, $8; \
	JLE 2(PC); \
	MOVQ $8, BX; \
	MOVQ $8, CX; \
	SUBQ BX, CX; \
	LEAQ maskTab<>(SB), BX; \
	VMOVDQU (BX)(CX*4), Y

// func rowKernel32(c, a, b *float32, inca, ldb, k, n int, acc bool)
//
// c[j] (+)= Σ_{l<k} a[l·inca] · b[l·ldb + j] for j < n, in chunks of 32
// columns held in four YMM accumulators; loads and stores are masked, so no
// memory beyond the last column of a row is touched.
TEXT ·rowKernel32(SB), NOSPLIT, $0-57
	MOVQ c+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ inca+24(FP), R8
	MOVQ ldb+32(FP), R9
	MOVQ k+40(FP), R10
	MOVQ n+48(FP), R11
	MOVBLZX acc+56(FP), R12
	SHLQ $2, R8
	SHLQ $2, R9
	XORQ R13, R13 // first column of the chunk

chunk:
	CMPQ R13, R11
	JGE  done
	MOVQ R11, AX
	SUBQ R13, AX  // columns left: w
	MASK(AX, 0, Y12)
	MASK(AX, 8, Y13)
	MASK(AX, 16, Y14)
	MASK(AX, 24, Y15)
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ SI, R14
	LEAQ (DX)(R13*4), R15
	MOVQ R10, CX

loop:
	TESTQ CX, CX
	JZ    endk
	VBROADCASTSS (R14), Y8
	VMASKMOVPS   (R15), Y12, Y9
	VFMADD231PS  Y9, Y8, Y0
	VMASKMOVPS   32(R15), Y13, Y10
	VFMADD231PS  Y10, Y8, Y1
	VMASKMOVPS   64(R15), Y14, Y11
	VFMADD231PS  Y11, Y8, Y2
	VMASKMOVPS   96(R15), Y15, Y9
	VFMADD231PS  Y9, Y8, Y3
	ADDQ R8, R14
	ADDQ R9, R15
	DECQ CX
	JMP  loop

endk:
	LEAQ (DI)(R13*4), BX
	TESTQ R12, R12
	JZ    store
	VMASKMOVPS (BX), Y12, Y9
	VADDPS     Y9, Y0, Y0
	VMASKMOVPS 32(BX), Y13, Y10
	VADDPS     Y10, Y1, Y1
	VMASKMOVPS 64(BX), Y14, Y11
	VADDPS     Y11, Y2, Y2
	VMASKMOVPS 96(BX), Y15, Y9
	VADDPS     Y9, Y3, Y3

store:
	VMASKMOVPS Y0, Y12, (BX)
	VMASKMOVPS Y1, Y13, 32(BX)
	VMASKMOVPS Y2, Y14, 64(BX)
	VMASKMOVPS Y3, Y15, 96(BX)
	ADDQ $32, R13
	JMP  chunk

done:
	VZEROUPPER
	RET
