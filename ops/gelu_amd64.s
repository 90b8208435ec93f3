//go:build amd64 && !purego

#include "textflag.h"

// The float32 GELU of gelu.go, four elements per step: the float32
// operations in XMM registers (no fused multiply-adds, as the scalar code),
// the sigmoid's exponential in YMM float64 lanes by the operations of
// math.Exp's AVX/FMA path (math/exp_amd64.s), so the same bits. R9 points
// at geluConsts64 (32-byte vectors), R10 at geluConsts32 (16-byte vectors);
// see gelu_amd64.go for their order.

// EXPPD sets Y0 = exp(Y0) for lanes in [−700, 700]; uses Y1, Y2.
#define EXPPD \
	VMULPD       0(R9), Y0, Y1; \
	VCVTPD2DQY   Y1, X2; \
	VCVTDQ2PD    X2, Y1; \
	VFNMADD231PD 32(R9), Y1, Y0; \
	VFNMADD231PD 64(R9), Y1, Y0; \
	VMULPD       96(R9), Y0, Y0; \
	VMOVUPD      128(R9), Y1; \
	VFMADD213PD  160(R9), Y0, Y1; \
	VFMADD213PD  192(R9), Y0, Y1; \
	VFMADD213PD  224(R9), Y0, Y1; \
	VFMADD213PD  256(R9), Y0, Y1; \
	VFMADD213PD  288(R9), Y0, Y1; \
	VFMADD213PD  320(R9), Y0, Y1; \
	VFMADD213PD  352(R9), Y0, Y1; \
	VMULPD       Y1, Y0, Y0; \
	VADDPD       384(R9), Y0, Y1; \
	VMULPD       Y1, Y0, Y0; \
	VADDPD       384(R9), Y0, Y1; \
	VMULPD       Y1, Y0, Y0; \
	VADDPD       384(R9), Y0, Y1; \
	VMULPD       Y1, Y0, Y0; \
	VADDPD       384(R9), Y0, Y1; \
	VFMADD213PD  352(R9), Y1, Y0; \
	VPMOVSXDQ    X2, Y2; \
	VPADDQ       480(R9), Y2, Y2; \
	VPSLLQ       $52, Y2, Y2; \
	VMULPD       Y2, Y0, Y0

// SIGMOID sets out = Gorgonia's float32 sigmoid of the four float32 lanes
// of in: 0 below −88, 1 above 15, else float32(1/(1 + exp(−float64(in)))).
// The exponential's argument is clamped to [−700, 700] for the lanes the
// two ends replace. Uses Y0-Y2 and tmp.
#define SIGMOID(in, out, tmp) \
	VCVTPS2PD  in, Y0; \
	VXORPD     512(R9), Y0, Y0; \
	VMAXPD     416(R9), Y0, Y0; \
	VMINPD     448(R9), Y0, Y0; \
	EXPPD; \
	VADDPD     352(R9), Y0, Y0; \
	VMOVUPD    352(R9), Y1; \
	VDIVPD     Y0, Y1, Y1; \
	VCVTPD2PSY Y1, out; \
	VCMPPS     $0x11, 64(R10), in, tmp; \
	VANDNPS    out, tmp, out; \
	VCMPPS     $0x1e, 80(R10), in, tmp; \
	VBLENDVPS  tmp, 48(R10), out, out

// ARG sets X3 = k·(v + (v·v·v)·c) of the lanes of X6 (v) as the scalar
// code rounds it; uses X7.
#define ARG \
	VMULPS X6, X6, X7; \
	VMULPS X6, X7, X7; \
	VMULPS 0(R10), X7, X7; \
	VADDPS X7, X6, X7; \
	VMULPS 16(R10), X7, X3

// NANCHECK jumps to done when a lane of X3 is NaN; uses X7, BX.
#define NANCHECK \
	VCMPPS    $3, X3, X3, X7; \
	VMOVMSKPS X7, BX; \
	TESTQ     BX, BX; \
	JNZ       done

// func geluF32(x, out *float32, n int) int
TEXT ·geluF32(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ out+8(FP), DI
	MOVQ n+16(FP), CX
	LEAQ ·geluConsts64(SB), R9
	LEAQ ·geluConsts32(SB), R10
	XORQ AX, AX

floop:
	LEAQ 4(AX), BX
	CMPQ BX, CX
	JA   done
	VMOVUPS (SI)(AX*4), X6
	ARG
	NANCHECK
	SIGMOID(X3, X4, X5)
	VMULPS  X4, X6, X4
	VMOVUPS X4, (DI)(AX*4)
	ADDQ    $4, AX
	JMP     floop

done:
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET

// func geluGradF32(x, dy, out *float32, n int) int
TEXT ·geluGradF32(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ dy+8(FP), DX
	MOVQ out+16(FP), DI
	MOVQ n+24(FP), CX
	LEAQ ·geluConsts64(SB), R9
	LEAQ ·geluConsts32(SB), R10
	XORQ AX, AX

gloop:
	LEAQ 4(AX), BX
	CMPQ BX, CX
	JA   gdone
	VMOVUPS (SI)(AX*4), X6
	VMOVUPS (DX)(AX*4), X8
	ARG
	VCMPPS    $3, X3, X3, X7
	VMOVMSKPS X7, BX
	TESTQ     BX, BX
	JNZ       gdone
	SIGMOID(X3, X4, X5)       // s = σ(z)
	VXORPS  96(R10), X3, X9   // −z
	SIGMOID(X9, X5, X7)       // σ(−z)
	VMULPS  X8, X4, X10       // a = s·g
	VMULPS  X8, X6, X11       // ds = v·g
	VMULPS  X5, X4, X12       // s·σ(−z)
	VMULPS  X11, X12, X12     // dz = (s·σ(−z))·ds
	VMULPS  16(R10), X12, X12 // b = dz·k
	VMULPS  X6, X6, X13       // v·v
	VMULPS  32(R10), X13, X13 // (v·v)·3
	VMULPS  0(R10), X12, X14  // b·c
	VMULPS  X14, X13, X13     // c3
	VADDPS  X12, X10, X10     // a + b
	VADDPS  X13, X10, X10     // (a + b) + c3
	VMOVUPS X10, (DI)(AX*4)
	ADDQ    $4, AX
	JMP     gloop

gdone:
	VZEROUPPER
	MOVQ AX, ret+32(FP)
	RET
