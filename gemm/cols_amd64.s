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
