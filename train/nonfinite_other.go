//go:build !amd64 || purego

package train

func finiteRun32(x *float32, n int) int { return 0 }

func maxAbsBits32(x *float32, n int) uint32 { return 0 }
