//go:build amd64 && !purego

#include "textflag.h"

// maskTab: 8 int32 of all ones, then 8 zeros. The 8 int32 at
// maskTab + 4·(8−m) have their first m lanes set (m in 0..8).
DATA maskTab<>+0(SB)/8, $0xffffffffffffffff
DATA maskTab<>+8(SB)/8, $0xffffffffffffffff
DATA maskTab<>+16(SB)/8, $0xffffffffffffffff
DATA maskTab<>+24(SB)/8, $0xffffffffffffffff
DATA maskTab<>+32(SB)/8, $0
DATA maskTab<>+40(SB)/8, $0
DATA maskTab<>+48(SB)/8, $0
DATA maskTab<>+56(SB)/8, $0
GLOBL maskTab<>(SB), RODATA|NOPTR, $64

// MASK loads into Y the mask of the first clamp(w−off, 0, 8) lanes; uses
// BX, CX.
#define MASK(w, off, Y) \
	MOVQ w, BX; \
	SUBQ $off, BX; \
	CMPQ BX, $0; \
	JGE 2(PC); \
	XORQ BX, BX; \
	CMPQ BX, $8; \
	JLE 2(PC); \
	MOVQ $8, BX; \
	MOVQ $8, CX; \
	SUBQ BX, CX; \
	LEAQ maskTab<>(SB), BX; \
	VMOVDQU (BX)(CX*4), Y

// func rowKernel32(c, a, b *float32, inca, ldb, k, n int, acc bool)
//
// c[j] (+)= Σ_{l<k} a[l·inca] · b[l·ldb + j] for j < n, in chunks of 32
// columns held in four YMM accumulators; loads and stores are masked, so no
// memory beyond the last column of a row is touched.
TEXT ·rowKernel32(SB), 0, $0-57
	MOVQ c+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ inca+24(FP), R8
	MOVQ ldb+32(FP), R9
	MOVQ k+40(FP), R10
	MOVQ n+48(FP), R11
	MOVBLZX acc+56(FP), R12
	SHLQ $2, R8
	SHLQ $2, R9
	XORQ R13, R13 // first column of the chunk

chunk:
	CMPQ R13, R11
	JGE  done
	MOVQ R11, AX
	SUBQ R13, AX  // columns left: w
	MASK(AX, 0, Y12)
	MASK(AX, 8, Y13)
	MASK(AX, 16, Y14)
	MASK(AX, 24, Y15)
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ SI, R14
	LEAQ (DX)(R13*4), R15
	MOVQ R10, CX
	// Up to 8 columns left: one vector; up to 16: two. The other
	// accumulators stay zero and their masked stores write nothing.
	CMPQ AX, $8
	JLE  loop1
	CMPQ AX, $16
	JLE  loop2

loop:
	TESTQ CX, CX
	JZ    endk
	VBROADCASTSS (R14), Y8
	VMASKMOVPS   (R15), Y12, Y9
	VFMADD231PS  Y9, Y8, Y0
	VMASKMOVPS   32(R15), Y13, Y10
	VFMADD231PS  Y10, Y8, Y1
	VMASKMOVPS   64(R15), Y14, Y11
	VFMADD231PS  Y11, Y8, Y2
	VMASKMOVPS   96(R15), Y15, Y9
	VFMADD231PS  Y9, Y8, Y3
	ADDQ R8, R14
	ADDQ R9, R15
	DECQ CX
	JMP  loop

loop1:
	TESTQ CX, CX
	JZ    endk
	VBROADCASTSS (R14), Y8
	VMASKMOVPS   (R15), Y12, Y9
	VFMADD231PS  Y9, Y8, Y0
	ADDQ R8, R14
	ADDQ R9, R15
	DECQ CX
	JMP  loop1

loop2:
	TESTQ CX, CX
	JZ    endk
	VBROADCASTSS (R14), Y8
	VMASKMOVPS   (R15), Y12, Y9
	VFMADD231PS  Y9, Y8, Y0
	VMASKMOVPS   32(R15), Y13, Y10
	VFMADD231PS  Y10, Y8, Y1
	ADDQ R8, R14
	ADDQ R9, R15
	DECQ CX
	JMP  loop2

endk:
	LEAQ (DI)(R13*4), BX
	TESTQ R12, R12
	JZ    store
	VMASKMOVPS (BX), Y12, Y9
	VADDPS     Y9, Y0, Y0
	VMASKMOVPS 32(BX), Y13, Y10
	VADDPS     Y10, Y1, Y1
	VMASKMOVPS 64(BX), Y14, Y11
	VADDPS     Y11, Y2, Y2
	VMASKMOVPS 96(BX), Y15, Y9
	VADDPS     Y9, Y3, Y3

store:
	VMASKMOVPS Y0, Y12, (BX)
	VMASKMOVPS Y1, Y13, 32(BX)
	VMASKMOVPS Y2, Y14, 64(BX)
	VMASKMOVPS Y3, Y15, 96(BX)
	ADDQ $32, R13
	JMP  chunk

