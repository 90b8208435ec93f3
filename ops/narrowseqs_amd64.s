//go:build amd64 && !purego

#include "textflag.h"

// narrowWideSeqs32: narrowWide32 (narrow_amd64.s) over many products of
// the same sizes in one call, the same instructions for each product.

// smask: 8 int32 of all ones, then 8 zeros (nmask of narrow_amd64.s).
DATA smask<>+0(SB)/8, $0xffffffffffffffff
DATA smask<>+8(SB)/8, $0xffffffffffffffff
DATA smask<>+16(SB)/8, $0xffffffffffffffff
DATA smask<>+24(SB)/8, $0xffffffffffffffff
DATA smask<>+32(SB)/8, $0
DATA smask<>+40(SB)/8, $0
DATA smask<>+48(SB)/8, $0
DATA smask<>+56(SB)/8, $0
GLOBL smask<>(SB), RODATA|NOPTR, $64

// SMASK loads into Y the mask of the first clamp(w−off, 0, 8) float32
// lanes; uses BX, CX (NMASK of narrow_amd64.s).
#define SMASK(w, off, Y) \
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
	LEAQ smask<>(SB), BX; \
	VMOVDQU (BX)(CX*4), Y

// SPART stores the first CX lanes (1..7) of the float32 vector Yv (Xv its
// low half) at addr with plain stores, four, two and one lanes
// (STOREPART32 of narrow_amd64.s). Yv is destroyed; uses BX.
#define SPART(Yv, Xv, addr) \
	LEAQ addr, BX; \
	TESTQ $4, CX; \
	JZ 4(PC); \
	VMOVUPS Xv, (BX); \
	VEXTRACTF128 $1, Yv, Xv; \
	ADDQ $16, BX; \
	TESTQ $2, CX; \
	JZ 4(PC); \
	VMOVQ Xv, (BX); \
	VMOVHLPS Xv, Xv, Xv; \
	ADDQ $8, BX; \
	TESTQ $1, CX; \
	JZ 2(PC); \
	VMOVSS Xv, (BX)

// func narrowWideSeqs32(c, a, b *float32, ldc, rsa, inca, ldb, k, n int, mode uint8, nseq, sc, sa, sb int)
//
// For s < nseq (nseq ≥ 1), narrowWide32(c + s·sc, a + s·sa, b + s·sb, ldc,
// rsa, inca, ldb, k, n, mode): the same instructions for every product, so
// the same chains of fused multiply-adds and the same bits. The pointers
// and nseq are updated in the argument frame as the products go.
TEXT ·narrowWideSeqs32(SB), NOSPLIT, $0-112
	MOVQ n+64(FP), AX
	SMASK(AX, 0, Y14)
	SMASK(AX, 8, Y15)
	MOVQ ldc+24(FP), R12
	SHLQ $2, R12
	LEAQ (R12)(R12*2), R13
	MOVQ rsa+32(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	MOVQ inca+40(FP), R10
	SHLQ $2, R10
	MOVQ ldb+48(FP), R11
	SHLQ $2, R11
	MOVBLZX mode+72(FP), AX
	SHLQ $2, sc+88(FP)
	SHLQ $2, sa+96(FP)
	SHLQ $2, sb+104(FP)

sseq:
	MOVQ c+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ k+56(FP), CX
	CMPQ AX, $2
	JNE  szero
	// mode 2: the chains go on from the values in C.
	VMASKMOVPS (DI), Y14, Y0
	VMASKMOVPS 32(DI), Y15, Y1
	VMASKMOVPS (DI)(R12*1), Y14, Y2
	VMASKMOVPS 32(DI)(R12*1), Y15, Y3
	VMASKMOVPS (DI)(R12*2), Y14, Y4
	VMASKMOVPS 32(DI)(R12*2), Y15, Y5
	VMASKMOVPS (DI)(R13*1), Y14, Y6
	VMASKMOVPS 32(DI)(R13*1), Y15, Y7
	JMP  sloop

szero:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

sloop:
	VMASKMOVPS (DX), Y14, Y8
	VMASKMOVPS 32(DX), Y15, Y9
	VBROADCASTSS (SI), Y10
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y10, Y1
	VBROADCASTSS (SI)(R8*1), Y11
	VFMADD231PS Y8, Y11, Y2
	VFMADD231PS Y9, Y11, Y3
	VBROADCASTSS (SI)(R8*2), Y12
	VFMADD231PS Y8, Y12, Y4
	VFMADD231PS Y9, Y12, Y5
	VBROADCASTSS (SI)(R9*1), Y13
	VFMADD231PS Y8, Y13, Y6
	VFMADD231PS Y9, Y13, Y7
	ADDQ R10, SI
	ADDQ R11, DX
	DECQ CX
	JNZ  sloop

	CMPQ AX, $1
	JNE  sstore
	VMASKMOVPS (DI), Y14, Y8
	VADDPS Y8, Y0, Y0
	VMASKMOVPS 32(DI), Y15, Y9
	VADDPS Y9, Y1, Y1
	VMASKMOVPS (DI)(R12*1), Y14, Y8
	VADDPS Y8, Y2, Y2
	VMASKMOVPS 32(DI)(R12*1), Y15, Y9
	VADDPS Y9, Y3, Y3
	VMASKMOVPS (DI)(R12*2), Y14, Y8
	VADDPS Y8, Y4, Y4
	VMASKMOVPS 32(DI)(R12*2), Y15, Y9
	VADDPS Y9, Y5, Y5
	VMASKMOVPS (DI)(R13*1), Y14, Y8
	VADDPS Y8, Y6, Y6
	VMASKMOVPS 32(DI)(R13*1), Y15, Y9
	VADDPS Y9, Y7, Y7

sstore:
	// A full vector of columns with VMOVUPS, a partial one with SPART, an
	// empty one not at all (narrowWide32's stores).
	MOVQ n+64(FP), CX
	CMPQ CX, $8
	JLT  smaskst
	VMOVUPS Y0, (DI)
	VMOVUPS Y2, (DI)(R12*1)
	VMOVUPS Y4, (DI)(R12*2)
	VMOVUPS Y6, (DI)(R13*1)
	SUBQ $8, CX
	JZ   snext
	CMPQ CX, $8
	JLT  spart
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y3, 32(DI)(R12*1)
	VMOVUPS Y5, 32(DI)(R12*2)
	VMOVUPS Y7, 32(DI)(R13*1)
	JMP  snext

spart:
	SPART(Y1, X1, 32(DI))
	SPART(Y3, X3, 32(DI)(R12*1))
	SPART(Y5, X5, 32(DI)(R12*2))
	SPART(Y7, X7, 32(DI)(R13*1))
	JMP  snext

smaskst:
	SPART(Y0, X0, (DI))
	SPART(Y2, X2, (DI)(R12*1))
	SPART(Y4, X4, (DI)(R12*2))
	SPART(Y6, X6, (DI)(R13*1))

snext:
	// The next product's pointers (none past the last product).
	DECQ nseq+80(FP)
	JZ   sdone
	MOVQ sc+88(FP), BX
	ADDQ BX, c+0(FP)
	MOVQ sa+96(FP), BX
	ADDQ BX, a+8(FP)
	MOVQ sb+104(FP), BX
	ADDQ BX, b+16(FP)
	JMP  sseq

sdone:
	VZEROUPPER
	RET
