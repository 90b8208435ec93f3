//go:build amd64 && !purego

package ops

import "golang.org/x/sys/cpu"

// haveAxpyAVX2 reports whether axpyRound32 may run (AVX2).
var haveAxpyAVX2 = cpu.X86.HasAVX2

// axpyRound32 sets y[i] += float32(a·float64(x[i])) for i < n (AVX2; see
// axpyRound).
//
//go:noescape
func axpyRound32(y, x *float32, n int, a float64)

// keyDots16 sets dots[i] = q·k_i for the 16 keys k_i, rows of d in k, each
// summed in float64 in index order as dot4 sums them (AVX2; d a positive
// multiple of 4).
//
//go:noescape
func keyDots16(q, k *float32, d int, dots *float64)
