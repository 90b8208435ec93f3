//go:build amd64 && !purego

#include "textflag.h"

// func axpyRound32(y, x *float32, n int, a float64)
//
// y[i] += float32(a·float64(x[i])) for i < n, eight at a time (AVX2): the
// product in float64, rounded to float32, then added in float32, as the
// scalar loop of kernelBackward does element by element.
TEXT ·axpyRound32(SB), NOSPLIT, $0-32
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSD a+24(FP), Y1
	XORQ         AX, AX

loop8:
	LEAQ        8(AX), DX
	CMPQ        DX, CX
	JGT         tail
	VCVTPS2PD   (SI)(AX*4), Y0
	VCVTPS2PD   16(SI)(AX*4), Y2
	VMULPD      Y1, Y0, Y0
	VMULPD      Y1, Y2, Y2
	VCVTPD2PSY  Y0, X0
	VCVTPD2PSY  Y2, X2
	VINSERTF128 $1, X2, Y0, Y0
	VADDPS      (DI)(AX*4), Y0, Y0
	VMOVUPS     Y0, (DI)(AX*4)
	MOVQ        DX, AX
	JMP         loop8

tail:
	CMPQ      AX, CX
	JGE       done
	VCVTSS2SD (SI)(AX*4), X0, X0
	VMULSD    X1, X0, X0
	VCVTSD2SS X0, X0, X0
	VADDSS    (DI)(AX*4), X0, X0
	VMOVSS    X0, (DI)(AX*4)
	INCQ      AX
	JMP       tail

done:
	VZEROUPPER
	RET

// AXPY8(off, t0, x0, t1, x1, acc): acc += float32(a·float64(x[off/4 .. off/4+7]))
// with a broadcast in Y0 and x at SI: two halves widened, multiplied,
// rounded to float32 and joined, then added in float32 (x0, x1: the
// X forms of t0, t1).
#define AXPY8(off, t0, x0, t1, x1, acc) \
	VCVTPS2PD   off(SI), t0; \
	VCVTPS2PD   off+16(SI), t1; \
	VMULPD      Y0, t0, t0; \
	VMULPD      Y0, t1, t1; \
	VCVTPD2PSY  t0, x0; \
	VCVTPD2PSY  t1, x1; \
	VINSERTF128 $1, x1, t0, t0; \
	VADDPS      t0, acc, acc

// func axpyRows32x32(y, x *float32, ldx int, coef *float64, inc, n int)
//
// y[c] += float32(a_i·float64(x[i·ldx + c])) for c < 32, i = 0..n-1 in
// order, a_i = coef[i·inc], skipping every a_i that is zero: for each
// element of y the chain of additions of a loop calling axpyRound(y, x_i,
// a_i) for the nonzero a_i in turn, the 32 sums held in registers.
TEXT ·axpyRows32x32(SB), NOSPLIT, $0-48
	MOVQ   y+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   ldx+16(FP), R8
	SHLQ   $2, R8 // a row of x in bytes
	MOVQ   coef+24(FP), DX
	MOVQ   inc+32(FP), R9
	SHLQ   $3, R9 // coef's step in bytes
	MOVQ   n+40(FP), CX
	VXORPD X15, X15, X15
	VMOVUPS 0(DI), Y9
	VMOVUPS 32(DI), Y10
	VMOVUPS 64(DI), Y11
	VMOVUPS 96(DI), Y12

loop32:
	TESTQ    CX, CX
	JZ       done32
	VMOVSD   (DX), X0
	VUCOMISD X15, X0
	JP       do32 // NaN: added
	JE       next32
do32:
	VBROADCASTSD X0, Y0
	AXPY8(0, Y1, X1, Y2, X2, Y9)
	AXPY8(32, Y3, X3, Y4, X4, Y10)
	AXPY8(64, Y5, X5, Y6, X6, Y11)
	AXPY8(96, Y7, X7, Y8, X8, Y12)