done:
	VZEROUPPER
	RET

// maskTab64: 4 int64 of all ones, then 4 zeros. The 4 int64 at
// maskTab64 + 8·(4−m) have their first m lanes set (m in 0..4).
DATA maskTab64<>+0(SB)/8, $0xffffffffffffffff
DATA maskTab64<>+8(SB)/8, $0xffffffffffffffff
DATA maskTab64<>+16(SB)/8, $0xffffffffffffffff
DATA maskTab64<>+24(SB)/8, $0xffffffffffffffff
DATA maskTab64<>+32(SB)/8, $0
DATA maskTab64<>+40(SB)/8, $0
DATA maskTab64<>+48(SB)/8, $0
DATA maskTab64<>+56(SB)/8, $0
GLOBL maskTab64<>(SB), RODATA|NOPTR, $64

// MASK64 loads into Y the mask of the first clamp(w−off, 0, 4) float64
// lanes; uses BX, CX.
#define MASK64(w, off, Y) \
	MOVQ w, BX; \
	SUBQ $off, BX; \
	CMPQ BX, $0; \
	JGE 2(PC); \
	XORQ BX, BX; \
	CMPQ BX, $4; \
	JLE 2(PC); \
	MOVQ $4, BX; \
	MOVQ $4, CX; \
	SUBQ BX, CX; \
	LEAQ maskTab64<>(SB), BX; \
	VMOVDQU (BX)(CX*8), Y

// func rowKernel64(c, a, b *float64, inca, ldb, k, n int, acc bool)
//
// rowKernel32 for float64: chunks of 16 columns in four YMM accumulators.
TEXT ·rowKernel64(SB), 0, $0-57
	MOVQ c+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ inca+24(FP), R8
	MOVQ ldb+32(FP), R9
	MOVQ k+40(FP), R10
	MOVQ n+48(FP), R11
	MOVBLZX acc+56(FP), R12
	SHLQ $3, R8
	SHLQ $3, R9
	XORQ R13, R13

chunk64:
	CMPQ R13, R11
	JGE  done64
	MOVQ R11, AX
	SUBQ R13, AX
	MASK64(AX, 0, Y12)
	MASK64(AX, 4, Y13)
	MASK64(AX, 8, Y14)
	MASK64(AX, 12, Y15)
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	MOVQ SI, R14
	LEAQ (DX)(R13*8), R15
	MOVQ R10, CX
	// Up to 4 columns left: one vector; up to 8: two (as rowKernel32).
	CMPQ AX, $4
	JLE  loop164
	CMPQ AX, $8
	JLE  loop264

loop64:
	TESTQ CX, CX
	JZ    endk64
	VBROADCASTSD (R14), Y8
	VMASKMOVPD   (R15), Y12, Y9
	VFMADD231PD  Y9, Y8, Y0
	VMASKMOVPD   32(R15), Y13, Y10
	VFMADD231PD  Y10, Y8, Y1
	VMASKMOVPD   64(R15), Y14, Y11
	VFMADD231PD  Y11, Y8, Y2
	VMASKMOVPD   96(R15), Y15, Y9
	VFMADD231PD  Y9, Y8, Y3
	ADDQ R8, R14
	ADDQ R9, R15
	DECQ CX
	JMP  loop64

loop164:
	TESTQ CX, CX
	JZ    endk64
	VBROADCASTSD (R14), Y8
	VMASKMOVPD   (R15), Y12, Y9
	VFMADD231PD  Y9, Y8, Y0
	ADDQ R8, R14
	ADDQ R9, R15
	DECQ CX
	JMP  loop164

loop264:
	TESTQ CX, CX
	JZ    endk64
	VBROADCASTSD (R14), Y8
	VMASKMOVPD   (R15), Y12, Y9
	VFMADD231PD  Y9, Y8, Y0
	VMASKMOVPD   32(R15), Y13, Y10
	VFMADD231PD  Y10, Y8, Y1
	ADDQ R8, R14
	ADDQ R9, R15
	DECQ CX
	JMP  loop264

endk64:
	LEAQ (DI)(R13*8), BX
	TESTQ R12, R12
	JZ    store64
	VMASKMOVPD (BX), Y12, Y9
	VADDPD     Y9, Y0, Y0
	VMASKMOVPD 32(BX), Y13, Y10
	VADDPD     Y10, Y1, Y1
	VMASKMOVPD 64(BX), Y14, Y11
	VADDPD     Y11, Y2, Y2
	VMASKMOVPD 96(BX), Y15, Y9
	VADDPD     Y9, Y3, Y3

store64:
	VMASKMOVPD Y0, Y12, (BX)
	VMASKMOVPD Y1, Y13, 32(BX)
	VMASKMOVPD Y2, Y14, 64(BX)
	VMASKMOVPD Y3, Y15, 96(BX)
	ADDQ $16, R13
	JMP  chunk64

done64:
	VZEROUPPER
	RET
