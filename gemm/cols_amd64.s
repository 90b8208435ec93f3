//go:build amd64 && !purego

#include "textflag.h"

// func cols6x8f32(dst, src *float32, lda, full, kb, blocks int)
//
// The eight-line blocks of cols6 for float32 (SSE2 moves, any amd64):
// for block b < blocks (lines l = 8b..8b+7 of src, lda elements apart) and
// panel q < full, the six elements src[l·lda + 6q ..] go to
// dst[q·6·kb + l·6 ..], the block's eight lines of a panel 48 consecutive
// elements. The caller checks every bound.
TEXT ·cols6x8f32(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), R8
	MOVQ src+8(FP), SI
	MOVQ lda+16(FP), DX
	SHLQ $2, DX                 // DX = lda in bytes
	LEAQ (DX)(DX*2), BX         // BX = 3·lda bytes
	MOVQ kb+32(FP), R9
	IMULQ $24, R9               // R9 = a panel's stride, 6·kb·4 bytes
	MOVQ blocks+40(FP), R11

block:
	TESTQ R11, R11
	JEQ   done
	MOVQ  full+24(FP), CX
	MOVQ  SI, R12               // line 0 of the block, panel 0
	LEAQ  (SI)(DX*4), R13       // line 4
	MOVQ  R8, R10               // the block's stretch of panel 0
	LEAQ  (R12)(DX*8), AX       // the next block's lines 0 and 4, prefetched
	LEAQ  (R13)(DX*8), DI

panel:
	TESTQ CX, CX
	JEQ   nextblock
	PREFETCHT0 (AX)
	PREFETCHT0 (AX)(DX*1)
	PREFETCHT0 (AX)(DX*2)
	PREFETCHT0 (AX)(BX*1)
	PREFETCHT0 (DI)
	PREFETCHT0 (DI)(DX*1)
	PREFETCHT0 (DI)(DX*2)
	PREFETCHT0 (DI)(BX*1)
	MOVUPS (R12), X0
	MOVQ   16(R12), X1
	MOVUPS (R12)(DX*1), X2
	MOVQ   16(R12)(DX*1), X3
	MOVUPS (R12)(DX*2), X4
	MOVQ   16(R12)(DX*2), X5
	MOVUPS (R12)(BX*1), X6
	MOVQ   16(R12)(BX*1), X7
	MOVUPS X0, 0(R10)
	MOVQ   X1, 16(R10)
	MOVUPS X2, 24(R10)
	MOVQ   X3, 40(R10)
	MOVUPS X4, 48(R10)
	MOVQ   X5, 64(R10)
	MOVUPS X6, 72(R10)
	MOVQ   X7, 88(R10)
	MOVUPS (R13), X0
	MOVQ   16(R13), X1
	MOVUPS (R13)(DX*1), X2
	MOVQ   16(R13)(DX*1), X3
	MOVUPS (R13)(DX*2), X4
	MOVQ   16(R13)(DX*2), X5
	MOVUPS (R13)(BX*1), X6
	MOVQ   16(R13)(BX*1), X7
	MOVUPS X0, 96(R10)
	MOVQ   X1, 112(R10)
	MOVUPS X2, 120(R10)
	MOVQ   X3, 136(R10)
	MOVUPS X4, 144(R10)
	MOVQ   X5, 160(R10)
	MOVUPS X6, 168(R10)
	MOVQ   X7, 184(R10)
	ADDQ   $24, R12
	ADDQ   $24, R13
	ADDQ   $24, AX
	ADDQ   $24, DI
	ADDQ   R9, R10
	DECQ   CX
	JMP    panel

nextblock:
	LEAQ (SI)(DX*8), SI         // eight lines on
	ADDQ $192, R8               // eight lines of six further into each panel
	DECQ R11
	JMP  block

done:
	RET

// func cols16f32(dst, src *float32, lda, full, kb int)
//
// cols16 of the 16-wide full panels for float32 (SSE2 moves, any amd64):
// for line l < kb and panel q < full, the sixteen elements
// src[l·lda + 16q ..] go to dst[q·16·kb + l·16 ..] (one cache line each).
// The caller checks every bound.
TEXT ·cols16f32(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), R8
	MOVQ src+8(FP), SI
	MOVQ lda+16(FP), DX
	SHLQ $2, DX                 // DX = lda in bytes
	MOVQ kb+32(FP), R9
	MOVQ R9, R11
	SHLQ $6, R9                 // R9 = a panel's stride, 16·kb·4 bytes

line16:
	TESTQ R11, R11
	JEQ   done16
	MOVQ  full+24(FP), CX
	MOVQ  SI, R12
	MOVQ  R8, R10

