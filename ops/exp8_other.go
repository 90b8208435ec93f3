//go:build !amd64 || purego

package ops

const haveExp8 = false

func expSum8(w, s *float32, n int, g, mx float32) (int, float64) { return 0, 0 }
