//go:build !amd64 || purego

package ops

const haveNarrowAVX2 = false

// The kernels are never called where haveNarrowAVX2 is false.

func narrowWide32(c, a, b *float32, ldc, rsa, inca, ldb, k, n int, mode uint8) {}
func narrowTall32(c, a, b *float32, ldc, rsa, inca, ldb, k, n int, mode uint8) {}
func narrowWide64(c, a, b *float64, ldc, rsa, inca, ldb, k, n int, acc bool)   {}
func narrowTall64(c, a, b *float64, ldc, rsa, inca, ldb, k, n int, acc bool)   {}
func narrowWideSeqs32(c, a, b *float32, ldc, rsa, inca, ldb, k, n int, mode uint8, nseq, sc, sa, sb int) {
}
func dotCols32(c, a, b *float32, rsa, k, m int) {}
func outerRows32(c, w, d *float32, m, n int)    {}
