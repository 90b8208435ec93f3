//go:build !amd64 || purego

package ops

const haveSoftmaxRows = false

func softmaxRows32(w, s *float32, rows, n int, gs float32) int { return 0 }
