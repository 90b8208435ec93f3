//go:build amd64 && !purego

package ops

// maxScaled32 returns max_i float32(scale·s[i]) for n ≥ 1 (AVX2; see
// maxScaledF32).
//
//go:noescape
func maxScaled32(s *float32, n int, scale float32) float32

// scaleRow32 sets w[i] = float32(float64(w[i])·inv) for i < n (AVX2).
//
//go:noescape
func scaleRow32(w *float32, n int, inv float64)

// colSums32 adds the rows of the (rows, ·) float32 matrix w (ld elements
// apart) to sum[:d], d a multiple of 4, in float64 and in row order
// (AVX2; see colMean).
//
//go:noescape
func colSums32(sum *float64, w *float32, rows, d, ld int)
