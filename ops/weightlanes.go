package ops

// softmaxWeightRows sets the rows of w (rows of n) to the softmax kernel's
// weights of the raw scores in raw with scale g, as dotWeights computes
// each row. In float32 with g > 0 it computes eight rows at a time, one
// row per lane (lanes8Weights): every weight the operations of
// expRowFast32 and scaleRowF, the rows' sums the same trees of float64
// additions, so the same bits (TestSoftmaxWeightRowsBits); a group of rows
// that would leave the fast exponential, and the last rows mod 8, go
// through dotWeights.
func softmaxWeightRows[F float32 | float64](g float64, raw, w []F, rows, n int) {
	r := 0
	if raw32, ok := any(raw).([]float32); ok && g > 0 && n >= 1 && rows >= 8 && haveExp8 && haveExpAVX2 {
		w32 := any(w).([]float32)
		ls := make([]float32, 8*n)
		var acc [128]float64
		for ; r+8 <= rows; r += 8 {
			rr, wr := raw32[r*n:(r+8)*n], w32[r*n:(r+8)*n]
			for k := 0; k < 8; k++ {
				for i, v := range rr[k*n : (k+1)*n] {
					ls[i*8+k] = v
				}
			}
			if lanes8Weights(&ls[0], n, float32(g), g, &acc) {
				for k := 0; k < 8; k++ {
					row := wr[k*n : (k+1)*n]
					for i := range row {
						row[i] = ls[i*8+k]
					}
				}
				continue
			}
			for k := 0; k < 8; k++ {
				dotWeights(KindSoftmax, g, rr[k*n:(k+1)*n], wr[k*n:(k+1)*n])
			}
		}
	}
	for ; r < rows; r++ {
		dotWeights(KindSoftmax, g, raw[r*n:(r+1)*n], w[r*n:(r+1)*n])
	}
}
