//go:build amd64 && !purego

#include "textflag.h"

// func xentExp32(e, x *float32, n int, m float32, sums *[8]float64, next *float32) int
//
// The float32 softmax's exponentials (xentExp32Go's operations, eight lanes
// at a time, AVX2/FMA): per lane a = x − m; stop unless a <= hi; keep =
// a >= lo; a = max(a, lo); k = round(a·log2e); r = a − k·C1 + k·C2
// (fused); y = ((((p0 r + p1) r + p2) r + p3) r + p4) r + p5 (fused);
// y = y r² + r (fused); y = y + 1; e = y·2ᵏ masked by keep; sums[lane] +=
// float64(e). n is a multiple of 8; it returns how many it computed (a
// multiple of 8, less than n where a group holds an argument above hi or
// NaN: that group and the rest are left to the caller). Each group also
// prefetches next[i:i+8] into the L2 cache (the next row, whose maximum is
// taken next: it then reads from L2 while this loop's arithmetic hides the
// memory's latency); next may be x itself.
TEXT ·xentExp32(SB), NOSPLIT, $0-56
	MOVQ         e+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS m+24(FP), Y1
	MOVQ         sums+32(FP), DX
	MOVQ         next+40(FP), R8
	LEAQ         ·exp8Tab(SB), R10  // eight-lane rows: log2e, −C1, C2, p0..p5, 1, lo, hi
	LEAQ         ·exp8Bias(SB), R9  // 127 in eight int32 lanes
	VBROADCASTSS 0(R10), Y10   // log2e
	VBROADCASTSS 32(R10), Y11  // −C1
	VBROADCASTSS 64(R10), Y12  // C2
	VBROADCASTSS 320(R10), Y13 // lo
	VBROADCASTSS 352(R10), Y9  // hi
	VMOVUPD      0(DX), Y14  // sums, lanes 0-3
	VMOVUPD      32(DX), Y15 // sums, lanes 4-7
	XORQ         AX, AX

loop:
	CMPQ        AX, CX
	JGE         done
	PREFETCHT1  (R8)(AX*4)
	VMOVUPS     (SI)(AX*4), Y3
	VSUBPS      Y1, Y3, Y3      // a = x − m
	VCMPPS      $2, Y9, Y3, Y4  // a <= hi (false for NaN)
	VMOVMSKPS   Y4, BX
	CMPQ        BX, $255
	JNE         done
	VCMPPS      $0x1d, Y13, Y3, Y5 // keep = a >= lo
	VMAXPS      Y13, Y3, Y3
	VMULPS      Y10, Y3, Y6
	VROUNDPS    $0, Y6, Y6      // k
	VFMADD231PS Y11, Y6, Y3     // r = a − k·C1
	VFMADD231PS Y12, Y6, Y3     // r += k·C2
	VMOVUPS     96(R10), Y7     // p0
	VFMADD213PS 128(R10), Y3, Y7
	VFMADD213PS 160(R10), Y3, Y7
	VFMADD213PS 192(R10), Y3, Y7
	VFMADD213PS 224(R10), Y3, Y7
	VFMADD213PS 256(R10), Y3, Y7
	VMULPS      Y3, Y3, Y8      // r²
	VFMADD213PS Y3, Y8, Y7      // y r² + r
	VADDPS      288(R10), Y7, Y7 // + 1
	VCVTPS2DQ   Y6, Y6
	VPADDD      0(R9), Y6, Y6   // + 127
	VPSLLD      $23, Y6, Y6
	VMULPS      Y6, Y7, Y7
	VANDPS      Y5, Y7, Y7
	VMOVUPS     Y7, (DI)(AX*4)
	VCVTPS2PD   X7, Y8
	VADDPD      Y8, Y14, Y14
	VEXTRACTF128 $1, Y7, X7
	VCVTPS2PD   X7, Y8
	VADDPD      Y8, Y15, Y15
	ADDQ        $8, AX
	JMP         loop

done:
	VMOVUPD Y14, 0(DX)
	VMOVUPD Y15, 32(DX)
	MOVQ    AX, ret+48(FP)
	VZEROUPPER
	RET

// func xentScale32(o *float32, n int, k float32)
//
// o[i] = o[i]·k in float32 for i < n, 32 at a time, then 8, then one.
TEXT ·xentScale32(SB), NOSPLIT, $0-20
	MOVQ         o+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS k+16(FP), Y1
	XORQ         AX, AX

loop32:
	LEAQ   32(AX), DX
	CMPQ   DX, CX
	JGT    loop8
	VMULPS (SI)(AX*4), Y1, Y2
	VMULPS 32(SI)(AX*4), Y1, Y3
	VMULPS 64(SI)(AX*4), Y1, Y4
	VMULPS 96(SI)(AX*4), Y1, Y5
	VMOVUPS Y2, (SI)(AX*4)
	VMOVUPS Y3, 32(SI)(AX*4)
	VMOVUPS Y4, 64(SI)(AX*4)
	VMOVUPS Y5, 96(SI)(AX*4)
	MOVQ   DX, AX
	JMP    loop32

loop8:
	LEAQ    8(AX), DX
	CMPQ    DX, CX
	JGT     tail
	VMULPS  (SI)(AX*4), Y1, Y2
	VMOVUPS Y2, (SI)(AX*4)
	MOVQ    DX, AX
	JMP     loop8

tail:
	CMPQ   AX, CX
	JGE    done1
	VMULSS (SI)(AX*4), X1, X2
	VMOVSS X2, (SI)(AX*4)
	INCQ   AX
	JMP    tail

done1:
	VZEROUPPER
	RET
