//go:build amd64 && !purego

package ops

import "golang.org/x/sys/cpu"

// haveExp8 reports whether expSum8 may run (AVX2 and FMA).
var haveExp8 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// expSum8 sets w[i] = exp(g·s[i] − mx) with the fast float32 exponential
// for i < k, eight at a time (n a multiple of 8), and returns k and the
// weights' sum; k < n where a group of eight holds an argument above exp8Hi
// or NaN (that group and the rest are left to the caller). Arguments below
// exp8Lo give 0.
//
//go:noescape
func expSum8(w, s *float32, n int, gs, mx float32) (k int, sum float64)
