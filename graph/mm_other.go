//go:build !amd64 || purego

package graph

// haveRowKernel is false: rowKernel32 exists on amd64 only.
const haveRowKernel = false

func rowKernel32(c, a, b *float32, inca, ldb, k, n int, acc bool) {
	panic("graph: rowKernel32 without AVX2")
}

func rowKernel64(c, a, b *float64, inca, ldb, k, n int, acc bool) {
	panic("graph: rowKernel64 without AVX2")
}
