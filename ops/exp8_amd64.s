//go:build amd64 && !purego

#include "textflag.h"

// func expSum8(w, s *float32, n int, gs, mx float32) (k int, sum float64)
//
// Per lane: x = g·s − mx (fused); stop unless x <= hi; m = x >= lo;
// x = max(x, lo); n = round(x·log2e); r = x − n·C1 − n·C2 (fused);
// y = ((((p0 r + p1) r + p2) r + p3) r + p4) r + p5; y = y r² + r + 1;
// e = y·2ⁿ masked by m.
TEXT ·expSum8(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS gs+24(FP), Y0
	VBROADCASTSS mx+28(FP), Y1
	VXORPS Y2, Y2, Y2
	VSUBPS Y1, Y2, Y1 // −mx
	LEAQ ·exp8Tab(SB), R9
	LEAQ ·exp8Bias(SB), R10
	VMOVUPS 0(R9), Y10   // log2e
	VMOVUPS 32(R9), Y11  // −C1
	VMOVUPS 64(R9), Y12  // −C2 (its negation stored)
	VMOVUPS 320(R9), Y13 // lo
	VMOVUPS 352(R9), Y9  // hi
	VXORPD Y14, Y14, Y14 // sum, lanes 0-3 (float64)
	VXORPD Y15, Y15, Y15 // sum, lanes 4-7
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPS     (SI)(AX*4), Y3
	VFMADD213PS Y1, Y0, Y3 // x = g·s − mx
	VCMPPS      $2, Y9, Y3, Y4 // x <= hi (false for NaN)
	VMOVMSKPS   Y4, BX
	CMPQ        BX, $255
	JNE         done
	VCMPPS      $0x1d, Y13, Y3, Y5 // m = x >= lo
	VMAXPS      Y13, Y3, Y3
	VMULPS      Y10, Y3, Y6
	VROUNDPS    $0, Y6, Y6          // n
	VFMADD231PS Y11, Y6, Y3         // r = x − n·C1
	VFMADD231PS Y12, Y6, Y3         // r −= n·C2
	VMOVUPS     96(R9), Y7          // p0
	VFMADD213PS 128(R9), Y3, Y7
	VFMADD213PS 160(R9), Y3, Y7
	VFMADD213PS 192(R9), Y3, Y7
	VFMADD213PS 224(R9), Y3, Y7
	VFMADD213PS 256(R9), Y3, Y7
	VMULPS      Y3, Y3, Y8          // r²
	VFMADD213PS Y3, Y8, Y7          // y r² + r
	VADDPS      288(R9), Y7, Y7     // + 1
	VCVTPS2DQ   Y6, Y6
	VPADDD      (R10), Y6, Y6
	VPSLLD      $23, Y6, Y6
	VMULPS      Y6, Y7, Y7
	VANDPS      Y5, Y7, Y7
	VMOVUPS     Y7, (DI)(AX*4)
	VCVTPS2PD    X7, Y8
	VADDPD       Y8, Y14, Y14
	VEXTRACTF128 $1, Y7, X7
	VCVTPS2PD    X7, Y8
	VADDPD       Y8, Y15, Y15
	ADDQ        $8, AX
	JMP         loop

done:
	VADDPD       Y15, Y14, Y14
	VEXTRACTF128 $1, Y14, X15
	VADDPD       X15, X14, X14
	VHADDPD      X14, X14, X14
	MOVQ         AX, k+32(FP)
	MOVSD        X14, sum+40(FP)
	VZEROUPPER
	RET
