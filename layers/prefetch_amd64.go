package layers

import "unsafe"

// prefetchSpan asks the CPU to bring every cache line holding a byte of the
// n bytes from p into its L2 cache (PREFETCHT1: on this project's Zen 4 it
// lowered Fit's overhead more than PREFETCHT0, which waits for the L1's miss
// buffers; bench/results/fit-overhead.md). It reads nothing and never
// faults; p must point into a live object (the caller's slice element).
//
//go:noescape
func prefetchSpan(p unsafe.Pointer, n int)
