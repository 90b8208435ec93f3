package ops

// maxScaledF32 returns max_i g·s[i] (each product rounded to float32) of a
// non-empty row, as the loop
//
//	mx := g * s[0]
//	for _, v := range s[1:] { if g*v > mx { mx = g * v } }
//
// computes it when no product is NaN (with a NaN the value may differ; the
// callers' weights of such a row are NaN either way). Eight at a time with
// AVX2.
func maxScaledF32(s []float32, g float32) float32 {
	if haveExpAVX2 && len(s) > 0 {
		return maxScaled32(&s[0], len(s), g)
	}
	mx := g * s[0]
	for _, v := range s[1:] {
		if g*v > mx {
			mx = g * v
		}
	}
	return mx
}

// scaleRowF sets w[i] = F(float64(w[i])·inv): the normalisation of a row of
// weights, four at a time with AVX2 for float32 (the same rounding, so the
// same bits).
func scaleRowF[F float32 | float64](w []F, inv float64) {
	if w32, ok := any(w).([]float32); ok && haveExpAVX2 && len(w32) > 0 {
		scaleRow32(&w32[0], len(w32), inv)
		return
	}
	for i := range w {
		w[i] = F(float64(w[i]) * inv)
	}
}
