//go:build !amd64 || purego

package ops

// haveXent32 is false: the portable loops of xent32.go run.
const haveXent32 = false

// The kernels are never called where haveXent32 is false.

func xentExp32(e, x *float32, n int, m float32, sums *[8]float64, next *float32) int { return 0 }
func xentScale32(o *float32, n int, k float32)                                       {}
