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
