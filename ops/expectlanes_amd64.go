//go:build amd64 && !purego

package ops

// The kernels of expectlanes_amd64.s (see expectlanes.go).

// lanes4Product sets dst[c·4 + lane] = Σ_{l<k} ft[l·4 + lane]·b[l·ldb + c]
// for c < n, lane < 4: each element one chain of fused multiply-adds over l
// in order, from zero (k ≥ 1).
//
//go:noescape
func lanes4Product(dst, ft, b *float32, k, n, ldb int)

// lanes4Softmax replaces each lane's row of ls (n ≥ 1 values, ls[c·4 +
// lane]) by its softmax, as softmaxRowInPlace computes it, and writes it to
// the rows p + lane·ldp too; it returns false, p untouched, when an
// argument of the exponential is outside (−700, 700) or NaN.
//
//go:noescape
func lanes4Softmax(ls *float32, n int, p *float32, ldp int) bool

// lanes4Rows sets out[lane·ldo + j] = Σ_{c<k} ls[c·4 + lane]·w[j·ldw + c]
// for j < n, lane < 4: each element one chain of fused multiply-adds over c
// in order, from zero (k ≥ 1).
//
//go:noescape
func lanes4Rows(out *float32, ldo int, ls, w *float32, n, ldw, k int)

// lanes4SoftmaxGrad sets, for each lane's row, s = dotF(p, d) and d_c =
// p_c·(d_c − s), writing d (lanes) and the rows drow + lane·ldd.
//
//go:noescape
func lanes4SoftmaxGrad(d, p *float32, n int, drow *float32, ldd int)

// lanes8Weights computes the softmax kernel's weights of eight rows of raw
// scores in lanes (ls[i·8 + r], n ≥ 1 a row) as dotWeights does with g > 0,
// in place; it returns false where a row would leave the fast exponential
// (weightlanes_amd64.s).
//
//go:noescape
func lanes8Weights(ls *float32, n int, gs float32, gd float64, acc *[128]float64) bool

// lanes4ExpSum is lanes4Softmax's first half: each lane's exponentials
// (left in ls) and their sum (sums).
//
//go:noescape
func lanes4ExpSum(ls *float32, n int, sums *[4]float64) bool

// lanes4LogSoftmaxGrad is logSoftmaxGrad32 of four rows in lanes (o, y, d
// at x[c·4 + lane], s each row's sum of d); false where a y is outside the
// fused exponential's range.
//
//go:noescape
func lanes4LogSoftmaxGrad(o, y, d *float32, n int, s *[4]float64) bool
