//go:build amd64 && !purego

#include "textflag.h"

// func vaddF32(dst, a, b *float32, n int)
//
// dst[i] = a[i] + b[i] for i < n − n%8 (the caller adds the rest), 8 at a
// time with AVX2: VADDPS rounds each lane as ADDSS does, a the first
// operand (whose NaN a sum of two NaNs keeps, as ADDSS does).
TEXT ·vaddF32(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ   done32

loop32:
	VMOVUPS (SI), Y0
	VADDPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop32
	VZEROUPPER

done32:
	RET

// func vaddF64(dst, a, b *float64, n int)
//
// vaddF32 for float64: n − n%4 elements, 4 at a time.
TEXT ·vaddF64(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $2, CX
	JZ   done64

loop64:
	VMOVUPD (SI), Y0
	VADDPD  (DX), Y0, Y0
	VMOVUPD Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop64
	VZEROUPPER

done64:
	RET
