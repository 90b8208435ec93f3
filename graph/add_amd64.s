//go:build amd64 && !purego

#include "textflag.h"

// func addF32(dst, a, b *float32, n int)
//
// dst[i] = a[i] + b[i] for i < n − n%32 (the caller adds the rest), 32 at a
// time with AVX2: VADDPS rounds each lane as ADDSS does, a the first
// operand.
TEXT ·addF32(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $5, CX
	JZ   done32

loop32:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPS  (DX), Y0, Y0
	VADDPS  32(DX), Y1, Y1
	VADDPS  64(DX), Y2, Y2
	VADDPS  96(DX), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	DECQ    CX
	JNZ     loop32
	VZEROUPPER

done32:
	RET

// func addF64(dst, a, b *float64, n int)
//
// addF32 for float64: n − n%16 elements, 16 at a time.
TEXT ·addF64(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $4, CX
	JZ   done64

loop64:
	VMOVUPD (SI), Y0
	VMOVUPD 32(SI), Y1
	VMOVUPD 64(SI), Y2
	VMOVUPD 96(SI), Y3
	VADDPD  (DX), Y0, Y0
	VADDPD  32(DX), Y1, Y1
	VADDPD  64(DX), Y2, Y2
	VADDPD  96(DX), Y3, Y3
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	DECQ    CX
	JNZ     loop64
	VZEROUPPER

done64:
	RET

// func narrowF64(dst *float32, src *float64, n int)
//
// dst[i] = float32(src[i]) for i < n − n%16, 16 at a time with AVX:
// VCVTPD2PS rounds each lane as CVTSD2SS (Go's conversion) does, under the
// same MXCSR rounding mode.
TEXT ·narrowF64(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JZ   doneN

loopN:
	VCVTPD2PSY (SI), X0
	VCVTPD2PSY 32(SI), X1
	VCVTPD2PSY 64(SI), X2
	VCVTPD2PSY 96(SI), X3
	VMOVUPS    X0, (DI)
	VMOVUPS    X1, 16(DI)
	VMOVUPS    X2, 32(DI)
	VMOVUPS    X3, 48(DI)
	ADDQ       $128, SI
	ADDQ       $64, DI
	DECQ       CX
	JNZ        loopN
	VZEROUPPER

doneN:
	RET

// func subF32(dst, a, b *float32, n int)
//
// addF32 with a subtraction: dst[i] = a[i] − b[i], VSUBPS rounding each
// lane as SUBSS does, a the first operand.
TEXT ·subF32(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $5, CX
	JZ   done32sub

loop32sub:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VSUBPS  (DX), Y0, Y0
	VSUBPS  32(DX), Y1, Y1
	VSUBPS  64(DX), Y2, Y2
	VSUBPS  96(DX), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	DECQ    CX
	JNZ     loop32sub
	VZEROUPPER

done32sub:
	RET

// func subF64(dst, a, b *float64, n int)
//
// subF32 for float64: n − n%16 elements, 16 at a time.
TEXT ·subF64(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $4, CX
	JZ   done64sub

loop64sub:
	VMOVUPD (SI), Y0
	VMOVUPD 32(SI), Y1
	VMOVUPD 64(SI), Y2
	VMOVUPD 96(SI), Y3
	VSUBPD  (DX), Y0, Y0
	VSUBPD  32(DX), Y1, Y1
	VSUBPD  64(DX), Y2, Y2
	VSUBPD  96(DX), Y3, Y3
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	DECQ    CX
	JNZ     loop64sub
	VZEROUPPER

done64sub:
	RET

// func mulF32(dst, a, b *float32, n int)
//
// addF32 with a product: dst[i] = a[i]·b[i], VMULPS rounding each lane as
// MULSS does, a the first operand.
TEXT ·mulF32(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $5, CX
	JZ   done32mul

loop32mul:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VMULPS  (DX), Y0, Y0
	VMULPS  32(DX), Y1, Y1
	VMULPS  64(DX), Y2, Y2
	VMULPS  96(DX), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	DECQ    CX
	JNZ     loop32mul
	VZEROUPPER

done32mul:
	RET

// func mulF64(dst, a, b *float64, n int)
//
// mulF32 for float64: n − n%16 elements, 16 at a time.
TEXT ·mulF64(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $4, CX
	JZ   done64mul

loop64mul:
	VMOVUPD (SI), Y0
	VMOVUPD 32(SI), Y1
	VMOVUPD 64(SI), Y2
	VMOVUPD 96(SI), Y3
	VMULPD  (DX), Y0, Y0
	VMULPD  32(DX), Y1, Y1
	VMULPD  64(DX), Y2, Y2
	VMULPD  96(DX), Y3, Y3
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	DECQ    CX
	JNZ     loop64mul
	VZEROUPPER

done64mul:
	RET
