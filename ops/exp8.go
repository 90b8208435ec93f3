package ops

import "math"

// The float32 attention rows' exponential: a Cephes-style single-precision
// exp (range reduction by ln 2 in two parts, a degree-5 polynomial, the
// power of two built in the exponent bits), eight lanes at a time with
// AVX2/FMA where the CPU has them. Its relative error is below 2e-7
// (TestExp8Accuracy), against Exp32's 4e-11 in float64, and its sums are
// float64 in eight lanes: the weights agree with [Exp32]'s to the last bit
// or two, not bit for bit. The float32 softmax and exp rows of the attention
// head ([HeadOp]) and of the built-in dot-product kernels use it; float64
// rows keep math.Exp.

// exp8Lo and exp8Hi bound the arguments the fast exponential takes: below
// exp8Lo the weight is 0 (exp(−87.3) is float32's smallest normal), above
// exp8Hi (or NaN) the row goes on through Exp32.
const (
	exp8Lo = -87.33654
	exp8Hi = 88.37626
)

// The single-precision exponential's constants (Cephes' expf), shared by
// exp8/expSum8 and the float32 cross-entropy's xentExpf/xentExp32:
// ln 2 = expC1 − expC2, and the polynomial's coefficients expP0..expP5.
const (
	expC1 = 0.693359375
	expC2 = 2.12194440e-4
	expP0 = 1.9875691500e-4
	expP1 = 1.3981999507e-3
	expP2 = 8.3334519073e-3
	expP3 = 4.1665795894e-2
	expP4 = 1.6666665459e-1
	expP5 = 5.0000001201e-1
)

// exp8Tab holds the constants of expSum8 (exp8_amd64.s), eight lanes each:
// log2(e), −ln2 in two parts, the polynomial p0..p5, 1, exp8Lo, exp8Hi.
//
//lint:ignore U1000 read by exp8_amd64.s
var exp8Tab = [12][8]float32{
	splat8(math.Log2E), splat8(-expC1), splat8(expC2),
	splat8(expP0), splat8(expP1), splat8(expP2), splat8(expP3), splat8(expP4), splat8(expP5),
	splat8(1), splat8(exp8Lo), splat8(exp8Hi),
}

// exp8Bias is the float32 exponent bias in eight int32 lanes.
//
//lint:ignore U1000 read by exp8_amd64.s
var exp8Bias = [8]int32{127, 127, 127, 127, 127, 127, 127, 127}

func splat8(v float32) [8]float32 { return [8]float32{v, v, v, v, v, v, v, v} }

// exp8 is the fast exponential of one float32 argument in (exp8Lo, exp8Hi],
// the operations of expSum8 one lane at a time (separate multiplies and
// adds where the assembly fuses them, so the last bit may differ).
func exp8(x float32) float32 {
	if x < exp8Lo {
		return 0
	}
	n := float32(math.RoundToEven(float64(x * math.Log2E)))
	r := x + n*-expC1
	r = r + n*expC2
	y := float32(expP0)
	y = y*r + expP1
	y = y*r + expP2
	y = y*r + expP3
	y = y*r + expP4
	y = y*r + expP5
	y = y*(r*r) + r
	y = y + 1
	return y * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// expRowFast32 sets w[i] = exp(g·s[i] − mx) (float32) and returns the sum of
// the weights: the fast exponential (expSum8) eight at a time where it
// applies, Exp32 for the rest of the row from the first argument above
// exp8Hi or NaN.
func expRowFast32(w, s []float32, g, mx float32) float64 {
	w = w[:len(s)]
	i := 0
	var sum float64
	if haveExp8 {
		n := len(s) &^ 7
		if n > 0 {
			i, sum = expSum8(&w[0], &s[0], n, g, mx)
		}
		if i == n && n < len(s) {
			// The last one to seven arguments in a group of eight padded
			// with −Inf (weight 0, or +Inf through g < 0: Exp32 below).
			var sb, wb [8]float32
			t := copy(sb[:], s[n:])
			for p := t; p < 8; p++ {
				sb[p] = float32(math.Inf(-1))
			}
			if k, st := expSum8(&wb[0], &sb[0], 8, g, mx); k == 8 {
				copy(w[n:], wb[:t])
				sum += st
				i = len(s)
			}
		}
	}
	for ; i < len(s); i++ {
		x := g*s[i] - mx
		if !(x <= exp8Hi) {
			break
		}
		e := exp8(x)
		w[i] = e
		sum += float64(e)
	}
	for ; i < len(s); i++ {
		e := Exp32(float64(g*s[i] - mx))
		w[i] = float32(e)
		sum += e
	}
	return sum
}
