//go:build !amd64 || purego

package ops

// The kernels are never called where haveExpAVX2 is false.

func maxScaled32(s *float32, n int, scale float32) float32 { return 0 }
func scaleRow32(w *float32, n int, inv float64)            {}
func colSums32(sum *float64, w *float32, rows, d, ld int)  {}
