#include "textflag.h"

// func prefetchSpan(p unsafe.Pointer, n int)
// PREFETCHT1 (into the L2 cache) of every cache line holding a byte of
// p[0:n].
TEXT ·prefetchSpan(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JLE done
	ADDQ AX, CX
	ANDQ $-64, AX

loop:
	PREFETCHT1 (AX)
	ADDQ $64, AX
	CMPQ AX, CX
	JCS loop

done:
	RET
