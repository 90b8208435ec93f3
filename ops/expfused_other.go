//go:build !amd64 || purego

package ops

const haveExpAVX2 = false

// expChunk32 is never called where haveExpAVX2 is false.
func expChunk32(row, raw *float32, n int, scale, shift float64, sum *float64) int { return 0 }

// expChunkF32 is never called where haveExpAVX2 is false.
func expChunkF32(row, s *float32, n int, gs, mx float32, sum *float64) int { return 0 }

// expChunk32E is never called where haveExpAVX2 is false.
func expChunk32E(row, raw *float32, n int, scale, shift float64, e *float64) int { return 0 }

// expChunk32S2 is never called where haveExpAVX2 is false.
func expChunk32S2(row, raw *float32, n int, scale, shift float64, sums *[2]float64) int { return 0 }

const haveExpAVX512 = false
