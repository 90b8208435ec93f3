//go:build amd64 && !purego

#include "textflag.h"

// func maxScaled32(s *float32, n int, scale float32) float32
//
// max_i float32(scale·s[i]) for n ≥ 1, eight at a time (AVX2).
TEXT ·maxScaled32(SB), NOSPLIT, $0-28
	MOVQ         s+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS scale+16(FP), Y1
	VMULSS       (SI), X1, X0
	VBROADCASTSS X0, Y0
	VMOVAPS      Y0, Y3
	XORQ         AX, AX

loop16:
	LEAQ 16(AX), DX
	CMPQ DX, CX
	JGT  loop8
	VMULPS (SI)(AX*4), Y1, Y2
	VMAXPS Y2, Y0, Y0
	VMULPS 32(SI)(AX*4), Y1, Y4
	VMAXPS Y4, Y3, Y3
	MOVQ   DX, AX
	JMP    loop16

loop8:
	VMAXPS Y3, Y0, Y0
	LEAQ   8(AX), DX
	CMPQ   DX, CX
	JGT    reduce
	VMULPS (SI)(AX*4), Y1, Y2
	VMAXPS Y2, Y0, Y0
	MOVQ   DX, AX

reduce:
	VEXTRACTF128 $1, Y0, X2
	VMAXPS       X2, X0, X0
	VPERMILPS    $0x4e, X0, X2
	VMAXPS       X2, X0, X0
	VPERMILPS    $0xb1, X0, X2
	VMAXPS       X2, X0, X0

tail:
	CMPQ   AX, CX
	JGE    done
	VMULSS (SI)(AX*4), X1, X2
	VMAXSS X2, X0, X0
	INCQ   AX
	JMP    tail

done:
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func scaleRow32(w *float32, n int, inv float64)
//
// w[i] = float32(float64(w[i])·inv) for i < n, four at a time (AVX2).
TEXT ·scaleRow32(SB), NOSPLIT, $0-24
	MOVQ         w+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD inv+16(FP), Y1
	XORQ         AX, AX

loop8s:
	LEAQ 8(AX), DX
	CMPQ DX, CX
	JGT  loop4s
	VCVTPS2PD  (SI)(AX*4), Y0
	VCVTPS2PD  16(SI)(AX*4), Y2
	VMULPD     Y1, Y0, Y0
	VMULPD     Y1, Y2, Y2
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y2, X2
	VMOVUPS    X0, (SI)(AX*4)
	VMOVUPS    X2, 16(SI)(AX*4)
	MOVQ       DX, AX
	JMP        loop8s

loop4s:
	LEAQ 4(AX), DX
	CMPQ DX, CX
	JGT  tails
	VCVTPS2PD  (SI)(AX*4), Y0
	VMULPD     Y1, Y0, Y0
	VCVTPD2PSY Y0, X0
	VMOVUPS    X0, (SI)(AX*4)
	MOVQ       DX, AX

tails:
	CMPQ      AX, CX
	JGE       dones
	VCVTSS2SD (SI)(AX*4), X0, X0
	VMULSD    X1, X0, X0
	VCVTSD2SS X0, X0, X0
	VMOVSS    X0, (SI)(AX*4)
	INCQ      AX
	JMP       tails

dones:
	VZEROUPPER
	RET

// func colSums32(sum *float64, w *float32, rows, d, ld int)
//
// sum[j] += float64(w[r·ld + j]) for r < rows in order, j < d (a multiple
// of 4; AVX2): each column's sum is the one-by-one loop's, four columns a
// vector, four rows added per load and store of the sums, the element the
// first operand of each addition as in the compiled scalar loop (the same
// NaN where two meet).
TEXT ·colSums32(SB), NOSPLIT, $0-40
	MOVQ sum+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ rows+16(FP), R8
	MOVQ d+24(FP), CX
	MOVQ ld+32(FP), DX
	SHLQ $2, DX
	LEAQ (DX)(DX*2), BX         // three rows

cs4:
	CMPQ R8, $4
	JB   csrow
	XORQ AX, AX
	LEAQ (SI)(DX*1), R9         // rows 1, 2 and 3 of the four
	LEAQ (SI)(DX*2), R10
	LEAQ (SI)(BX*1), R11

cs4col:
	CMPQ      AX, CX
	JAE       cs4next
	VMOVUPD   (DI)(AX*8), Y1
	VCVTPS2PD (SI)(AX*4), Y0
	VADDPD    Y1, Y0, Y1        // x + sum: x the first operand, as the scalar loop
	VCVTPS2PD (R9)(AX*4), Y0
	VADDPD    Y1, Y0, Y1
	VCVTPS2PD (R10)(AX*4), Y2
	VADDPD    Y1, Y2, Y1
	VCVTPS2PD (R11)(AX*4), Y3
	VADDPD    Y1, Y3, Y1
	VMOVUPD   Y1, (DI)(AX*8)
	ADDQ      $4, AX
	JMP       cs4col

cs4next:
	LEAQ (SI)(DX*4), SI
	SUBQ $4, R8
	JMP  cs4

csrow:
	TESTQ R8, R8
	JEQ   csdone
	XORQ  AX, AX

cscol:
	CMPQ       AX, CX
	JAE        csnext
	VCVTPS2PD  (SI)(AX*4), Y0
	VADDPD     (DI)(AX*8), Y0, Y0
	VMOVUPD    Y0, (DI)(AX*8)
	ADDQ       $4, AX
	JMP        cscol

csnext:
	ADDQ DX, SI
	DECQ R8
	JMP  csrow

csdone:
	VZEROUPPER
	RET
