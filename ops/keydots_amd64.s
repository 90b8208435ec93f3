//go:build amd64 && !purego

#include "textflag.h"

// QUAD accumulates into acc the products of the four keys at kp (rows ld
// bytes apart) with q[c..c+3], c the byte offset in AX: a 4×4 transpose of
// the keys' floats, each column widened to float64, multiplied by the
// broadcast q[c+t] (Y12-Y15, already float64) and added to acc in the
// order t = 0..3. Uses X4-X11.
#define QUAD(kp, acc) \
	MOVQ      kp, R11; \
	VMOVUPS   (R11)(AX*1), X4; \
	ADDQ      R8, R11; \
	VMOVUPS   (R11)(AX*1), X5; \
	ADDQ      R8, R11; \
	VMOVUPS   (R11)(AX*1), X6; \
	ADDQ      R8, R11; \
	VMOVUPS   (R11)(AX*1), X7; \
	VUNPCKLPS X5, X4, X8; \
	VUNPCKHPS X5, X4, X9; \
	VUNPCKLPS X7, X6, X10; \
	VUNPCKHPS X7, X6, X11; \
	VMOVLHPS  X10, X8, X4; \
	VMOVHLPS  X8, X10, X5; \
	VMOVLHPS  X11, X9, X6; \
	VMOVHLPS  X9, X11, X7; \
	VCVTPS2PD X4, Y4; \
	VMULPD    Y12, Y4, Y4; \
	VADDPD    Y4, acc, acc; \
	VCVTPS2PD X5, Y5; \
	VMULPD    Y13, Y5, Y5; \
	VADDPD    Y5, acc, acc; \
	VCVTPS2PD X6, Y6; \
	VMULPD    Y14, Y6, Y6; \
	VADDPD    Y6, acc, acc; \
	VCVTPS2PD X7, Y7; \
	VMULPD    Y15, Y7, Y7; \
	VADDPD    Y7, acc, acc

// func keyDots16(q, k *float32, d int, dots *float64)
//
// dots[i] = Σ_c float64(q[c])·float64(k[i·d + c]) for i < 16, each summed
// in float64 in index order from +0 (the products are exact), as dot4
// sums them, so the same bits. d is a positive multiple of 4.
TEXT ·keyDots16(SB), NOSPLIT, $0-32
	MOVQ q+0(FP), SI
	MOVQ k+8(FP), DI
	MOVQ d+16(FP), CX
	MOVQ dots+24(FP), DX
	MOVQ CX, R8
	SHLQ $2, R8         // a key row in bytes
	LEAQ (DI)(R8*4), R12 // keys 4..7
	LEAQ (R12)(R8*4), R13 // keys 8..11
	LEAQ (R13)(R8*4), R14 // keys 12..15
	SHLQ $2, CX         // d in bytes
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	XORQ AX, AX         // c in bytes

loop:
	CMPQ AX, CX
	JAE  done
	VBROADCASTSS 0(SI)(AX*1), X12
	VCVTPS2PD    X12, Y12
	VBROADCASTSS 4(SI)(AX*1), X13
	VCVTPS2PD    X13, Y13
	VBROADCASTSS 8(SI)(AX*1), X14
	VCVTPS2PD    X14, Y14
	VBROADCASTSS 12(SI)(AX*1), X15
	VCVTPS2PD    X15, Y15
	QUAD(DI, Y0)
	QUAD(R12, Y1)
	QUAD(R13, Y2)
	QUAD(R14, Y3)
	ADDQ $16, AX
	JMP  loop

done:
	VMOVUPD Y0, 0(DX)
	VMOVUPD Y1, 32(DX)
	VMOVUPD Y2, 64(DX)
	VMOVUPD Y3, 96(DX)
	VZEROUPPER
	RET