next32:
	ADDQ R8, SI
	ADDQ R9, DX
	DECQ CX
	JMP  loop32

done32:
	VMOVUPS Y9, 0(DI)
	VMOVUPS Y10, 32(DI)
	VMOVUPS Y11, 64(DI)
	VMOVUPS Y12, 96(DI)
	VZEROUPPER
	RET

// func axpyRows32x8(y, x *float32, ldx int, coef *float64, inc, n int)
//
// axpyRows32x32 for eight elements of y.
TEXT ·axpyRows32x8(SB), NOSPLIT, $0-48
	MOVQ   y+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   ldx+16(FP), R8
	SHLQ   $2, R8
	MOVQ   coef+24(FP), DX
	MOVQ   inc+32(FP), R9
	SHLQ   $3, R9
	MOVQ   n+40(FP), CX
	VXORPD X15, X15, X15
	VMOVUPS 0(DI), Y9

loop8r:
	TESTQ    CX, CX
	JZ       done8r
	VMOVSD   (DX), X0
	VUCOMISD X15, X0
	JP       do8r
	JE       next8r
do8r:
	VBROADCASTSD X0, Y0
	AXPY8(0, Y1, X1, Y2, X2, Y9)
next8r:
	ADDQ R8, SI
	ADDQ R9, DX
	DECQ CX
	JMP  loop8r

done8r:
	VMOVUPS Y9, 0(DI)
	VZEROUPPER
	RET

// func lastKept8(keep *float32, groups int) int
//
// 1 + the index of the last element of keep[:8·groups] that is not
// (float) equal to 0 (NaN counts as not equal), or 0 if there is none:
// eight elements at a time from the end (AVX).
TEXT ·lastKept8(SB), NOSPLIT, $0-24
	MOVQ   keep+0(FP), SI
	MOVQ   groups+8(FP), CX
	VXORPS Y1, Y1, Y1

lk:
	TESTQ     CX, CX
	JZ        lknone
	DECQ      CX
	MOVQ      CX, AX
	SHLQ      $5, AX
	VMOVUPS   (SI)(AX*1), Y0
	VCMPPS    $0, Y1, Y0, Y0 // equal (ordered): all ones where keep is 0
	VMOVMSKPS Y0, BX
	XORL      $0xff, BX // the kept elements
	JZ        lk
	BSRL      BX, BX
	SHLQ      $3, CX
	LEAQ      1(CX)(BX*1), AX
	MOVQ      AX, ret+16(FP)
	VZEROUPPER
	RET

lknone:
	MOVQ $0, ret+16(FP)
	VZEROUPPER
	RET

// func divRound32(y *float32, n int, s float64)
//
// y[i] = float32(float64(y[i]) / s) for i < n, n a multiple of 8, eight at
// a time (AVX): the quotient of each element in float64, rounded to
// float32, as the scalar loop computes it.
TEXT ·divRound32(SB), NOSPLIT, $0-24
	MOVQ         y+0(FP), DI
	MOVQ         n+8(FP), CX
	VBROADCASTSD s+16(FP), Y2
	XORQ         AX, AX

dr8:
	CMPQ        AX, CX
	JAE         drdone
	VCVTPS2PD   (DI)(AX*4), Y0
	VCVTPS2PD   16(DI)(AX*4), Y1
	VDIVPD      Y2, Y0, Y0
	VDIVPD      Y2, Y1, Y1
	VCVTPD2PSY  Y0, X0
	VCVTPD2PSY  Y1, X1
	VINSERTF128 $1, X1, Y0, Y0
	VMOVUPS     Y0, (DI)(AX*4)
	ADDQ        $8, AX
	JMP         dr8

drdone:
	VZEROUPPER
	RET

