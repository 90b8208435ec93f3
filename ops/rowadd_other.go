//go:build !amd64 || purego

package ops

const haveAddAVX2 = false

// The kernels are never called where haveAddAVX2 is false.

func vaddF32(dst, a, b *float32, n int) {}
func vaddF64(dst, a, b *float64, n int) {}
