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
