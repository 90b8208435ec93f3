//go:build amd64 && !purego

#include "textflag.h"

// smask: 8 int32 of all ones, then 8 zeros. The 8 int32 at smask + 4·(8−t)
// have their first t lanes set (t in 0..8).
DATA smask<>+0(SB)/8, $0xffffffffffffffff
DATA smask<>+8(SB)/8, $0xffffffffffffffff
DATA smask<>+16(SB)/8, $0xffffffffffffffff
DATA smask<>+24(SB)/8, $0xffffffffffffffff
DATA smask<>+32(SB)/8, $0
DATA smask<>+40(SB)/8, $0
DATA smask<>+48(SB)/8, $0
DATA smask<>+56(SB)/8, $0
GLOBL smask<>(SB), RODATA|NOPTR, $64

// sninf: eight float32 −Inf.
DATA sninf<>+0(SB)/8, $0xff800000ff800000
DATA sninf<>+8(SB)/8, $0xff800000ff800000
DATA sninf<>+16(SB)/8, $0xff800000ff800000
DATA sninf<>+24(SB)/8, $0xff800000ff800000
GLOBL sninf<>(SB), RODATA|NOPTR, $32

// sone: float64 1 (loaded with VMOVSD: a legacy SSE MOVSD after the AVX
// code stalls).
DATA sone<>+0(SB)/8, $0x3ff0000000000000
GLOBL sone<>(SB), RODATA|NOPTR, $8

// EXPGROUP computes the fast exponential of the eight arguments in Y3
// (x = g·s − mx fused, g in Y0, −mx in Y1) into Y7 and adds them, as
// float64, to the lane sums Y14 and Y15; it jumps to bail unless every x
// <= hi. The instructions of expSum8's loop (exp8_amd64.s), in its order.
#define EXPGROUP \
	VFMADD213PS Y1, Y0, Y3; \
	VCMPPS      $2, Y9, Y3, Y4; \
	VMOVMSKPS   Y4, BX; \
	CMPQ        BX, $255; \
	JNE         bail; \
	VCMPPS      $0x1d, Y13, Y3, Y5; \
	VMAXPS      Y13, Y3, Y3; \
	VMULPS      Y10, Y3, Y6; \
	VROUNDPS    $0, Y6, Y6; \
	VFMADD231PS Y11, Y6, Y3; \
	VFMADD231PS Y12, Y6, Y3; \
	VMOVUPS     96(R9), Y7; \
	VFMADD213PS 128(R9), Y3, Y7; \
	VFMADD213PS 160(R9), Y3, Y7; \
	VFMADD213PS 192(R9), Y3, Y7; \
	VFMADD213PS 224(R9), Y3, Y7; \
	VFMADD213PS 256(R9), Y3, Y7; \
	VMULPS      Y3, Y3, Y8; \
	VFMADD213PS Y3, Y8, Y7; \
	VADDPS      288(R9), Y7, Y7; \
	VCVTPS2DQ   Y6, Y6; \
	VPADDD      (R10), Y6, Y6; \
	VPSLLD      $23, Y6, Y6; \
	VMULPS      Y6, Y7, Y7; \
	VANDPS      Y5, Y7, Y7; \
	VCVTPS2PD   X7, Y8; \
	VADDPD      Y8, Y14, Y14; \
	VEXTRACTF128 $1, Y7, X6; \
	VCVTPS2PD   X6, Y8; \
	VADDPD      Y8, Y15, Y15

// LANESUM reduces the lane sums Y14, Y15 into X14 as expSum8 does.
#define LANESUM \
	VADDPD       Y15, Y14, Y14; \
	VEXTRACTF128 $1, Y14, X15; \
	VADDPD       X15, X14, X14; \
	VHADDPD      X14, X14, X14

// func softmaxRows32(w, s *float32, rows, n int, gs float32) int
//
// For each of rows rows of n ≥ 1 scores (rows n apart in s and in w), what
// kernelRow's float32 softmax computes, with the same instructions in the
// same order: mx = maxScaled32(s, n, g); w = expRowFast32's weights and sum
// (expSum8 over the groups of eight, then the last one to seven arguments
// in a group of eight padded with −Inf, its sum added to the first's);
// scaleRow32(w, n, 1/sum). It returns the number of rows done: it stops at
// a row with an argument above exp8Hi or NaN, which expRowFast32 finishes
// with Exp32 (the caller does that row).
TEXT ·softmaxRows32(SB), NOSPLIT, $0-48
	MOVQ         w+0(FP), DI
	MOVQ         s+8(FP), SI
	MOVQ         rows+16(FP), R11
	MOVQ         n+24(FP), CX
	VBROADCASTSS gs+32(FP), Y0
	MOVQ         CX, R8
	ANDQ         $-8, R8             // the full groups' arguments
	MOVQ         CX, R13
	ANDQ         $7, R13             // the tail's
	MOVQ         $8, DX
	SUBQ         R13, DX
	LEAQ         smask<>(SB), R14
	LEAQ         (R14)(DX*4), R14    // the tail's mask
	LEAQ         ·exp8Tab(SB), R9
	LEAQ         ·exp8Bias(SB), R10
	XORQ         R12, R12            // rows done

