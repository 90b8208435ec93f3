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

// axpyRows32x32 sets y[c] += float32(a_i·float64(x[i·ldx + c])) for c <
// 32, i = 0..n-1 in order, a_i = coef[i·inc], skipping the a_i that are
// zero (AVX2; see axpyRows32).
//
//go:noescape
func axpyRows32x32(y, x *float32, ldx int, coef *float64, inc, n int)

// axpyRows32x8 is axpyRows32x32 for eight elements of y.
//
//go:noescape
func axpyRows32x8(y, x *float32, ldx int, coef *float64, inc, n int)

// lastKept8 returns 1 + the index of the last element of keep[:8·groups]
// that is not 0 (NaN counts as not 0), or 0 if there is none (AVX2 builds;
// see keptRange32).
//
//go:noescape
func lastKept8(keep *float32, groups int) int

// divRound32 sets y[i] = float32(float64(y[i]) / s) for i < n, a multiple
// of 8 (AVX2 builds; see divRow32).
//
//go:noescape
func divRound32(y *float32, n int, s float64)

// softmaxCoefs32 sets c[i] = gs·(float64(w[i])·(float64(dw[i]) − rowSum))
// where keep[i] is not 0, +0 where it is, for i < n, a multiple of 4 (AVX2;
// see kernelBackwardRows32).
//
//go:noescape
func softmaxCoefs32(c *float64, w, dw, keep *float32, n int, rowSum, gs float64)

// softmaxScores32 sets row[i] = float32(gs·dots[i]) and raw[i] =
// float32(dots[i]) for i < n (a multiple of 4) and returns the largest
// gs·dots[i]; ok is false where some keep[i] is 0 or some gs·dots[i] is
// NaN (AVX2; see kernelRow32).
//
//go:noescape
func softmaxScores32(row, raw *float32, dots *float64, keep *float32, n int, gs float64) (mx float64, ok bool)
