//go:build amd64 && !purego

#include "textflag.h"
#include "expcore_amd64.h"

// func expChunk32EAVX2(row, raw *float32, n int, scale, shift float64, e *float64) int
TEXT ·expChunk32EAVX2(SB), NOSPLIT, $0-56
	MOVQ row+0(FP), DI
	MOVQ raw+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD scale+24(FP), Y0
	VBROADCASTSD shift+32(FP), Y1
	MOVQ e+40(FP), DX
	EXP_CONSTS
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JAE  done
	EXP4
	VMOVUPD   Y15, (DX)(AX*8)
	VCVTPD2PSY Y15, X12
	VMOVUPS   X12, (DI)(AX*4)
	ADDQ      $4, AX
	JMP       loop

done:
	MOVQ AX, ret+48(FP)
	VZEROUPPER
	RET

// func expChunk32S2(row, raw *float32, n int, scale, shift float64, sums *[2]float64) int
//
// The two running sums (even indices, odd indices) live side by side in
// X9: one packed addition of e0, e1 and one of e2, e3 per group are the
// scalar chains' additions, lane by lane, in their order.
TEXT ·expChunk32S2(SB), NOSPLIT, $0-56
	MOVQ row+0(FP), DI
	MOVQ raw+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD scale+24(FP), Y0
	VBROADCASTSD shift+32(FP), Y1
	MOVQ sums+40(FP), DX
	EXP_CONSTS
	VMOVUPD (DX), X9
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JAE  done
	EXP4
	VCVTPD2PSY Y15, X12
	VMOVUPS   X12, (DI)(AX*4)
	VADDPD    X15, X9, X9
	VEXTRACTF128 $1, Y15, X13
	VADDPD    X13, X9, X9
	ADDQ      $4, AX
	JMP       loop

done:
	VMOVUPD X9, (DX)
	MOVQ AX, ret+48(FP)
	VZEROUPPER
	RET
