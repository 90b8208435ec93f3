//go:build !amd64 || purego

package ops

// haveRowKernel is false: rowKernel32 exists on amd64 only.
const haveRowKernel = false

func rowKernel32(c, a, b *float32, inca, ldb, k, n int, acc bool) {
	panic("ops: rowKernel32 without AVX2")
}

func rowKernel64(c, a, b *float64, inca, ldb, k, n int, acc bool) {
	panic("ops: rowKernel64 without AVX2")
}
