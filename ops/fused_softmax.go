package ops

// logSoftmaxGrad32 sets o[i] = float32(float64(d[i]) − Exp32(float64(y[i]))·s),
// the float32 log-softmax gradient row, with the exponentials four at a time
// (expChunk32, the same bits as Exp32) where AVX2 allows.
func logSoftmaxGrad32(o, y, d []float32, s float64) {
	o, d = o[:len(y)], d[:len(y)]
	i := 0
	if haveExpAVX2 {
		var e [64]float64
		var scratch [64]float32
		for i+4 <= len(y) {
			n := min(len(e), (len(y)-i)&^3)
			k := expChunk32E(&scratch[0], &y[i], n, 1, 0, &e[0])
			for j, v := range e[:k] {
				o[i+j] = float32(float64(d[i+j]) - v*s)
			}
			i += k
			if k < n {
				break // a value outside the fused range: the rest one at a time
			}
		}
	}
	for ; i < len(y); i++ {
		o[i] = float32(float64(d[i]) - Exp32(float64(y[i]))*s)
	}
}