// func softmaxCoefs32(c *float64, w, dw, keep *float32, n int, rowSum, gs float64)
//
// c[i] = gs·(float64(w[i])·(float64(dw[i]) − rowSum)) where keep[i] is not 0
// (NaN counts as not 0) and c[i] = +0 where it is, for i < n (a multiple of
// 4), four at a time (AVX2): the softmax kernel's coefficients as
// kernelBackwardSeqs computes them, so the same bits.
TEXT ·softmaxCoefs32(SB), NOSPLIT, $0-56
	MOVQ         c+0(FP), DI
	MOVQ         w+8(FP), SI
	MOVQ         dw+16(FP), DX
	MOVQ         keep+24(FP), R8
	MOVQ         n+32(FP), CX
	VBROADCASTSD rowSum+40(FP), Y6
	VBROADCASTSD gs+48(FP), Y7
	VXORPS       X5, X5, X5
	XORQ         AX, AX

sc4:
	CMPQ        AX, CX
	JAE         scdone
	VCVTPS2PD   (SI)(AX*4), Y0
	VCVTPS2PD   (DX)(AX*4), Y1
	VSUBPD      Y6, Y1, Y1 // dw − rowSum
	VMULPD      Y1, Y0, Y0 // w·(dw − rowSum)
	VMULPD      Y0, Y7, Y0 // gs·e
	VMOVUPS     (R8)(AX*4), X2
	VCMPPS      $4, X5, X2, X2 // keep ≠ 0 (unordered: NaN is kept)
	VPMOVSXDQ   X2, Y2
	VANDPD      Y2, Y0, Y0
	VMOVUPD     Y0, (DI)(AX*8)
	ADDQ        $4, AX
	JMP         sc4

scdone:
	VZEROUPPER
	RET

// func softmaxScores32(row, raw *float32, dots *float64, keep *float32, n int, gs float64) (mx float64, ok bool)
//
// For i < n (a multiple of 4), four at a time (AVX2): row[i] =
// float32(gs·dots[i]), raw[i] = float32(dots[i]), and mx the largest
// gs·dots[i]; ok is false, and mx unspecified, where some keep[i] is 0 or
// some gs·dots[i] is NaN (the caller then computes the row one by one).
TEXT ·softmaxScores32(SB), NOSPLIT, $0-57
	MOVQ         row+0(FP), DI
	MOVQ         raw+8(FP), SI
	MOVQ         dots+16(FP), DX
	MOVQ         keep+24(FP), R8
	MOVQ         n+32(FP), CX
	VBROADCASTSD gs+40(FP), Y7
	MOVQ         $0xfff0000000000000, AX // −Inf
	MOVQ         AX, X6
	VPBROADCASTQ X6, Y6 // the running maxima
	VXORPS       Y5, Y5, Y5
	VXORPS       Y4, Y4, Y4 // NaN lanes seen
	VXORPS       X10, X10, X10 // masked lanes seen
	XORQ         AX, AX

ss4:
	CMPQ       AX, CX
	JAE        ssdone
	VMOVUPD    (DX)(AX*8), Y0
	VMULPD     Y0, Y7, Y1 // v = gs·r
	VCVTPD2PSY Y1, X2
	VMOVUPS    X2, (DI)(AX*4)
	VCVTPD2PSY Y0, X3
	VMOVUPS    X3, (SI)(AX*4)
	VMAXPD     Y6, Y1, Y6
	VCMPPD     $3, Y1, Y1, Y8 // v unordered: NaN
	VORPD      Y8, Y4, Y4
	VMOVUPS    (R8)(AX*4), X9
	VCMPPS     $0, X5, X9, X9 // keep == 0 (ordered)
	VORPS      X9, X10, X10
	ADDQ       $4, AX
	JMP        ss4

ssdone:
	VEXTRACTF128 $1, Y6, X0
	VMAXPD       X0, X6, X0
	VPERMILPD    $1, X0, X1
	VMAXPD       X1, X0, X0
	VMOVSD       X0, mx+48(FP)
	VPTEST       Y4, Y4
	SETEQ        BX
	VPTEST       X10, X10
	SETEQ        CX
	ANDB         CX, BX
	MOVB         BX, ok+56(FP)
	VZEROUPPER
	RET
