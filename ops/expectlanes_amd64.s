//go:build amd64 && !purego

#include "textflag.h"
#include "expcore_amd64.h"

// The kernels of the float32 expectation op (expectlanes.go): four rows of
// f at once, one row per lane of an XMM register (float32) or a YMM
// register (float64), so that the chains of different rows overlap. Every
// element is computed with the operations, in the order, of the gemm and
// row-softmax path they replace (see expectlanes.go), so the same bits.

// func lanes4Product(dst, ft, b *float32, k, n, ldb int)
//
// dst[c·4 + lane] = Σ_{l<k} ft[l·4 + lane]·b[l·ldb + c] for c < n, lane <
// 4, each one chain of fused multiply-adds over l in order, from zero;
// eight columns at a time. k ≥ 1.
TEXT ·lanes4Product(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ft+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ k+24(FP), CX
	MOVQ n+32(FP), R8
	MOVQ ldb+40(FP), R9
	SHLQ $2, R9
	XORQ AX, AX

p8:
	LEAQ 8(AX), BX
	CMPQ BX, R8
	JGT  p1
	VXORPS X0, X0, X0
	VXORPS X1, X1, X1
	VXORPS X2, X2, X2
	VXORPS X3, X3, X3
	VXORPS X4, X4, X4
	VXORPS X5, X5, X5
	VXORPS X6, X6, X6
	VXORPS X7, X7, X7
	MOVQ   SI, R10
	LEAQ   (DX)(AX*4), R11
	MOVQ   CX, R12

p8l:
	VMOVUPS      (R10), X8
	VBROADCASTSS 0(R11), X9
	VFMADD231PS  X9, X8, X0
	VBROADCASTSS 4(R11), X10
	VFMADD231PS  X10, X8, X1
	VBROADCASTSS 8(R11), X11
	VFMADD231PS  X11, X8, X2
	VBROADCASTSS 12(R11), X12
	VFMADD231PS  X12, X8, X3
	VBROADCASTSS 16(R11), X9
	VFMADD231PS  X9, X8, X4
	VBROADCASTSS 20(R11), X10
	VFMADD231PS  X10, X8, X5
	VBROADCASTSS 24(R11), X11
	VFMADD231PS  X11, X8, X6
	VBROADCASTSS 28(R11), X12
	VFMADD231PS  X12, X8, X7
	ADDQ         $16, R10
	ADDQ         R9, R11
	DECQ         R12
	JNZ          p8l
	MOVQ         AX, R13
	SHLQ         $4, R13
	ADDQ         DI, R13
	VMOVUPS      X0, 0(R13)
	VMOVUPS      X1, 16(R13)
	VMOVUPS      X2, 32(R13)
	VMOVUPS      X3, 48(R13)
	VMOVUPS      X4, 64(R13)
	VMOVUPS      X5, 80(R13)
	VMOVUPS      X6, 96(R13)
	VMOVUPS      X7, 112(R13)
	MOVQ         BX, AX
	JMP          p8

p1:
	CMPQ   AX, R8
	JGE    pdone
	VXORPS X0, X0, X0
	MOVQ   SI, R10
	LEAQ   (DX)(AX*4), R11
	MOVQ   CX, R12

p1l:
	VMOVUPS      (R10), X8
	VBROADCASTSS (R11), X9
	VFMADD231PS  X9, X8, X0
	ADDQ         $16, R10
	ADDQ         R9, R11
	DECQ         R12
	JNZ          p1l
	MOVQ         AX, R13
	SHLQ         $4, R13
	VMOVUPS      X0, (DI)(R13*1)
	INCQ         AX
	JMP          p1

pdone:
	RET

// func lanes4Softmax(ls *float32, n int, p *float32, ldp int) bool
//
// The softmax of each lane's row of ls (n ≥ 1 values, ls[c·4 + lane]) as
// softmaxRowInPlace computes it on AVX2: m the row's maximum, e_c =
// Exp32(float64(ls_c − m)) on exp32Core's operations, summed in float64 in
// index order, then ls_c = float32(float64(float32(e_c))·inv) with inv =
// float64(float32(1/sum)). It writes the result to ls and to the rows of
// p (lane i's row at p + i·ldp). It returns false, touching nothing, when
// an argument would be outside exp32Core's range (−700, 700) or NaN (an
// entry ±Inf or NaN, or 700 or more below the row's maximum): the caller
// then computes those rows another way.
TEXT ·lanes4Softmax(SB), NOSPLIT, $0-33
	MOVQ ls+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ p+16(FP), DI
	MOVQ ldp+24(FP), R11
	SHLQ $2, R11
	VMOVUPS (SI), X1          // the maximum
	VMOVAPS X1, X2            // the minimum
	VCMPPS  $7, X1, X1, X3    // no NaN so far
	MOVQ    $1, AX

smax:
	CMPQ    AX, CX
	JGE     scheck
	MOVQ    AX, DX
	SHLQ    $4, DX
	VMOVUPS (SI)(DX*1), X4
	VMAXPS  X4, X1, X1
	VMINPS  X4, X2, X2
	VCMPPS  $7, X4, X4, X5
	VANDPS  X5, X3, X3
	INCQ    AX
	JMP     smax

scheck:
	// Every argument float32(ls_c − m) lies in [float32(min − m), 0]
	// when the row is finite: one check for the row, that min − m > −700
	// and that no entry is NaN (±Inf makes min − m −Inf or NaN).
	VSUBPS       X1, X2, X4
	MOVL         $0xc42f0000, BX // −700
	MOVL         BX, X5
	VBROADCASTSS X5, X5
	VCMPPS       $0x1e, X5, X4, X4
	VANDPS       X4, X3, X3
	VMOVMSKPS    X3, BX
	CMPQ         BX, $15
	JNE          sfail
	EXP_CONSTS
	VXORPD Y9, Y9, Y9
	XORQ   AX, AX

sexpl:
	CMPQ      AX, CX
	JGE       snorm
	MOVQ      AX, DX
	SHLQ      $4, DX
	VMOVUPS   (SI)(DX*1), X11
	VSUBPS    X1, X11, X11 // x = float32(ls − m)
	VCVTPS2PD X11, Y11     // exactly; in (−700, 0]
	VMULPD    Y2, Y11, Y12
	VADDPD    Y3, Y12, Y12
	VPSUBQ    Y3, Y12, Y13
	VSUBPD    Y3, Y12, Y14
	VMULPD    Y4, Y14, Y14
	VSUBPD    Y14, Y11, Y14
	VBROADCASTSD 64(R9), Y15
	VMULPD    Y15, Y14, Y15
	VBROADCASTSD 56(R9), Y12
	VADDPD    Y12, Y15, Y15
	VMULPD    Y15, Y14, Y15
	VADDPD    Y8, Y15, Y15
	VMULPD    Y15, Y14, Y15
	VADDPD    Y7, Y15, Y15
	VMULPD    Y15, Y14, Y15
	VADDPD    Y7, Y15, Y15
	VPAND     Y10, Y13, Y12
	VPCMPEQQ  Y11, Y11, Y11
	VXORPD    Y14, Y14, Y14
	VGATHERQPD Y11, (R8)(Y12*8), Y14
	VMULPD    Y14, Y15, Y15
	VPSRLQ    $4, Y13, Y13
	LEAQ      ·expInts(SB), R10
	VPBROADCASTQ 8(R10), Y12
	VPADDQ    Y12, Y13, Y13
	VPSLLQ    $52, Y13, Y13
	VMULPD    Y13, Y15, Y15 // e
	VCVTPD2PSY Y15, X12
	VMOVUPS   X12, (SI)(DX*1)
	VADDPD    Y15, Y9, Y9 // sum += e, each lane in index order
	INCQ      AX
	JMP       sexpl

snorm:
	VDIVPD     Y9, Y7, Y12 // 1/sum
	VCVTPD2PSY Y12, X12
	VCVTPS2PD  X12, Y12    // inv = float64(float32(1/sum))
	LEAQ       (DI)(R11*1), R12
	LEAQ       (R12)(R11*1), R13
	LEAQ       (R13)(R11*1), BX
	XORQ       AX, AX

snorml:
	CMPQ       AX, CX
	JGE        sok
	MOVQ       AX, DX
	SHLQ       $4, DX
	VCVTPS2PD  (SI)(DX*1), Y11
	VMULPD     Y12, Y11, Y11
	VCVTPD2PSY Y11, X11
	VMOVUPS    X11, (SI)(DX*1)
	VMOVSS     X11, (DI)(AX*4)
	VEXTRACTPS $1, X11, (R12)(AX*4)
	VEXTRACTPS $2, X11, (R13)(AX*4)
	VEXTRACTPS $3, X11, (BX)(AX*4)
	INCQ       AX
	JMP        snorml

sok:
	MOVB $1, ret+32(FP)
	VZEROUPPER
	RET

sfail:
	MOVB $0, ret+32(FP)
	VZEROUPPER
	RET

// func lanes4ExpSum(ls *float32, n int, sums *[4]float64) bool
//
// lanes4Softmax's first half: each lane's row maximum m and the float64 sum
// of e_c = Exp32(float64(ls_c − m)) in index order, into sums (the
// exponentials are left in ls as float32); false where lanes4Softmax
// returns false.
TEXT ·lanes4ExpSum(SB), NOSPLIT, $0-25
	MOVQ ls+0(FP), SI
	MOVQ n+8(FP), CX
	VMOVUPS (SI), X1          // the maximum
	VMOVAPS X1, X2            // the minimum
	VCMPPS  $7, X1, X1, X3    // no NaN so far
	MOVQ    $1, AX

xmax:
	CMPQ    AX, CX
	JGE     xcheck
	MOVQ    AX, DX
	SHLQ    $4, DX
	VMOVUPS (SI)(DX*1), X4
	VMAXPS  X4, X1, X1
	VMINPS  X4, X2, X2
	VCMPPS  $7, X4, X4, X5
	VANDPS  X5, X3, X3
	INCQ    AX
	JMP     xmax

xcheck:
	// Every argument float32(ls_c − m) lies in [float32(min − m), 0]
	// when the row is finite: one check for the row, that min − m > −700
	// and that no entry is NaN (±Inf makes min − m −Inf or NaN).
	VSUBPS       X1, X2, X4
	MOVL         $0xc42f0000, BX // −700
	MOVL         BX, X5
	VBROADCASTSS X5, X5
	VCMPPS       $0x1e, X5, X4, X4
	VANDPS       X4, X3, X3
	VMOVMSKPS    X3, BX
	CMPQ         BX, $15
	JNE          xfail
	EXP_CONSTS
	VXORPD Y9, Y9, Y9
	XORQ   AX, AX

xexpl:
	CMPQ      AX, CX
	JGE       xnorm
	MOVQ      AX, DX
	SHLQ      $4, DX
	VMOVUPS   (SI)(DX*1), X11
	VSUBPS    X1, X11, X11 // x = float32(ls − m)
	VCVTPS2PD X11, Y11     // exactly; in (−700, 0]
	VMULPD    Y2, Y11, Y12
	VADDPD    Y3, Y12, Y12
	VPSUBQ    Y3, Y12, Y13
	VSUBPD    Y3, Y12, Y14
	VMULPD    Y4, Y14, Y14
	VSUBPD    Y14, Y11, Y14
	VBROADCASTSD 64(R9), Y15
	VMULPD    Y15, Y14, Y15
	VBROADCASTSD 56(R9), Y12
	VADDPD    Y12, Y15, Y15
	VMULPD    Y15, Y14, Y15
	VADDPD    Y8, Y15, Y15
	VMULPD    Y15, Y14, Y15
	VADDPD    Y7, Y15, Y15
	VMULPD    Y15, Y14, Y15
	VADDPD    Y7, Y15, Y15
	VPAND     Y10, Y13, Y12
	VPCMPEQQ  Y11, Y11, Y11
	VXORPD    Y14, Y14, Y14
	VGATHERQPD Y11, (R8)(Y12*8), Y14
	VMULPD    Y14, Y15, Y15
	VPSRLQ    $4, Y13, Y13
	LEAQ      ·expInts(SB), R10
	VPBROADCASTQ 8(R10), Y12
	VPADDQ    Y12, Y13, Y13
	VPSLLQ    $52, Y13, Y13
	VMULPD    Y13, Y15, Y15 // e
	VCVTPD2PSY Y15, X12
	VMOVUPS   X12, (SI)(DX*1)
	VADDPD    Y15, Y9, Y9 // sum += e, each lane in index order
	INCQ      AX
	JMP       xexpl

xnorm:
	MOVQ    sums+16(FP), DX
	VMOVUPD Y9, (DX)
	MOVB    $1, ret+24(FP)
	VZEROUPPER
	RET

xfail:
	MOVB $0, ret+24(FP)
	VZEROUPPER
	RET

// func lanes4Rows(out *float32, ldo int, ls, w *float32, n, ldw, k int)
//
// out[lane·ldo + j] = Σ_{c<k} ls[c·4 + lane]·w[j·ldw + c] for j < n, lane
// < 4, each one chain of fused multiply-adds over c in order, from zero;
// four j at a time. k ≥ 1.
TEXT ·lanes4Rows(SB), NOSPLIT, $0-56
	MOVQ ls+16(FP), SI
	MOVQ w+24(FP), DX
	MOVQ n+32(FP), R8
	MOVQ ldw+40(FP), R9
	SHLQ $2, R9
	XORQ AX, AX

r4:
	LEAQ   4(AX), R10
	CMPQ   R10, R8
	JGT    r1
	VXORPS X0, X0, X0
	VXORPS X1, X1, X1
	VXORPS X2, X2, X2
	VXORPS X3, X3, X3
	MOVQ   AX, R10
	IMULQ  R9, R10
	ADDQ   DX, R10
	LEAQ   (R10)(R9*1), R12
	LEAQ   (R12)(R9*1), R13
	LEAQ   (R13)(R9*1), BX
	MOVQ   SI, R11
	XORQ   CX, CX

r4l:
	VMOVUPS      (R11), X8
	VBROADCASTSS (R10)(CX*4), X9
	VFMADD231PS  X9, X8, X0
	VBROADCASTSS (R12)(CX*4), X10
	VFMADD231PS  X10, X8, X1
	VBROADCASTSS (R13)(CX*4), X11
	VFMADD231PS  X11, X8, X2
	VBROADCASTSS (BX)(CX*4), X12
	VFMADD231PS  X12, X8, X3
	ADDQ         $16, R11
	INCQ         CX
	CMPQ         CX, k+48(FP)
	JLT          r4l
	// Transpose: row i of the block is lane i of X0..X3.
	VUNPCKLPS X1, X0, X4
	VUNPCKHPS X1, X0, X5
	VUNPCKLPS X3, X2, X6
	VUNPCKHPS X3, X2, X7
	VUNPCKLPD X6, X4, X0
	VUNPCKHPD X6, X4, X1
	VUNPCKLPD X7, X5, X2
	VUNPCKHPD X7, X5, X3
	MOVQ      out+0(FP), R10
	LEAQ      (R10)(AX*4), R10
	MOVQ      ldo+8(FP), R12
	SHLQ      $2, R12
	VMOVUPS   X0, (R10)
	ADDQ      R12, R10
	VMOVUPS   X1, (R10)
	ADDQ      R12, R10
	VMOVUPS   X2, (R10)
	ADDQ      R12, R10
	VMOVUPS   X3, (R10)
	ADDQ      $4, AX
	JMP       r4

r1:
	CMPQ   AX, R8
	JGE    rdone
	VXORPS X0, X0, X0
	MOVQ   AX, R10
	IMULQ  R9, R10
	ADDQ   DX, R10
	MOVQ   SI, R11
	XORQ   CX, CX

r1l:
	VMOVUPS      (R11), X8
	VBROADCASTSS (R10)(CX*4), X9
	VFMADD231PS  X9, X8, X0
	ADDQ         $16, R11
	INCQ         CX
	CMPQ         CX, k+48(FP)
	JLT          r1l
	MOVQ         out+0(FP), R10
	LEAQ         (R10)(AX*4), R10
	MOVQ         ldo+8(FP), R12
	SHLQ         $2, R12
	VMOVSS       X0, (R10)
	ADDQ         R12, R10
	VEXTRACTPS   $1, X0, (R10)
	ADDQ         R12, R10
	VEXTRACTPS   $2, X0, (R10)
	ADDQ         R12, R10
	VEXTRACTPS   $3, X0, (R10)
	INCQ         AX
	JMP          r1

rdone:
	RET

// func lanes4SoftmaxGrad(d, p *float32, n int, drow *float32, ldd int)
//
// The softmax gradient of each lane's row: s = dotF(p, d) (four float32
// sums over the index mod 4, products and additions rounded apart, the
// tail into the first, then (s0 + s1) + (s2 + s3)), then d_c = p_c·(d_c −
// s), written to d and to the rows of drow (lane i's at drow + i·ldd).
TEXT ·lanes4SoftmaxGrad(SB), NOSPLIT, $0-40
	MOVQ d+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ drow+24(FP), DX
	MOVQ ldd+32(FP), R11
	SHLQ $2, R11
	VXORPS X0, X0, X0
	VXORPS X1, X1, X1
	VXORPS X2, X2, X2
	VXORPS X3, X3, X3
	XORQ AX, AX

g4:
	LEAQ    4(AX), R8
	CMPQ    R8, CX
	JGT     g1
	MOVQ    AX, BX
	SHLQ    $4, BX
	VMOVUPS 0(SI)(BX*1), X4
	VMULPS  0(DI)(BX*1), X4, X4
	VADDPS  X4, X0, X0
	VMOVUPS 16(SI)(BX*1), X5
	VMULPS  16(DI)(BX*1), X5, X5
	VADDPS  X5, X1, X1
	VMOVUPS 32(SI)(BX*1), X6
	VMULPS  32(DI)(BX*1), X6, X6
	VADDPS  X6, X2, X2
	VMOVUPS 48(SI)(BX*1), X7
	VMULPS  48(DI)(BX*1), X7, X7
	VADDPS  X7, X3, X3
	MOVQ    R8, AX
	JMP     g4

g1:
	CMPQ    AX, CX
	JGE     gsum
	MOVQ    AX, BX
	SHLQ    $4, BX
	VMOVUPS (SI)(BX*1), X4
	VMULPS  (DI)(BX*1), X4, X4
	VADDPS  X4, X0, X0
	INCQ    AX
	JMP     g1

gsum:
	VADDPS X1, X0, X0
	VADDPS X3, X2, X2
	VADDPS X2, X0, X0
	LEAQ   (DX)(R11*1), R8
	LEAQ   (R8)(R11*1), R9
	LEAQ   (R9)(R11*1), R10
	XORQ   AX, AX

gl:
	CMPQ       AX, CX
	JGE        gdone
	MOVQ       AX, BX
	SHLQ       $4, BX
	VMOVUPS    (DI)(BX*1), X4
	VSUBPS     X0, X4, X4
	VMULPS     (SI)(BX*1), X4, X4
	VMOVUPS    X4, (DI)(BX*1)
	VMOVSS     X4, (DX)(AX*4)
	VEXTRACTPS $1, X4, (R8)(AX*4)
	VEXTRACTPS $2, X4, (R9)(AX*4)
	VEXTRACTPS $3, X4, (R10)(AX*4)
	INCQ       AX
	JMP        gl

gdone:
	RET

// func lanes4LogSoftmaxGrad(o, y, d *float32, n int, s *[4]float64) bool
//
// The log-softmax gradient of four rows in lanes (x[c·4 + lane]):
// o_c = float32(float64(d_c) − e_c·s) with e_c = Exp32(float64(y_c)) on
// exp32Core's operations and s the lane's sum of d, as logSoftmaxGrad32
// computes each element. It returns false, o then partly written, where a
// y_c is outside (−700, 700) or NaN.
TEXT ·lanes4LogSoftmaxGrad(SB), NOSPLIT, $0-41
	MOVQ o+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ d+16(FP), R11
	MOVQ n+24(FP), CX
	MOVQ s+32(FP), DX
	VMOVUPD (DX), Y0
	EXP_CONSTS
	XORQ AX, AX

gexpl:
	CMPQ      AX, CX
	JGE       gok
	MOVQ      AX, DX
	SHLQ      $4, DX
	VCVTPS2PD (SI)(DX*1), Y11
	VCMPPD    $0x1e, Y5, Y11, Y12
	VCMPPD    $0x11, Y6, Y11, Y13
	VANDPD    Y13, Y12, Y12
	VMOVMSKPD Y12, BX
	CMPQ      BX, $15
	JNE       gfail
	VMULPD    Y2, Y11, Y12
	VADDPD    Y3, Y12, Y12
	VPSUBQ    Y3, Y12, Y13
	VSUBPD    Y3, Y12, Y14
	VMULPD    Y4, Y14, Y14
	VSUBPD    Y14, Y11, Y14
	VBROADCASTSD 64(R9), Y15
	VMULPD    Y15, Y14, Y15
	VBROADCASTSD 56(R9), Y12
	VADDPD    Y12, Y15, Y15
	VMULPD    Y15, Y14, Y15
	VADDPD    Y8, Y15, Y15
	VMULPD    Y15, Y14, Y15
	VADDPD    Y7, Y15, Y15
	VMULPD    Y15, Y14, Y15
	VADDPD    Y7, Y15, Y15
	VPAND     Y10, Y13, Y12
	VPCMPEQQ  Y11, Y11, Y11
	VXORPD    Y14, Y14, Y14
	VGATHERQPD Y11, (R8)(Y12*8), Y14
	VMULPD    Y14, Y15, Y15
	VPSRLQ    $4, Y13, Y13
	LEAQ      ·expInts(SB), R10
	VPBROADCASTQ 8(R10), Y12
	VPADDQ    Y12, Y13, Y13
	VPSLLQ    $52, Y13, Y13
	VMULPD    Y13, Y15, Y15 // e
	VMULPD    Y0, Y15, Y15  // e·s
	VCVTPS2PD (R11)(DX*1), Y12
	VSUBPD    Y15, Y12, Y12 // d − e·s
	VCVTPD2PSY Y12, X12
	VMOVUPS   X12, (DI)(DX*1)
	INCQ      AX
	JMP       gexpl

gok:
	MOVB $1, ret+40(FP)
	VZEROUPPER
	RET

gfail:
	MOVB $0, ret+40(FP)
	VZEROUPPER
	RET
