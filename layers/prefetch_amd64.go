package layers

import "unsafe"

// prefetchSpan asks the CPU to bring every cache line holding a byte of the
// n bytes from p into its caches (PREFETCHT0). It reads nothing and never
// faults; p must point into a live object (the caller's slice element).
//
//go:noescape
func prefetchSpan(p unsafe.Pointer, n int)
