//go:build !amd64 || purego

package graph

const haveAddAVX2 = false

// The kernels are never called where haveAddAVX2 is false.

func addF32(dst, a, b *float32, n int)            {}
func addF64(dst, a, b *float64, n int)            {}
func subF32(dst, a, b *float32, n int)            {}
func subF64(dst, a, b *float64, n int)            {}
func mulF32(dst, a, b *float32, n int)            {}
func mulF64(dst, a, b *float64, n int)            {}
func narrowF64(dst *float32, src *float64, n int) {}
