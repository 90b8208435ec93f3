//go:build amd64 && !purego

#include "textflag.h"

// The kernels of mulAddRows (narrow.go): four or eight rows of a narrow
// product at once, so that the chains of fused multiply-adds of different
// rows overlap; every element of C is still one chain over k in order, from
// zero (as gemm's row kernels), so the same bits as ops.Gemm and
// ops.MulAddRow.

// nmask: 8 int32 of all ones, then 8 zeros. The 8 int32 at nmask + 4·(8−m)
// have their first m lanes set (m in 0..8).
DATA nmask<>+0(SB)/8, $0xffffffffffffffff
DATA nmask<>+8(SB)/8, $0xffffffffffffffff
DATA nmask<>+16(SB)/8, $0xffffffffffffffff
DATA nmask<>+24(SB)/8, $0xffffffffffffffff
DATA nmask<>+32(SB)/8, $0
DATA nmask<>+40(SB)/8, $0
DATA nmask<>+48(SB)/8, $0
DATA nmask<>+56(SB)/8, $0
GLOBL nmask<>(SB), RODATA|NOPTR, $64

// NMASK loads into Y the mask of the first clamp(w−off, 0, lanes) lanes
// of size bytes each (lanes·size = 32); uses BX, CX.
#define NMASK(w, off, lanes, size, Y) \
	MOVQ w, BX; \
	SUBQ $off, BX; \
	CMPQ BX, $0; \
	JGE 2(PC); \
	XORQ BX, BX; \
	CMPQ BX, $lanes; \
	JLE 2(PC); \
	MOVQ $lanes, BX; \
	MOVQ $lanes, CX; \
	SUBQ BX, CX; \
	LEAQ nmask<>(SB), BX; \
	VMOVDQU (BX)(CX*size), Y

// STOREPART32 stores the first CX lanes (1..7) of the float32 vector Yv
// (Xv its low half) at addr with plain stores, four, two and one lanes
// (VMASKMOVPS is slow to store on AMD's cores): the same elements written.
// Yv is destroyed; uses BX.
#define STOREPART32(Yv, Xv, addr) \
	LEAQ addr, BX; \
	TESTQ $4, CX; \
	JZ 4(PC); \
	VMOVUPS Xv, (BX); \
	VEXTRACTF128 $1, Yv, Xv; \
	ADDQ $16, BX; \
	TESTQ $2, CX; \
	JZ 4(PC); \
	VMOVQ Xv, (BX); \
	VMOVHLPS Xv, Xv, Xv; \
	ADDQ $8, BX; \
	TESTQ $1, CX; \
	JZ 2(PC); \
	VMOVSS Xv, (BX)

