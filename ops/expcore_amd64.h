// Shared by expfused_amd64.s and expfused_e_amd64.s: Exp32's operations on
// four float64 lanes (see exp32Core in exp.go and expConsts in
// expfused_amd64.go).

// EXP_CONSTS loads the constants: Y2 16/ln2, Y3 the rounding magic, Y4
// ln2/16, Y5 −700, Y6 700, Y7 1, Y8 1/2, Y10 the index mask 15; R9
// expConsts, R8 the table 2^(i/16). Y9 is left to the caller.
#define EXP_CONSTS \
	LEAQ ·expConsts(SB), R9; \
	VBROADCASTSD 0(R9), Y2; \
	VBROADCASTSD 8(R9), Y3; \
	VBROADCASTSD 16(R9), Y4; \
	VBROADCASTSD 24(R9), Y5; \
	VBROADCASTSD 32(R9), Y6; \
	VBROADCASTSD 40(R9), Y7; \
	VBROADCASTSD 48(R9), Y8; \
	LEAQ ·expInts(SB), R10; \
	VPBROADCASTQ 0(R10), Y10; \
	LEAQ ·exp2Sixteenths(SB), R8

// EXP4 sets Y15 = exp(x) of the four lanes of x = Y0·raw − Y1, raw the
// four float32 at (SI)(AX*4), as exp32Core computes it; it jumps to done
// when a lane of x is outside (−700, 700) or NaN. Uses Y11-Y14, BX, R10.
#define EXP4 \
	VCVTPS2PD (SI)(AX*4), Y11; \
	VMULPD    Y0, Y11, Y11; \
	VSUBPD    Y1, Y11, Y11; \
	VCMPPD    $0x1e, Y5, Y11, Y12; \
	VCMPPD    $0x11, Y6, Y11, Y13; \
	VANDPD    Y13, Y12, Y12; \
	VMOVMSKPD Y12, BX; \
	CMPQ      BX, $15; \
	JNE       done; \
	VMULPD    Y2, Y11, Y12; \
	VADDPD    Y3, Y12, Y12; \
	VPSUBQ    Y3, Y12, Y13; \
	VSUBPD    Y3, Y12, Y14; \
	VMULPD    Y4, Y14, Y14; \
	VSUBPD    Y14, Y11, Y14; \
	VBROADCASTSD 64(R9), Y15; \
	VMULPD    Y15, Y14, Y15; \
	VBROADCASTSD 56(R9), Y12; \
	VADDPD    Y12, Y15, Y15; \
	VMULPD    Y15, Y14, Y15; \
	VADDPD    Y8, Y15, Y15; \
	VMULPD    Y15, Y14, Y15; \
	VADDPD    Y7, Y15, Y15; \
	VMULPD    Y15, Y14, Y15; \
	VADDPD    Y7, Y15, Y15; \
	VPAND     Y10, Y13, Y12; \
	VPCMPEQQ  Y11, Y11, Y11; \
	VXORPD    Y14, Y14, Y14; \
	VGATHERQPD Y11, (R8)(Y12*8), Y14; \
	VMULPD    Y14, Y15, Y15; \
	VPSRLQ    $4, Y13, Y13; \
	LEAQ      ·expInts(SB), R10; \
	VPBROADCASTQ 8(R10), Y12; \
	VPADDQ    Y12, Y13, Y13; \
	VPSLLQ    $52, Y13, Y13; \
	VMULPD    Y13, Y15, Y15
