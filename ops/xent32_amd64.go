//go:build amd64 && !purego

package ops

import "golang.org/x/sys/cpu"

// haveXent32 reports whether xentExp32 and xentScale32 may run (AVX2 and
// FMA).
var haveXent32 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// xentExp32 is xentExp32Go's loop over e[:n], x[:n] (n a multiple of 8),
// eight lanes per instruction, the same operations, so the same bits: it
// sets e[i] = xentExpf(x[i] − m) and adds float64(e[i]) to sums[i%8]. It
// stops at the first group of eight holding an argument above xentHi or
// NaN, adding none of it, and returns how many it computed. It prefetches
// next[:n] into the L2 cache as it goes (next may be x).
//
//go:noescape
func xentExp32(e, x *float32, n int, m float32, sums *[8]float64, next *float32) int

// xentScale32 sets o[i] = o[i]·k in float32 for i < n.
//
//go:noescape
func xentScale32(o *float32, n int, k float32)
