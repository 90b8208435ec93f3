//go:build amd64 && !purego

#include "textflag.h"

// func expChunk32E512(row, raw *float32, n int, scale, shift float64, e *float64) int
//
// expChunk32E eight at a time in AVX-512 registers, the same operations
// in the same order (so the same bits), with the table 2^(i/16) held in two
// registers and read by a permute instead of a gather. n is a multiple of
// 8; it stops at the first group of eight with an x outside (−700, 700)
// (or NaN), computing none of it, and returns how many it computed.
TEXT ·expChunk32E512(SB), NOSPLIT, $0-56
	MOVQ row+0(FP), DI
	MOVQ raw+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD scale+24(FP), Z0
	VBROADCASTSD shift+32(FP), Z1
	MOVQ e+40(FP), DX
	LEAQ ·expConsts(SB), R9
	VBROADCASTSD 0(R9), Z2  // k = 16/ln2
	VBROADCASTSD 8(R9), Z3  // magic
	VBROADCASTSD 16(R9), Z4 // c = ln2/16
	VBROADCASTSD 24(R9), Z5 // -700
	VBROADCASTSD 32(R9), Z6 // 700
	VBROADCASTSD 40(R9), Z7 // 1
	VBROADCASTSD 48(R9), Z8 // 1/2
	VBROADCASTSD 56(R9), Z9 // 1/6
	VBROADCASTSD 64(R9), Z16 // 1/24
	LEAQ ·expInts(SB), R10
	VPBROADCASTQ 0(R10), Z10 // 15
	VPBROADCASTQ 8(R10), Z17 // 1023
	LEAQ ·exp2Sixteenths(SB), R8
	VMOVUPD 0(R8), Z20  // 2^(i/16), i < 8
	VMOVUPD 64(R8), Z21 // i = 8..15
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JAE  done
	VCVTPS2PD (SI)(AX*4), Z11 // raw, exactly
	VMULPD    Z0, Z11, Z11    // g·raw
	VSUBPD    Z1, Z11, Z11    // x = g·raw − shift
	VCMPPD    $0x1e, Z5, Z11, K1 // x > −700 (ordered)
	VCMPPD    $0x11, Z6, Z11, K2 // x < 700 (ordered)
	KANDB     K2, K1, K1
	KMOVB     K1, BX
	CMPQ      BX, $0xff
	JNE       done
	VMULPD    Z2, Z11, Z12  // x·k
	VADDPD    Z3, Z12, Z12  // y = x·k + magic
	VPSUBQ    Z3, Z12, Z13  // n = bits(y) − bits(magic)
	VSUBPD    Z3, Z12, Z14  // y − magic
	VMULPD    Z4, Z14, Z14  // (y − magic)·c
	VSUBPD    Z14, Z11, Z14 // r = x − (y − magic)·c
	VMULPD    Z16, Z14, Z15 // r·(1/24)
	VADDPD    Z9, Z15, Z15  // 1/6 + r·(1/24)
	VMULPD    Z15, Z14, Z15 // r·(...)
	VADDPD    Z8, Z15, Z15  // 1/2 + ...
	VMULPD    Z15, Z14, Z15 // r·(...)
	VADDPD    Z7, Z15, Z15  // 1 + ...
	VMULPD    Z15, Z14, Z15 // r·(...)
	VADDPD    Z7, Z15, Z15  // p = 1 + ...
	VPANDQ    Z10, Z13, Z12 // n & 15
	VPERMI2PD Z21, Z20, Z12 // 2^((n&15)/16)
	VMULPD    Z12, Z15, Z15 // p·2^((n&15)/16)
	VPSRLQ    $4, Z13, Z13  // n >> 4 (the low 12 bits are those of the arithmetic shift)
	VPADDQ    Z17, Z13, Z13
	VPSLLQ    $52, Z13, Z13 // 2^(n>>4)
	VMULPD    Z13, Z15, Z15 // e
	VMOVUPD   Z15, (DX)(AX*8)
	VCVTPD2PS Z15, Y12
	VMOVUPS   Y12, (DI)(AX*4)
	ADDQ      $8, AX
	JMP       loop

done:
	MOVQ AX, ret+48(FP)
	VZEROUPPER
	RET
