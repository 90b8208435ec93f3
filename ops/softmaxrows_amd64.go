//go:build amd64 && !purego

package ops

// haveSoftmaxRows reports whether softmaxRows32 may run: the CPU runs the
// kernels whose instructions it repeats (maxScaled32, expSum8, scaleRow32).
var haveSoftmaxRows = haveExp8 && haveExpAVX2

// softmaxRows32 computes kernelRow's float32 softmax weights of rows rows
// of n ≥ 1 scores (rows n apart in s and w) with the same instructions in
// the same order, so the same bits, and returns the number of rows done;
// it stops at a row with an argument g·s − mx above exp8Hi or NaN, which
// the caller computes with kernelRow. The caller guarantees that the
// rows·n elements of s and w exist.
//
//go:noescape
func softmaxRows32(w, s *float32, rows, n int, gs float32) int
