//go:build !amd64 || purego

package train

const haveAdamAVX2 = false

// adamAVX2M32 is never called where haveAdamAVX2 is false.
func adamAVX2M32(w, grad, m, v *float32, n int, c *adamVec) (float64, float64) { return 0, 0 }

// adamAVX2M64 is never called where haveAdamAVX2 is false.
func adamAVX2M64(w, grad *float32, m, v *float64, n int, c *adamVec) (float64, float64) { return 0, 0 }
