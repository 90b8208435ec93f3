//go:build amd64 && !purego

#include "textflag.h"

// func lanes8Weights(ls *float32, n int, gs float32, gd float64, acc *[128]float64) bool
//
// The softmax kernel's weights of eight rows of raw scores at once, row r
// in lane r of ls (ls[i·8 + r], n ≥ 1 scores a row), as dotWeights computes
// each row with g > 0 on AVX2 (see weightlanes.go): m the row's maximum,
// mx = float32(gd·float64(m)), e_i = expSum8's exponential of x_i = g·s_i −
// mx (fused) summed in float64 as expRowFast32 sums them (expSum8 on the
// first n &^ 7 scores: eight accumulators over the groups, then (a_j +
// a_j+4), then the pairs; then expSum8 on the rest padded with −Inf, the
// same tree, added), then w_i = float32(float64(e_i)·(1/sum)) written back
// to ls. acc is scratch. It returns false, ls then undefined, where
// expRowFast32 would leave expSum8 (an x above exp8Hi, or NaN).
TEXT ·lanes8Weights(SB), NOSPLIT, $0-41
	MOVQ ls+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ acc+32(FP), DI
	// The maximum of each row.
	VMOVUPS (SI), Y2
	MOVQ    $1, AX

wmax:
	CMPQ   AX, CX
	JGE    wmx
	MOVQ   AX, DX
	SHLQ   $5, DX
	VMAXPS (SI)(DX*1), Y2, Y2
	INCQ   AX
	JMP    wmax

wmx:
	// mx = float32(gd·float64(m)); Y1 = 0 − mx, as expSum8 negates it.
	VBROADCASTSD gd+24(FP), Y1
	VCVTPS2PD    X2, Y3
	VMULPD       Y1, Y3, Y3
	VCVTPD2PSY   Y3, X3
	VEXTRACTF128 $1, Y2, X4
	VCVTPS2PD    X4, Y4
	VMULPD       Y1, Y4, Y4
	VCVTPD2PSY   Y4, X4
	VINSERTF128  $1, X4, Y3, Y3
	VXORPS       Y2, Y2, Y2
	VSUBPS       Y3, Y2, Y1
	VBROADCASTSS gs+16(FP), Y0
	// Zero the accumulators: acc[j·8 + r], j < 8, for the groups of
	// eight; acc[64 + j·8 + r] for the padded rest.
	VXORPD  Y2, Y2, Y2
	XORQ    AX, AX

wzero:
	VMOVUPD Y2, (DI)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, $128
	JLT     wzero
	MOVQ    CX, R11
	ANDQ    $-8, R11 // n8 = n &^ 7
	LEAQ ·exp8Tab(SB), R9
	LEAQ ·exp8Bias(SB), R10
	VMOVUPS 0(R9), Y10   // log2e
	VMOVUPS 32(R9), Y11  // −C1
	VMOVUPS 64(R9), Y12  // −C2
	VMOVUPS 320(R9), Y13 // lo
	VMOVUPS 352(R9), Y9  // hi
	XORQ AX, AX

wexp:
	CMPQ        AX, CX
	JGE         wsum
	MOVQ        AX, DX
	SHLQ        $5, DX
	VMOVUPS     (SI)(DX*1), Y3
	VFMADD213PS Y1, Y0, Y3 // x = g·s − mx
	VCMPPS      $2, Y9, Y3, Y4 // x <= hi (false for NaN)
	VMOVMSKPS   Y4, BX
	CMPQ        BX, $255
	JNE         wfail
	VCMPPS      $0x1d, Y13, Y3, Y5 // m = x >= lo
	VMAXPS      Y13, Y3, Y3
	VMULPS      Y10, Y3, Y6
	VROUNDPS    $0, Y6, Y6          // n
	VFMADD231PS Y11, Y6, Y3         // r = x − n·C1
	VFMADD231PS Y12, Y6, Y3         // r −= n·C2
	VMOVUPS     96(R9), Y7          // p0
	VFMADD213PS 128(R9), Y3, Y7
	VFMADD213PS 160(R9), Y3, Y7
	VFMADD213PS 192(R9), Y3, Y7
	VFMADD213PS 224(R9), Y3, Y7
	VFMADD213PS 256(R9), Y3, Y7
	VMULPS      Y3, Y3, Y8          // r²
	VFMADD213PS Y3, Y8, Y7          // y r² + r
	VADDPS      288(R9), Y7, Y7     // + 1
	VCVTPS2DQ   Y6, Y6
	VPADDD      (R10), Y6, Y6
	VPSLLD      $23, Y6, Y6
	VMULPS      Y6, Y7, Y7
	VANDPS      Y5, Y7, Y7
	VMOVUPS     Y7, (SI)(DX*1)
	// Its accumulator: a_(i mod 8) for i < n8, else the padded group's
	// slot i − n8.
	MOVQ         AX, BX
	CMPQ         AX, R11
	JGE          wtail
	ANDQ         $7, BX
	SHLQ         $6, BX
	VCVTPS2PD    X7, Y8
	VADDPD       (DI)(BX*1), Y8, Y8
	VMOVUPD      Y8, (DI)(BX*1)
	VEXTRACTF128 $1, Y7, X7
	VCVTPS2PD    X7, Y8
	VADDPD       32(DI)(BX*1), Y8, Y8
	VMOVUPD      Y8, 32(DI)(BX*1)
	INCQ         AX
	JMP          wexp