panel16:
	TESTQ  CX, CX
	JEQ    next16
	MOVUPS 0(R12), X0
	MOVUPS 16(R12), X1
	MOVUPS 32(R12), X2
	MOVUPS 48(R12), X3
	MOVUPS X0, 0(R10)
	MOVUPS X1, 16(R10)
	MOVUPS X2, 32(R10)
	MOVUPS X3, 48(R10)
	ADDQ   $64, R12
	ADDQ   R9, R10
	DECQ   CX
	JMP    panel16

next16:
	ADDQ DX, SI
	ADDQ $64, R8
	DECQ R11
	JMP  line16

done16:
	RET

// func trans16f32(dst, src *float32, ld, kb4 int)
//
// gather8x2's transposing copy for float32 in blocks of four elements
// (SSE2 shuffles, any amd64): for l < kb4 (a multiple of 4) and row r <
// 16, src[r·ld + l] goes to dst[l·16 + r]; four 4×4 transposes per four
// elements of the sixteen rows. The caller checks every bound.
TEXT ·trans16f32(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), R10
	MOVQ src+8(FP), R12
	MOVQ ld+16(FP), DX
	SHLQ $2, DX                 // DX = ld in bytes
	LEAQ (DX)(DX*2), BX         // BX = 3·ld bytes
	LEAQ (R12)(DX*4), R13       // rows 4, 8, 12
	LEAQ (R13)(DX*4), AX
	LEAQ (AX)(DX*4), DI
	MOVQ kb4+24(FP), CX
	SHRQ $2, CX

tloop:
	TESTQ CX, CX
	JEQ   tdone
	MOVUPS (R12), X0
	MOVUPS (R12)(DX*1), X1
	MOVUPS (R12)(DX*2), X2
	MOVUPS (R12)(BX*1), X3
	MOVAPS X0, X4
	UNPCKLPS X1, X0
	UNPCKHPS X1, X4
	MOVAPS X2, X5
	UNPCKLPS X3, X2
	UNPCKHPS X3, X5
	MOVAPS X0, X1
	MOVLHPS X2, X1
	MOVHLPS X0, X2
	MOVAPS X4, X3
	MOVLHPS X5, X3
	MOVHLPS X4, X5
	MOVUPS X1, 0(R10)
	MOVUPS X2, 64(R10)
	MOVUPS X3, 128(R10)
	MOVUPS X5, 192(R10)
	MOVUPS (R13), X0
	MOVUPS (R13)(DX*1), X1
	MOVUPS (R13)(DX*2), X2
	MOVUPS (R13)(BX*1), X3
	MOVAPS X0, X4
	UNPCKLPS X1, X0
	UNPCKHPS X1, X4
	MOVAPS X2, X5
	UNPCKLPS X3, X2
	UNPCKHPS X3, X5
	MOVAPS X0, X1
	MOVLHPS X2, X1
	MOVHLPS X0, X2
	MOVAPS X4, X3
	MOVLHPS X5, X3
	MOVHLPS X4, X5
	MOVUPS X1, 16(R10)
	MOVUPS X2, 80(R10)
	MOVUPS X3, 144(R10)
	MOVUPS X5, 208(R10)
	MOVUPS (AX), X0
	MOVUPS (AX)(DX*1), X1
	MOVUPS (AX)(DX*2), X2
	MOVUPS (AX)(BX*1), X3
	MOVAPS X0, X4
	UNPCKLPS X1, X0
	UNPCKHPS X1, X4
	MOVAPS X2, X5
	UNPCKLPS X3, X2
	UNPCKHPS X3, X5
	MOVAPS X0, X1
	MOVLHPS X2, X1
	MOVHLPS X0, X2
	MOVAPS X4, X3
	MOVLHPS X5, X3
	MOVHLPS X4, X5
	MOVUPS X1, 32(R10)
	MOVUPS X2, 96(R10)
	MOVUPS X3, 160(R10)
	MOVUPS X5, 224(R10)
	MOVUPS (DI), X0
	MOVUPS (DI)(DX*1), X1
	MOVUPS (DI)(DX*2), X2
	MOVUPS (DI)(BX*1), X3
	MOVAPS X0, X4
	UNPCKLPS X1, X0
	UNPCKHPS X1, X4
	MOVAPS X2, X5
	UNPCKLPS X3, X2
	UNPCKHPS X3, X5
	MOVAPS X0, X1
	MOVLHPS X2, X1
	MOVHLPS X0, X2
	MOVAPS X4, X3
	MOVLHPS X5, X3
	MOVHLPS X4, X5
	MOVUPS X1, 48(R10)
	MOVUPS X2, 112(R10)
	MOVUPS X3, 176(R10)
	MOVUPS X5, 240(R10)
	ADDQ $16, R12
	ADDQ $16, R13
	ADDQ $16, AX
	ADDQ $16, DI
	ADDQ $256, R10
	DECQ CX
	JMP  tloop

tdone:
	RET
