//go:build amd64 && !purego

#include "textflag.h"

DATA nfExp<>+0(SB)/4, $0x7f800000
GLOBL nfExp<>(SB), RODATA|NOPTR, $4

// func finiteRun32(x *float32, n int) int
//
// Returns the length of the leading run of 32-element blocks of x[:n]
// whose elements all have an exponent that is not all ones (finite
// values): a multiple of 32, n rounded down to one when every block is.
TEXT ·finiteRun32(SB), NOSPLIT, $0-24
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	ANDQ         $-32, CX
	VPBROADCASTD nfExp<>(SB), Y15
	XORQ         AX, AX

loop:
	CMPQ    AX, CX
	JAE     done
	VPAND   (SI)(AX*4), Y15, Y0
	VPAND   32(SI)(AX*4), Y15, Y1
	VPAND   64(SI)(AX*4), Y15, Y2
	VPAND   96(SI)(AX*4), Y15, Y3
	VPCMPEQD Y15, Y0, Y0
	VPCMPEQD Y15, Y1, Y1
	VPCMPEQD Y15, Y2, Y2
	VPCMPEQD Y15, Y3, Y3
	VPOR    Y1, Y0, Y0
	VPOR    Y3, Y2, Y2
	VPOR    Y2, Y0, Y0
	VPTEST  Y0, Y0
	JNZ     done
	ADDQ    $32, AX
	JMP     loop

done:
	VZEROUPPER
	MOVQ AX, ret+16(FP)
	RET

DATA maSign<>+0(SB)/4, $0x7fffffff
GLOBL maSign<>(SB), RODATA|NOPTR, $4

// func maxAbsBits32(x *float32, n int) uint32
//
// Returns the largest sign-cleared bit pattern of x[:n &^ 31] (0 if
// empty): unsigned maxima in four independent registers, 32 elements a
// step.
TEXT ·maxAbsBits32(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	ANDQ         $-32, CX
	VPBROADCASTD maSign<>(SB), Y15
	VPXOR        Y4, Y4, Y4
	VPXOR        Y5, Y5, Y5
	VPXOR        Y6, Y6, Y6
	VPXOR        Y7, Y7, Y7
	XORQ         AX, AX

maloop:
	CMPQ     AX, CX
	JAE      madone
	VPAND    (SI)(AX*4), Y15, Y0
	VPAND    32(SI)(AX*4), Y15, Y1
	VPAND    64(SI)(AX*4), Y15, Y2
	VPAND    96(SI)(AX*4), Y15, Y3
	VPMAXUD  Y0, Y4, Y4
	VPMAXUD  Y1, Y5, Y5
	VPMAXUD  Y2, Y6, Y6
	VPMAXUD  Y3, Y7, Y7
	ADDQ     $32, AX
	JMP      maloop

madone:
	VPMAXUD      Y5, Y4, Y4
	VPMAXUD      Y7, Y6, Y6
	VPMAXUD      Y6, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPMAXUD      X5, X4, X4
	VPSHUFD      $0x4e, X4, X5
	VPMAXUD      X5, X4, X4
	VPSHUFD      $0xb1, X4, X5
	VPMAXUD      X5, X4, X4
	VMOVD        X4, AX
	VZEROUPPER
	MOVL         AX, ret+16(FP)
	RET