wtail:
	SUBQ         R11, BX
	SHLQ         $6, BX
	VCVTPS2PD    X7, Y8
	VADDPD       512(DI)(BX*1), Y8, Y8
	VMOVUPD      Y8, 512(DI)(BX*1)
	VEXTRACTF128 $1, Y7, X7
	VCVTPS2PD    X7, Y8
	VADDPD       544(DI)(BX*1), Y8, Y8
	VMOVUPD      Y8, 544(DI)(BX*1)
	INCQ         AX
	JMP          wexp

// TREE sets (Ylo, Yhi) to ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7))
// of the accumulators at off(DI), each of 8 lanes (two YMM).
#define TREE(off, Ylo, Yhi) \
	VMOVUPD off+0(DI), Y2; \
	VADDPD  off+256(DI), Y2, Y2; \
	VMOVUPD off+128(DI), Y3; \
	VADDPD  off+384(DI), Y3, Y3; \
	VADDPD  Y3, Y2, Y2; \
	VMOVUPD off+64(DI), Y4; \
	VADDPD  off+320(DI), Y4, Y4; \
	VMOVUPD off+192(DI), Y5; \
	VADDPD  off+448(DI), Y5, Y5; \
	VADDPD  Y5, Y4, Y4; \
	VADDPD  Y4, Y2, Ylo; \
	VMOVUPD off+32(DI), Y2; \
	VADDPD  off+288(DI), Y2, Y2; \
	VMOVUPD off+160(DI), Y3; \
	VADDPD  off+416(DI), Y3, Y3; \
	VADDPD  Y3, Y2, Y2; \
	VMOVUPD off+96(DI), Y4; \
	VADDPD  off+352(DI), Y4, Y4; \
	VMOVUPD off+224(DI), Y5; \
	VADDPD  off+480(DI), Y5, Y5; \
	VADDPD  Y5, Y4, Y4; \
	VADDPD  Y4, Y2, Yhi

wsum:
	// sum = S1 (n8 > 0), + S2 (n > n8); S1 alone or S2 alone otherwise
	// (0 + S2 is S2).
	CMPQ R11, $0
	JEQ  wonlytail
	TREE(0, Y14, Y15)
	CMPQ R11, CX
	JEQ  wnorm
	TREE(512, Y6, Y7)
	VADDPD Y6, Y14, Y14
	VADDPD Y7, Y15, Y15
	JMP  wnorm

wonlytail:
	TREE(512, Y14, Y15)

wnorm:
	VBROADCASTSD ·expConsts+40(SB), Y2 // 1
	VDIVPD       Y14, Y2, Y14          // inv = 1/sum
	VDIVPD       Y15, Y2, Y15
	XORQ         AX, AX

wnl:
	CMPQ         AX, CX
	JGE          wok
	MOVQ         AX, DX
	SHLQ         $5, DX
	VCVTPS2PD    (SI)(DX*1), Y3
	VMULPD       Y14, Y3, Y3
	VCVTPD2PSY   Y3, X3
	VCVTPS2PD    16(SI)(DX*1), Y4
	VMULPD       Y15, Y4, Y4
	VCVTPD2PSY   Y4, X4
	VINSERTF128  $1, X4, Y3, Y3
	VMOVUPS      Y3, (SI)(DX*1)
	INCQ         AX
	JMP          wnl

wok:
	MOVB $1, ret+40(FP)
	VZEROUPPER
	RET

wfail:
	MOVB $0, ret+40(FP)
	VZEROUPPER
	RET
