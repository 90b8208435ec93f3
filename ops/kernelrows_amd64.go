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
