package numeric

import "math"

// Max returns the largest element of x, −Inf for an empty x, and NaN if
// any element is NaN (math.Max, folded from −Inf left to right).
func Max(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, v)
	}
	return m
}

// ExpShifted writes dst[i] = exp(x[i] − Max(x)) and returns Max(x) and the
// sum of dst, added left to right. dst must have len(x) elements and may be
// x itself. ExpShifted panics if len(dst) < len(x).
func ExpShifted(dst, x []float64) (m, sum float64) {
	m = Max(x)
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = math.Exp(v - m)
		sum += dst[i]
	}
	return m, sum
}

// SoftmaxInto writes softmax(x)_i = exp(x_i − m) / Σ_j exp(x_j − m), with
// m = Max(x), into dst, which must have len(x) elements and may be x
// itself. SoftmaxInto panics if len(dst) < len(x).
func SoftmaxInto(dst, x []float64) {
	_, sum := ExpShifted(dst, x)
	dst = dst[:len(x)]
	for i := range dst {
		dst[i] /= sum
	}
}

// Softmax returns softmax(x) in a new slice (see SoftmaxInto).
func Softmax(x []float64) []float64 {
	p := make([]float64, len(x))
	SoftmaxInto(p, x)
	return p
}

// LogSumExp returns log Σ_i exp(x_i), computed as m + log Σ_i exp(x_i − m)
// with m = Max(x) so that large x_i do not overflow. It returns m itself
// when m is ±Inf (−Inf for an empty x or one that is entirely −Inf), and
// NaN if any element is NaN.
func LogSumExp(x []float64) float64 {
	m := Max(x)
	if math.IsInf(m, 0) {
		return m
	}
	s := 0.0
	for _, v := range x {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

// LogSoftmaxInto writes log softmax(x)_i = x_i − LogSumExp(x) into dst,
// which must have len(x) elements and may be x itself. Elements of x at
// −Inf stay −Inf when Max(x) is finite; when it is ±Inf, the elements at
// the maximum become NaN. LogSoftmaxInto panics if len(dst) < len(x).
func LogSoftmaxInto(dst, x []float64) {
	lse := LogSumExp(x)
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = v - lse
	}
}

// LogSoftmax returns log softmax(x) in a new slice (see LogSoftmaxInto).
func LogSoftmax(x []float64) []float64 {
	l := make([]float64, len(x))
	LogSoftmaxInto(l, x)
	return l
}
