//go:build amd64 && !purego

#include "textflag.h"

// The Adam update of adamUpdateScaled, four elements per iteration in AVX2
// registers: the same float64 operations in the same order (no fused
// multiply-add), so the same bits. c points at adamVec's eleven 4-lane
// constants: scale, l2, beta1, 1-beta1, beta2, 1-beta2, keep, lr/bc1,
// 1/sqrt(bc2), eps and the absolute-value mask. n is a multiple of 4.

// func adamAVX2M32(w, grad, m, v *float32, n int, c *adamVec) (mmax, vmax float64)
TEXT ·adamAVX2M32(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ m+16(FP), DX
	MOVQ v+24(FP), CX
	MOVQ n+32(FP), BX
	MOVQ c+40(FP), R8
	VXORPD Y10, Y10, Y10 // mmax
	VXORPD Y11, Y11, Y11 // vmax
	XORQ AX, AX

loop32:
	CMPQ AX, BX
	JAE  done32
	VCVTPS2PD (DI)(AX*4), Y0 // p = w
	VCVTPS2PD (SI)(AX*4), Y1 // g
	VMULPD    0(R8), Y1, Y1  // g·scale
	VMULPD    32(R8), Y0, Y2 // l2·p
	VADDPD    Y2, Y1, Y1     // gi = g·scale + l2·p
	VCVTPS2PD (DX)(AX*4), Y2 // m
	VMULPD    64(R8), Y2, Y2 // beta1·m
	VMULPD    96(R8), Y1, Y3 // (1−beta1)·gi
	VADDPD    Y3, Y2, Y2     // mi
	VCVTPS2PD (CX)(AX*4), Y3 // v
	VMULPD    128(R8), Y3, Y3 // beta2·v
	VMULPD    160(R8), Y1, Y4 // (1−beta2)·gi
	VMULPD    Y1, Y4, Y4      // ·gi
	VADDPD    Y4, Y3, Y3      // vi
	VCVTPD2PSY Y2, X4         // the stored moments
	VMOVUPS   X4, (DX)(AX*4)
	VCVTPD2PSY Y3, X5
	VMOVUPS   X5, (CX)(AX*4)
	VCVTPS2PD X4, Y4
	VCVTPS2PD X5, Y5
	VANDPD    320(R8), Y4, Y4 // |m stored|
	VMAXPD    Y4, Y10, Y10
	VMAXPD    Y5, Y11, Y11
	VSQRTPD   Y3, Y6          // sqrt(vi)
	VMULPD    256(R8), Y6, Y6 // ·(1/sqrt(bc2))
	VADDPD    288(R8), Y6, Y6 // + eps
	VMULPD    224(R8), Y2, Y7 // (lr/bc1)·mi
	VDIVPD    Y6, Y7, Y7      // ÷
	VMULPD    192(R8), Y0, Y0 // p·keep
	VSUBPD    Y7, Y0, Y0
	VCVTPD2PSY Y0, X0
	VMOVUPS   X0, (DI)(AX*4)
	ADDQ      $4, AX
	JMP       loop32

done32:
	VMOVUPD Y10, Y0
	VEXTRACTF128 $1, Y10, X1
	VMAXPD  X1, X0, X0
	VPERMILPD $1, X0, X1
	VMAXPD  X1, X0, X0
	MOVSD   X0, mmax+48(FP)
	VEXTRACTF128 $1, Y11, X1
	VMOVUPD X11, X0
	VMAXPD  X1, X0, X0
	VPERMILPD $1, X0, X1
	VMAXPD  X1, X0, X0
	MOVSD   X0, vmax+56(FP)
	VZEROUPPER
	RET

// func adamAVX2M64(w, grad *float32, m, v *float64, n int, c *adamVec) (mmax, vmax float64)
TEXT ·adamAVX2M64(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ m+16(FP), DX
	MOVQ v+24(FP), CX
	MOVQ n+32(FP), BX
	MOVQ c+40(FP), R8
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	XORQ AX, AX

loop64:
	CMPQ AX, BX
	JAE  done64
	VCVTPS2PD (DI)(AX*4), Y0
	VCVTPS2PD (SI)(AX*4), Y1
	VMULPD    0(R8), Y1, Y1
	VMULPD    32(R8), Y0, Y2
	VADDPD    Y2, Y1, Y1
	VMOVUPD   (DX)(AX*8), Y2
	VMULPD    64(R8), Y2, Y2
	VMULPD    96(R8), Y1, Y3
	VADDPD    Y3, Y2, Y2
	VMOVUPD   (CX)(AX*8), Y3
	VMULPD    128(R8), Y3, Y3
	VMULPD    160(R8), Y1, Y4
	VMULPD    Y1, Y4, Y4
	VADDPD    Y4, Y3, Y3
	VMOVUPD   Y2, (DX)(AX*8)
	VMOVUPD   Y3, (CX)(AX*8)
	VANDPD    320(R8), Y2, Y4
	VMAXPD    Y4, Y10, Y10
	VMAXPD    Y3, Y11, Y11
	VSQRTPD   Y3, Y6
	VMULPD    256(R8), Y6, Y6
	VADDPD    288(R8), Y6, Y6
	VMULPD    224(R8), Y2, Y7
	VDIVPD    Y6, Y7, Y7
	VMULPD    192(R8), Y0, Y0
	VSUBPD    Y7, Y0, Y0
	VCVTPD2PSY Y0, X0
	VMOVUPS   X0, (DI)(AX*4)
	ADDQ      $4, AX
	JMP       loop64

done64:
	VMOVUPD Y10, Y0
	VEXTRACTF128 $1, Y10, X1
	VMAXPD  X1, X0, X0
	VPERMILPD $1, X0, X1
	VMAXPD  X1, X0, X0
	MOVSD   X0, mmax+48(FP)
	VEXTRACTF128 $1, Y11, X1
	VMOVUPD X11, X0
	VMAXPD  X1, X0, X0
	VPERMILPD $1, X0, X1
	VMAXPD  X1, X0, X0
	MOVSD   X0, vmax+56(FP)
	VZEROUPPER
	RET
