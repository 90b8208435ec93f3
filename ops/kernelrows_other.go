//go:build !amd64 || purego

package ops

// haveAxpyAVX2 is false: axpyRound32 is never called.
const haveAxpyAVX2 = false

func axpyRound32(y, x *float32, n int, a float64) {}

func keyDots16(q, k *float32, d int, dots *float64) {}

func axpyRows32x32(y, x *float32, ldx int, coef *float64, inc, n int) {}

func axpyRows32x8(y, x *float32, ldx int, coef *float64, inc, n int) {}

func lastKept8(keep *float32, groups int) int { return 0 }

func divRound32(y *float32, n int, s float64) {}

func softmaxCoefs32(c *float64, w, dw, keep *float32, n int, rowSum, gs float64) {}

func softmaxScores32(row, raw *float32, dots *float64, keep *float32, n int, gs float64) (float64, bool) {
	return 0, false
}
