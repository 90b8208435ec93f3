//go:build !amd64 || purego

package ops

// The kernels are never called where haveNarrowAVX2 is false.

func lanes4Product(dst, ft, b *float32, k, n, ldb int)                {}
func lanes4Softmax(ls *float32, n int, p *float32, ldp int) bool      { return false }
func lanes4Rows(out *float32, ldo int, ls, w *float32, n, ldw, k int) {}
func lanes4SoftmaxGrad(d, p *float32, n int, drow *float32, ldd int)  {}

func lanes8Weights(ls *float32, n int, gs float32, gd float64, acc *[128]float64) bool { return false }

func lanes4ExpSum(ls *float32, n int, sums *[4]float64) bool { return false }

func lanes4LogSoftmaxGrad(o, y, d *float32, n int, s *[4]float64) bool { return false }