// func narrowWide32(c, a, b *float32, ldc, rsa, inca, ldb, k, n int, mode uint8)
//
// c[p·ldc + j] (+)= Σ_{l<k} a[p·rsa + l·inca]·b[l·ldb + j] for p < 4 and
// j < n ≤ 16, k ≥ 1: two vectors of columns per row.
TEXT ·narrowWide32(SB), NOSPLIT, $0-73
	MOVQ n+64(FP), AX
	NMASK(AX, 0, 8, 4, Y14)
	NMASK(AX, 8, 8, 4, Y15)
	MOVQ c+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ ldc+24(FP), R12
	SHLQ $2, R12
	LEAQ (R12)(R12*2), R13
	MOVQ rsa+32(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	MOVQ inca+40(FP), R10
	SHLQ $2, R10
	MOVQ ldb+48(FP), R11
	SHLQ $2, R11
	MOVQ k+56(FP), CX
	MOVBLZX mode+72(FP), AX
	CMPQ AX, $2
	JNE  wzero32
	// mode 2: the chains go on from the values in C.
	VMASKMOVPS (DI), Y14, Y0
	VMASKMOVPS 32(DI), Y15, Y1
	VMASKMOVPS (DI)(R12*1), Y14, Y2
	VMASKMOVPS 32(DI)(R12*1), Y15, Y3
	VMASKMOVPS (DI)(R12*2), Y14, Y4
	VMASKMOVPS 32(DI)(R12*2), Y15, Y5
	VMASKMOVPS (DI)(R13*1), Y14, Y6
	VMASKMOVPS 32(DI)(R13*1), Y15, Y7
	JMP  wloop32

wzero32:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

wloop32:
	VMASKMOVPS (DX), Y14, Y8
	VMASKMOVPS 32(DX), Y15, Y9
	VBROADCASTSS (SI), Y10
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y10, Y1
	VBROADCASTSS (SI)(R8*1), Y11
	VFMADD231PS Y8, Y11, Y2
	VFMADD231PS Y9, Y11, Y3
	VBROADCASTSS (SI)(R8*2), Y12
	VFMADD231PS Y8, Y12, Y4
	VFMADD231PS Y9, Y12, Y5
	VBROADCASTSS (SI)(R9*1), Y13
	VFMADD231PS Y8, Y13, Y6
	VFMADD231PS Y9, Y13, Y7
	ADDQ R10, SI
	ADDQ R11, DX
	DECQ CX
	JNZ  wloop32

	CMPQ AX, $1
	JNE  wstore32
	VMASKMOVPS (DI), Y14, Y8
	VADDPS Y8, Y0, Y0
	VMASKMOVPS 32(DI), Y15, Y9
	VADDPS Y9, Y1, Y1
	VMASKMOVPS (DI)(R12*1), Y14, Y8
	VADDPS Y8, Y2, Y2
	VMASKMOVPS 32(DI)(R12*1), Y15, Y9
	VADDPS Y9, Y3, Y3
	VMASKMOVPS (DI)(R12*2), Y14, Y8
	VADDPS Y8, Y4, Y4
	VMASKMOVPS 32(DI)(R12*2), Y15, Y9
	VADDPS Y9, Y5, Y5
	VMASKMOVPS (DI)(R13*1), Y14, Y8
	VADDPS Y8, Y6, Y6
	VMASKMOVPS 32(DI)(R13*1), Y15, Y9
	VADDPS Y9, Y7, Y7

wstore32:
	// A full vector of columns is stored with VMOVUPS, a partial one with
	// STOREPART32, an empty one not at all: the same elements written.
	MOVQ n+64(FP), BX
	CMPQ BX, $8
	JLT  wmask32
	VMOVUPS Y0, (DI)
	VMOVUPS Y2, (DI)(R12*1)
	VMOVUPS Y4, (DI)(R12*2)
	VMOVUPS Y6, (DI)(R13*1)
	CMPQ BX, $16
	JLT  wpart32
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y3, 32(DI)(R12*1)
	VMOVUPS Y5, 32(DI)(R12*2)
	VMOVUPS Y7, 32(DI)(R13*1)
	VZEROUPPER
	RET

wpart32:
	MOVQ BX, CX
	SUBQ $8, CX
	JZ   wdone32
	STOREPART32(Y1, X1, 32(DI))
	STOREPART32(Y3, X3, 32(DI)(R12*1))
	STOREPART32(Y5, X5, 32(DI)(R12*2))
	STOREPART32(Y7, X7, 32(DI)(R13*1))

wdone32:
	VZEROUPPER
	RET

wmask32:
	MOVQ BX, CX
	STOREPART32(Y0, X0, (DI))
	STOREPART32(Y2, X2, (DI)(R12*1))
	STOREPART32(Y4, X4, (DI)(R12*2))
	STOREPART32(Y6, X6, (DI)(R13*1))
	VZEROUPPER
	RET

// func narrowTall32(c, a, b *float32, ldc, rsa, inca, ldb, k, n int, mode uint8)
//
// narrowWide32 for p < 8 and j < n ≤ 8: one vector of columns per row.
TEXT ·narrowTall32(SB), NOSPLIT, $0-73
	MOVQ n+64(FP), AX
	NMASK(AX, 0, 8, 4, Y15)
	MOVQ c+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ ldc+24(FP), R12
	SHLQ $2, R12
	LEAQ (R12)(R12*2), R13
	MOVQ rsa+32(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	LEAQ (SI)(R8*4), R14
	MOVQ inca+40(FP), R10
	SHLQ $2, R10
	MOVQ ldb+48(FP), R11
	SHLQ $2, R11
	MOVQ k+56(FP), CX
	MOVBLZX mode+72(FP), AX
	CMPQ AX, $2
	JNE  tzero32
	// mode 2: the chains go on from the values in C.
	LEAQ (DI)(R12*4), BX
	VMASKMOVPS (DI), Y15, Y0
	VMASKMOVPS (DI)(R12*1), Y15, Y1
	VMASKMOVPS (DI)(R12*2), Y15, Y2
	VMASKMOVPS (DI)(R13*1), Y15, Y3
	VMASKMOVPS (BX), Y15, Y4
	VMASKMOVPS (BX)(R12*1), Y15, Y5
	VMASKMOVPS (BX)(R12*2), Y15, Y6
	VMASKMOVPS (BX)(R13*1), Y15, Y7
	JMP  tloop32

tzero32:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

tloop32:
	VMASKMOVPS (DX), Y15, Y8
	VBROADCASTSS (SI), Y9
	VFMADD231PS Y8, Y9, Y0
	VBROADCASTSS (SI)(R8*1), Y10
	VFMADD231PS Y8, Y10, Y1
	VBROADCASTSS (SI)(R8*2), Y11
	VFMADD231PS Y8, Y11, Y2
	VBROADCASTSS (SI)(R9*1), Y12
	VFMADD231PS Y8, Y12, Y3
	VBROADCASTSS (R14), Y9
	VFMADD231PS Y8, Y9, Y4
	VBROADCASTSS (R14)(R8*1), Y10
	VFMADD231PS Y8, Y10, Y5
	VBROADCASTSS (R14)(R8*2), Y11
	VFMADD231PS Y8, Y11, Y6
	VBROADCASTSS (R14)(R9*1), Y12
	VFMADD231PS Y8, Y12, Y7
	ADDQ R10, SI
	ADDQ R10, R14
	ADDQ R11, DX
	DECQ CX
	JNZ  tloop32

	LEAQ (DI)(R12*4), BX
	CMPQ AX, $1
	JNE  tstore32
	VMASKMOVPS (DI), Y15, Y8
	VADDPS Y8, Y0, Y0
	VMASKMOVPS (DI)(R12*1), Y15, Y8
	VADDPS Y8, Y1, Y1
	VMASKMOVPS (DI)(R12*2), Y15, Y8
	VADDPS Y8, Y2, Y2
	VMASKMOVPS (DI)(R13*1), Y15, Y8
	VADDPS Y8, Y3, Y3
	VMASKMOVPS (BX), Y15, Y8
	VADDPS Y8, Y4, Y4
	VMASKMOVPS (BX)(R12*1), Y15, Y8
	VADDPS Y8, Y5, Y5
	VMASKMOVPS (BX)(R12*2), Y15, Y8
	VADDPS Y8, Y6, Y6
	VMASKMOVPS (BX)(R13*1), Y15, Y8
	VADDPS Y8, Y7, Y7

tstore32:
	// A full vector with VMOVUPS, a partial one with STOREPART32.
	MOVQ n+64(FP), CX
	CMPQ CX, $8
	JLT  tmask32
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, (DI)(R12*1)
	VMOVUPS Y2, (DI)(R12*2)
	VMOVUPS Y3, (DI)(R13*1)
	VMOVUPS Y4, (BX)
	VMOVUPS Y5, (BX)(R12*1)
	VMOVUPS Y6, (BX)(R12*2)
	VMOVUPS Y7, (BX)(R13*1)
	VZEROUPPER
	RET

tmask32:
	MOVQ BX, R14
	STOREPART32(Y0, X0, (DI))
	STOREPART32(Y1, X1, (DI)(R12*1))
	STOREPART32(Y2, X2, (DI)(R12*2))
	STOREPART32(Y3, X3, (DI)(R13*1))
	STOREPART32(Y4, X4, (R14))
	STOREPART32(Y5, X5, (R14)(R12*1))
	STOREPART32(Y6, X6, (R14)(R12*2))
	STOREPART32(Y7, X7, (R14)(R13*1))
	VZEROUPPER
	RET

// func narrowWide64(c, a, b *float64, ldc, rsa, inca, ldb, k, n int, acc bool)
//
// c[p·ldc + j] (+)= Σ_{l<k} a[p·rsa + l·inca]·b[l·ldb + j] for p < 4 and
// j < n ≤ 8, k ≥ 1: two vectors of columns per row.
TEXT ·narrowWide64(SB), NOSPLIT, $0-73
	MOVQ n+64(FP), AX
	NMASK(AX, 0, 4, 8, Y14)
	NMASK(AX, 4, 4, 8, Y15)
	MOVQ c+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ ldc+24(FP), R12
	SHLQ $3, R12
	LEAQ (R12)(R12*2), R13
	MOVQ rsa+32(FP), R8
	SHLQ $3, R8
	LEAQ (R8)(R8*2), R9
	MOVQ inca+40(FP), R10
	SHLQ $3, R10
	MOVQ ldb+48(FP), R11
	SHLQ $3, R11
	MOVQ k+56(FP), CX
	MOVBLZX acc+72(FP), AX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

wloop64:
	VMASKMOVPD (DX), Y14, Y8
	VMASKMOVPD 32(DX), Y15, Y9
	VBROADCASTSD (SI), Y10
	VFMADD231PD Y8, Y10, Y0
	VFMADD231PD Y9, Y10, Y1
	VBROADCASTSD (SI)(R8*1), Y11
	VFMADD231PD Y8, Y11, Y2
	VFMADD231PD Y9, Y11, Y3
	VBROADCASTSD (SI)(R8*2), Y12
	VFMADD231PD Y8, Y12, Y4
	VFMADD231PD Y9, Y12, Y5
	VBROADCASTSD (SI)(R9*1), Y13
	VFMADD231PD Y8, Y13, Y6
	VFMADD231PD Y9, Y13, Y7
	ADDQ R10, SI
	ADDQ R11, DX
	DECQ CX
	JNZ  wloop64

	TESTQ AX, AX
	JZ    wstore64
	VMASKMOVPD (DI), Y14, Y8
	VADDPD Y8, Y0, Y0
	VMASKMOVPD 32(DI), Y15, Y9
	VADDPD Y9, Y1, Y1
	VMASKMOVPD (DI)(R12*1), Y14, Y8
	VADDPD Y8, Y2, Y2
	VMASKMOVPD 32(DI)(R12*1), Y15, Y9
	VADDPD Y9, Y3, Y3
	VMASKMOVPD (DI)(R12*2), Y14, Y8
	VADDPD Y8, Y4, Y4
	VMASKMOVPD 32(DI)(R12*2), Y15, Y9
	VADDPD Y9, Y5, Y5
	VMASKMOVPD (DI)(R13*1), Y14, Y8
	VADDPD Y8, Y6, Y6
	VMASKMOVPD 32(DI)(R13*1), Y15, Y9
	VADDPD Y9, Y7, Y7

wstore64:
	// As narrowWide32: full vectors with VMOVUPD, a partial one with
	// VMASKMOVPD, an empty one not at all.
	MOVQ n+64(FP), BX
	CMPQ BX, $4
	JLT  wmask64
	VMOVUPD Y0, (DI)
	VMOVUPD Y2, (DI)(R12*1)
	VMOVUPD Y4, (DI)(R12*2)
	VMOVUPD Y6, (DI)(R13*1)
	CMPQ BX, $8
	JLT  wpart64
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y3, 32(DI)(R12*1)
	VMOVUPD Y5, 32(DI)(R12*2)
	VMOVUPD Y7, 32(DI)(R13*1)
	VZEROUPPER
	RET

wpart64:
	CMPQ BX, $4
	JEQ  wdone64
	VMASKMOVPD Y1, Y15, 32(DI)
	VMASKMOVPD Y3, Y15, 32(DI)(R12*1)
	VMASKMOVPD Y5, Y15, 32(DI)(R12*2)
	VMASKMOVPD Y7, Y15, 32(DI)(R13*1)

wdone64:
	VZEROUPPER
	RET

wmask64:
	VMASKMOVPD Y0, Y14, (DI)
	VMASKMOVPD Y2, Y14, (DI)(R12*1)
	VMASKMOVPD Y4, Y14, (DI)(R12*2)
	VMASKMOVPD Y6, Y14, (DI)(R13*1)
	VZEROUPPER
	RET

// func narrowTall64(c, a, b *float64, ldc, rsa, inca, ldb, k, n int, acc bool)
//
// narrowWide64 for p < 8 and j < n ≤ 4: one vector of columns per row.
TEXT ·narrowTall64(SB), NOSPLIT, $0-73
	MOVQ n+64(FP), AX
	NMASK(AX, 0, 4, 8, Y15)
	MOVQ c+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ ldc+24(FP), R12
	SHLQ $3, R12
	LEAQ (R12)(R12*2), R13
	MOVQ rsa+32(FP), R8
	SHLQ $3, R8
	LEAQ (R8)(R8*2), R9
	LEAQ (SI)(R8*4), R14
	MOVQ inca+40(FP), R10
	SHLQ $3, R10
	MOVQ ldb+48(FP), R11
	SHLQ $3, R11
	MOVQ k+56(FP), CX
	MOVBLZX acc+72(FP), AX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

tloop64:
	VMASKMOVPD (DX), Y15, Y8
	VBROADCASTSD (SI), Y9
	VFMADD231PD Y8, Y9, Y0
	VBROADCASTSD (SI)(R8*1), Y10
	VFMADD231PD Y8, Y10, Y1
	VBROADCASTSD (SI)(R8*2), Y11
	VFMADD231PD Y8, Y11, Y2
	VBROADCASTSD (SI)(R9*1), Y12
	VFMADD231PD Y8, Y12, Y3
	VBROADCASTSD (R14), Y9
	VFMADD231PD Y8, Y9, Y4
	VBROADCASTSD (R14)(R8*1), Y10
	VFMADD231PD Y8, Y10, Y5
	VBROADCASTSD (R14)(R8*2), Y11
	VFMADD231PD Y8, Y11, Y6
	VBROADCASTSD (R14)(R9*1), Y12
	VFMADD231PD Y8, Y12, Y7
	ADDQ R10, SI
	ADDQ R10, R14
	ADDQ R11, DX
	DECQ CX
	JNZ  tloop64

	LEAQ (DI)(R12*4), BX
	TESTQ AX, AX
	JZ    tstore64
	VMASKMOVPD (DI), Y15, Y8
	VADDPD Y8, Y0, Y0
	VMASKMOVPD (DI)(R12*1), Y15, Y8
	VADDPD Y8, Y1, Y1
	VMASKMOVPD (DI)(R12*2), Y15, Y8
	VADDPD Y8, Y2, Y2
	VMASKMOVPD (DI)(R13*1), Y15, Y8
	VADDPD Y8, Y3, Y3
	VMASKMOVPD (BX), Y15, Y8
	VADDPD Y8, Y4, Y4
	VMASKMOVPD (BX)(R12*1), Y15, Y8
	VADDPD Y8, Y5, Y5
	VMASKMOVPD (BX)(R12*2), Y15, Y8
	VADDPD Y8, Y6, Y6
	VMASKMOVPD (BX)(R13*1), Y15, Y8
	VADDPD Y8, Y7, Y7

tstore64:
	// A full vector with VMOVUPD, a partial one with VMASKMOVPD.
	MOVQ n+64(FP), CX
	CMPQ CX, $4
	JLT  tmask64
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, (DI)(R12*1)
	VMOVUPD Y2, (DI)(R12*2)
	VMOVUPD Y3, (DI)(R13*1)
	VMOVUPD Y4, (BX)
	VMOVUPD Y5, (BX)(R12*1)
	VMOVUPD Y6, (BX)(R12*2)
	VMOVUPD Y7, (BX)(R13*1)
	VZEROUPPER
	RET

tmask64:
	VMASKMOVPD Y0, Y15, (DI)
	VMASKMOVPD Y1, Y15, (DI)(R12*1)
	VMASKMOVPD Y2, Y15, (DI)(R12*2)
	VMASKMOVPD Y3, Y15, (DI)(R13*1)
	VMASKMOVPD Y4, Y15, (BX)
	VMASKMOVPD Y5, Y15, (BX)(R12*1)
	VMASKMOVPD Y6, Y15, (BX)(R12*2)
	VMASKMOVPD Y7, Y15, (BX)(R13*1)
	VZEROUPPER
	RET

// iota8: the int32 lanes 0..7.
DATA iota8<>+0(SB)/4, $0
DATA iota8<>+4(SB)/4, $1
DATA iota8<>+8(SB)/4, $2
DATA iota8<>+12(SB)/4, $3
DATA iota8<>+16(SB)/4, $4
DATA iota8<>+20(SB)/4, $5
DATA iota8<>+24(SB)/4, $6
DATA iota8<>+28(SB)/4, $7
GLOBL iota8<>(SB), RODATA|NOPTR, $32

// func dotCols32(c, a, b *float32, rsa, k, m int)
//
// c[i] = Σ_{l<k} a[i·rsa + l]·b[l] for i < m: eight rows side by side, one
// lane each, their l-th elements gathered; each lane one chain of fused
// multiply-adds over l in order, from zero. k ≥ 1, m ≥ 1.
TEXT ·dotCols32(SB), NOSPLIT, $0-48
	MOVQ c+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ rsa+24(FP), R8
	MOVQ k+32(FP), R9
	MOVQ m+40(FP), R10
	VMOVQ R8, X0
	VPBROADCASTD X0, Y0
	VMOVDQU iota8<>(SB), Y1
	VPMULLD Y0, Y1, Y1 // lane i: i·rsa
	MOVQ R8, R11
	SHLQ $5, R11       // eight rows of a, in bytes

dgroup:
	CMPQ R10, $0
	JLE  ddone
	NMASK(R10, 0, 8, 4, Y2)
	VXORPS Y3, Y3, Y3
	MOVQ SI, R12
	MOVQ DX, R13
	MOVQ R9, CX

dloop:
	VMOVDQA Y2, Y4
	VXORPS  Y5, Y5, Y5
	VGATHERDPS Y4, (R12)(Y1*4), Y5
	VBROADCASTSS (R13), Y6
	VFMADD231PS Y5, Y6, Y3
	ADDQ $4, R12
	ADDQ $4, R13
	DECQ CX
	JNZ  dloop

	CMPQ R10, $8
	JL   dpartial
	VMOVUPS Y3, (DI)
	ADDQ $32, DI
	ADDQ R11, SI
	SUBQ $8, R10
	JMP  dgroup

dpartial:
	VMASKMOVPS Y3, Y2, (DI)

ddone:
	VZEROUPPER
	RET

// func outerRows32(c, w, d *float32, m, n int)
//
// c[i·n + j] = w[i]·d[j] + 0 as one fused multiply-add from zero, for i < m,
// j < n ≤ 8 (m, n ≥ 1): the chain of mulAddRows for k = 1. A row is one
// vector; rows are stored in order with full-width stores while the vector
// ends within c (its spill into the next row is overwritten by that row),
// the rest masked.
TEXT ·outerRows32(SB), NOSPLIT, $0-40
	MOVQ c+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ d+16(FP), DX
	MOVQ m+24(FP), R10
	MOVQ n+32(FP), AX
	NMASK(AX, 0, 8, 4, Y2)
	VMASKMOVPS (DX), Y2, Y1
	MOVQ AX, R11
	SHLQ $2, R11      // a row, in bytes
	MOVQ R10, R12
	IMULQ R11, R12
	ADDQ DI, R12      // the end of c
	SUBQ $32, R12     // the last start of a full-width store

orow:
	TESTQ R10, R10
	JZ    odone
	VXORPS Y3, Y3, Y3
	VBROADCASTSS (SI), Y4
	VFMADD231PS Y1, Y4, Y3
	CMPQ DI, R12
	JG   omask
	VMOVUPS Y3, (DI)
	JMP  onext

omask:
	VMASKMOVPS Y3, Y2, (DI)

onext:
	ADDQ R11, DI
	ADDQ $4, SI
	DECQ R10
	JMP  orow

odone:
	VZEROUPPER
	RET
