//go:build !amd64 || purego

package ops

// haveAxpyAVX2 is false: axpyRound32 is never called.
const haveAxpyAVX2 = false

func axpyRound32(y, x *float32, n int, a float64) {}

func keyDots16(q, k *float32, d int, dots *float64) {}
