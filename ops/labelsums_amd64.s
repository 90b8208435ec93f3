//go:build amd64 && !purego

#include "textflag.h"

// func labelSums32(rows, src *float32, lab *int32, n, dp int)
//
// For each r < n: y = lab[r]; rows[y·8 : y·8+8] += g[r·dp : r·dp+dp]
// (lanes ≥ dp add +0 from the masked load).
TEXT ·labelSums32(SB), NOSPLIT, $0-40
	MOVQ rows+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lab+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ dp+32(FP), R8
	LEAQ ·labelMask32(SB), R9
	MOVQ $8, R10
	SUBQ R8, R10
	VMOVDQU (R9)(R10*4), Y0 // the first dp lanes
	SHLQ $2, R8             // a row of g, in bytes
	TESTQ CX, CX
	JLE   done

loop:
	MOVLQSX    (DX), AX
	SHLQ       $5, AX // row y of rows, in bytes
	VMASKMOVPS (SI), Y0, Y1
	VADDPS     (DI)(AX*1), Y1, Y1
	VMOVUPS    Y1, (DI)(AX*1)
	ADDQ       $4, DX
	ADDQ       R8, SI
	DECQ       CX
	JNZ        loop

done:
	VZEROUPPER
	RET
