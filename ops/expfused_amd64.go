//go:build amd64 && !purego

package ops

import (
	"math"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// haveExpAVX2 reports whether expChunk32 may run (AVX2).
var haveExpAVX2 = cpu.X86.HasAVX2

// expConsts are exp32Core's constants for expChunk32 (expfused_amd64.s), in
// its order: 16/ln2, the rounding magic 1.5·2⁵², ln2/16, the range (−700,
// 700), the polynomial's 1, 1/2, 1/6, 1/24.
//
//lint:ignore U1000 read by expfused_amd64.s
var expConsts = [9]float64{16 / math.Ln2, 6755399441055744.0, math.Ln2 / 16, -700, 700, 1, 1.0 / 2, 1.0 / 6, 1.0 / 24}

// expInts are the integer constants of expChunk32: the table index mask 15
// and the exponent bias 1023.
//
//lint:ignore U1000 read by expfused_amd64.s
var expInts = [2]uint64{15, 1023}

// expChunk32 computes, four at a time, e_i = exp32Core(scale·float64(raw[i]) −
// shift), sets row[i] = float32(e_i) and adds e_i to *sum, in index order,
// for i < n (a multiple of 4): the same operations as exp32Core in AVX2
// registers, so the same bits, and the sum the same chain of additions as a
// loop adding each e_i in turn. It stops at the first group of four with an
// x outside (−700, 700) (or NaN), adding none of it, and returns how many it
// computed.
//
//go:noescape
func expChunk32(row, raw *float32, n int, scale, shift float64, sum *float64) int

// expChunkF32 is expChunk32 of the attention head's arguments x_i =
// float32(float32(gs·s[i]) − mx), computed in float32 as the head's loop
// computes them (two roundings, no fused multiply-add), so the same bits.
//
//go:noescape
func expChunkF32(row, s *float32, n int, gs, mx float32, sum *float64) int

// expChunk32E is expChunk32 writing each e_i to e[i] (float64) instead of
// adding it to a sum: for callers that combine the exponentials themselves
// (the log-softmax gradient, the sparse cross-entropy's two sums). The same
// operations, so the same bits: eight at a time with AVX-512, then four at
// a time with AVX2.
func expChunk32E(row, raw *float32, n int, scale, shift float64, e *float64) int {
	k := 0
	if haveExpAVX512 && n >= 8 {
		k = expChunk32E512(row, raw, n&^7, scale, shift, e)
	}
	if k < n {
		k += expChunk32EAVX2((*float32)(unsafe.Add(unsafe.Pointer(row), 4*k)), (*float32)(unsafe.Add(unsafe.Pointer(raw), 4*k)), n-k, scale, shift, (*float64)(unsafe.Add(unsafe.Pointer(e), 8*k)))
	}
	return k
}

// expChunk32S2 is expChunk32E adding the exponentials to two sums instead
// of writing them out: e_i, i < n (a multiple of 4), into sums[i%2], in
// index order, as a loop alternating between two float64 accumulators adds
// them (the same bits). It stops where expChunk32E stops, adding none of
// the group it stops at, and returns how many it computed.
//
//go:noescape
func expChunk32S2(row, raw *float32, n int, scale, shift float64, sums *[2]float64) int

// haveExpAVX512 reports whether expChunk32E512 may run (AVX-512 F).
var haveExpAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX2

// expChunk32EAVX2 is expChunk32E four at a time in AVX2 registers (n a
// multiple of 4).
//
//go:noescape
func expChunk32EAVX2(row, raw *float32, n int, scale, shift float64, e *float64) int

// expChunk32E512 is expChunk32E eight at a time in AVX-512 registers (n a
// multiple of 8), the table read by a permute instead of a gather.
//
//go:noescape
func expChunk32E512(row, raw *float32, n int, scale, shift float64, e *float64) int