row:
	CMPQ R12, R11
	JGE  finish

	// mx = maxScaled32(s, n, g) (rowops_amd64.s; its Y1 here Y0, its Y0
	// here Y1).
	VMULSS    (SI), X0, X1
	VBROADCASTSS X1, Y1
	VMOVAPS   Y1, Y3
	XORQ      AX, AX

mloop16:
	LEAQ   16(AX), DX
	CMPQ   DX, CX
	JGT    mloop8
	VMULPS (SI)(AX*4), Y0, Y2
	VMAXPS Y2, Y1, Y1
	VMULPS 32(SI)(AX*4), Y0, Y4
	VMAXPS Y4, Y3, Y3
	MOVQ   DX, AX
	JMP    mloop16

mloop8:
	VMAXPS Y3, Y1, Y1
	LEAQ   8(AX), DX
	CMPQ   DX, CX
	JGT    mreduce
	VMULPS (SI)(AX*4), Y0, Y2
	VMAXPS Y2, Y1, Y1
	MOVQ   DX, AX

mreduce:
	VEXTRACTF128 $1, Y1, X2
	VMAXPS       X2, X1, X1
	VPERMILPS    $0x4e, X1, X2
	VMAXPS       X2, X1, X1
	VPERMILPS    $0xb1, X1, X2
	VMAXPS       X2, X1, X1

mtail:
	CMPQ   AX, CX
	JGE    mdone
	VMULSS (SI)(AX*4), X0, X2
	VMAXSS X2, X1, X1
	INCQ   AX
	JMP    mtail

mdone:
	// −mx in every lane, and expSum8's constants.
	VBROADCASTSS X1, Y1
	VXORPS       Y2, Y2, Y2
	VSUBPS       Y1, Y2, Y1
	VMOVUPS      0(R9), Y10
	VMOVUPS      32(R9), Y11
	VMOVUPS      64(R9), Y12
	VMOVUPS      320(R9), Y13
	VMOVUPS      352(R9), Y9
	VXORPD       Y14, Y14, Y14
	VXORPD       Y15, Y15, Y15
	XORQ         AX, AX

eloop:
	CMPQ    AX, R8
	JGE     edone
	VMOVUPS (SI)(AX*4), Y3
	EXPGROUP
	VMOVUPS Y7, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     eloop

edone:
	LANESUM
	VMOVSD X14, X2, X2 // the sum of the full groups (+0 without one)
	TESTQ  R13, R13
	JZ     scale

	// The tail, padded with −Inf (weight 0), its own lane sums added to
	// the first's.
	VMOVDQU    (R14), Y4
	VMASKMOVPS (SI)(R8*4), Y4, Y3
	VMOVUPS    sninf<>(SB), Y5
	VBLENDVPS  Y4, Y3, Y5, Y3
	VXORPD     Y14, Y14, Y14
	VXORPD     Y15, Y15, Y15
	EXPGROUP
	// The tail's R13 weights stored with a four-, two- and one-lane store
	// (VMASKMOVPS is slow to store on AMD's cores): the same elements.
	LEAQ         (DI)(R8*4), BX
	TESTQ        $4, R13
	JZ           4(PC)
	VMOVUPS      X7, (BX)
	VEXTRACTF128 $1, Y7, X7
	ADDQ         $16, BX
	TESTQ        $2, R13
	JZ           4(PC)
	VMOVQ        X7, (BX)
	VMOVHLPS     X7, X7, X7
	ADDQ         $8, BX
	TESTQ        $1, R13
	JZ           2(PC)
	VMOVSS       X7, (BX)
	LANESUM
	VADDSD     X14, X2, X2

scale:
	// w[i] = float32(float64(w[i])·(1/sum)) (scaleRow32).
	VMOVSD       sone<>(SB), X3
	VDIVSD       X2, X3, X3
	VBROADCASTSD X3, Y3
	XORQ         AX, AX

sloop4:
	LEAQ       4(AX), DX
	CMPQ       DX, CX
	JGT        stail
	VCVTPS2PD  (DI)(AX*4), Y4
	VMULPD     Y3, Y4, Y4
	VCVTPD2PSY Y4, X4
	VMOVUPS    X4, (DI)(AX*4)
	MOVQ       DX, AX
	JMP        sloop4

stail:
	CMPQ      AX, CX
	JGE       snext
	VCVTSS2SD (DI)(AX*4), X4, X4
	VMULSD    X3, X4, X4
	VCVTSD2SS X4, X4, X4
	VMOVSS    X4, (DI)(AX*4)
	INCQ      AX
	JMP       stail

snext:
	LEAQ (SI)(CX*4), SI
	LEAQ (DI)(CX*4), DI
	INCQ R12
	JMP  row

bail:
	VZEROUPPER
	MOVQ R12, ret+40(FP)
	RET

finish:
	VZEROUPPER
	MOVQ R11, ret+40(FP)
	RET
