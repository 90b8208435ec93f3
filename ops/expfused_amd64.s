//go:build amd64 && !purego

#include "textflag.h"
#include "expcore_amd64.h"

// func expChunk32(row, raw *float32, n int, scale, shift float64, sum *float64) int
TEXT ·expChunk32(SB), NOSPLIT, $0-56
	MOVQ row+0(FP), DI
	MOVQ raw+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD scale+24(FP), Y0
	VBROADCASTSD shift+32(FP), Y1
	MOVQ sum+40(FP), DX
	EXP_CONSTS
	VMOVSD (DX), X9 // the running sum
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JAE  done
	EXP4
	VCVTPD2PSY Y15, X12
	VMOVUPS   X12, (DI)(AX*4)
	// sum += e0, e1, e2, e3 in order: the chain of one group overlaps
	// the next group's exponentials.
	VADDSD    X15, X9, X9
	VPERMILPD $1, X15, X13
	VADDSD    X13, X9, X9
	VEXTRACTF128 $1, Y15, X13
	VADDSD    X13, X9, X9
	VPERMILPD $1, X13, X13
	VADDSD    X13, X9, X9
	ADDQ      $4, AX
	JMP       loop

done:
	VMOVSD X9, (DX)
	MOVQ AX, ret+48(FP)
	VZEROUPPER
	RET

// func expChunkF32(row, s *float32, n int, gs, mx float32, sum *float64) int
//
// expChunk32 of x_i = float32(float32(gs·s[i]) − mx), the attention head's
// arguments, computed in float32 as the head computes them.
TEXT ·expChunkF32(SB), NOSPLIT, $0-48
	MOVQ row+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS gs+24(FP), X0
	VBROADCASTSS mx+28(FP), X1
	MOVQ sum+32(FP), DX
	LEAQ ·expConsts(SB), R9
	VBROADCASTSD 0(R9), Y2  // k = 16/ln2
	VBROADCASTSD 8(R9), Y3  // magic
	VBROADCASTSD 16(R9), Y4 // c = ln2/16
	VBROADCASTSD 24(R9), Y5 // -700
	VBROADCASTSD 32(R9), Y6 // 700
	VBROADCASTSD 40(R9), Y7 // 1
	VBROADCASTSD 48(R9), Y8 // 1/2
	VMOVSD    (DX), X9 // the running sum (Y9: 1/6 is loaded where used)
	LEAQ ·expInts(SB), R10
	VPBROADCASTQ 0(R10), Y10 // 15
	LEAQ ·exp2Sixteenths(SB), R8
	XORQ AX, AX

loopf:
	CMPQ AX, CX
	JAE  donef
	VMOVUPS   (SI)(AX*4), X11
	VMULPS    X0, X11, X11 // float32(g·s)
	VSUBPS    X1, X11, X11 // x = float32(g·s − mx)
	VCVTPS2PD X11, Y11     // exactly
	VCMPPD    $0x1e, Y5, Y11, Y12 // x > −700 (ordered)
	VCMPPD    $0x11, Y6, Y11, Y13 // x < 700 (ordered)
	VANDPD    Y13, Y12, Y12
	VMOVMSKPD Y12, BX
	CMPQ      BX, $15
	JNE       donef
	VMULPD    Y2, Y11, Y12  // x·k
	VADDPD    Y3, Y12, Y12  // y = x·k + magic
	VPSUBQ    Y3, Y12, Y13  // n = bits(y) − bits(magic)
	VSUBPD    Y3, Y12, Y14  // y − magic
	VMULPD    Y4, Y14, Y14  // (y − magic)·c
	VSUBPD    Y14, Y11, Y14 // r = x − (y − magic)·c
	VBROADCASTSD 64(R9), Y15 // 1/24
	VMULPD    Y15, Y14, Y15 // r·(1/24)
	VBROADCASTSD 56(R9), Y12 // 1/6 (Y12 is free between y and n & 15)
	VADDPD    Y12, Y15, Y15 // 1/6 + r·(1/24)
	VMULPD    Y15, Y14, Y15 // r·(...)
	VADDPD    Y8, Y15, Y15  // 1/2 + ...
	VMULPD    Y15, Y14, Y15 // r·(...)
	VADDPD    Y7, Y15, Y15  // 1 + ...
	VMULPD    Y15, Y14, Y15 // r·(...)
	VADDPD    Y7, Y15, Y15  // p = 1 + ...
	VPAND     Y10, Y13, Y12 // n & 15
	VPCMPEQQ  Y11, Y11, Y11 // gather mask: all lanes
	VXORPD    Y14, Y14, Y14
	VGATHERQPD Y11, (R8)(Y12*8), Y14 // 2^((n&15)/16)
	VMULPD    Y14, Y15, Y15 // p·2^((n&15)/16)
	VPSRLQ    $4, Y13, Y13  // n >> 4 (the low 12 bits are those of the arithmetic shift)
	LEAQ      ·expInts(SB), R10
	VPBROADCASTQ 8(R10), Y12 // 1023
	VPADDQ    Y12, Y13, Y13
	VPSLLQ    $52, Y13, Y13 // 2^(n>>4)
	VMULPD    Y13, Y15, Y15 // e
	VCVTPD2PSY Y15, X12
	VMOVUPS   X12, (DI)(AX*4)
	// sum += e0, e1, e2, e3 in order: the chain of one group overlaps
	// the next group's exponentials.
	VADDSD    X15, X9, X9
	VPERMILPD $1, X15, X13
	VADDSD    X13, X9, X9
	VEXTRACTF128 $1, Y15, X13
	VADDSD    X13, X9, X9
	VPERMILPD $1, X13, X13
	VADDSD    X13, X9, X9
	ADDQ      $4, AX
	JMP       loopf

donef:
	VMOVSD X9, (DX)
	MOVQ AX, ret+40(FP)
	VZEROUPPER
	RET

