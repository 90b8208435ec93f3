package ops

import "math"

// exp32Core is [Exp32] for x in (-700, 700), without the range check, so
// that the compiler inlines it into the fused row loops below (expRowSum32,
// kernelRow): the same operations in the same order as Exp32, so the same
// bits.
func exp32Core(x float64) float64 {
	const (
		k         = 16 / math.Ln2
		c         = math.Ln2 / 16
		magic     = 6755399441055744.0 // 1.5·2⁵²: adding it rounds to an integer
		magicBits = 0x4338000000000000 // math.Float64bits(magic)
	)
	y := x*k + magic
	n := int64(math.Float64bits(y)) - magicBits
	r := x - (y-magic)*c
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24))))
	return p * exp2Sixteenths[n&15] * math.Float64frombits(uint64((n>>4)+1023)<<52)
}

// expRowSum sets row[i] = exp(g·raw[i] − shift) and returns Σ_i of the
// unrounded exponentials, summed in index order: the fused exponential of
// one row of kernel weights (exp and softmax kernels). float32 rows use
// Exp32 (inlined, four independent exponentials per iteration), float64
// rows math.Exp; either way the result is bit for bit what a loop calling
// Exp32 or math.Exp per element gives.
func expRowSum[F float32 | float64](row, raw []F, g, shift float64) float64 {
	switch r := any(raw).(type) {
	case []float32:
		return expRowSum32(any(row).([]float32), r, g, shift)
	case []float64:
		w := any(row).([]float64)
		w = w[:len(r)]
		var sum float64
		for i, v := range r {
			e := math.Exp(g*v - shift)
			w[i] = e
			sum += e
		}
		return sum
	}
	return 0
}

func expRowSum32(row, raw []float32, g, shift float64) float64 {
	row = row[:len(raw)]
	var sum float64
	i := 0
	if haveExpAVX2 {
		// Four exponentials per AVX2 instruction (expChunk32), their
		// unrounded values added to sum in index order as they come; it
		// stops at a value outside Exp32's fast range: the rest below.
		if n := len(raw) &^ 3; n > 0 {
			i = expChunk32(&row[0], &raw[0], n, g, shift, &sum)
		}
	}
	for ; i+4 <= len(raw); i += 4 {
		x0 := g*float64(raw[i]) - shift
		x1 := g*float64(raw[i+1]) - shift
		x2 := g*float64(raw[i+2]) - shift
		x3 := g*float64(raw[i+3]) - shift
		if !(x0 > -700 && x0 < 700 && x1 > -700 && x1 < 700 && x2 > -700 && x2 < 700 && x3 > -700 && x3 < 700) {
			break // the rest one at a time, through Exp32's range check
		}
		e0, e1, e2, e3 := exp32Core(x0), exp32Core(x1), exp32Core(x2), exp32Core(x3)
		row[i], row[i+1], row[i+2], row[i+3] = float32(e0), float32(e1), float32(e2), float32(e3)
		sum += e0
		sum += e1
		sum += e2
		sum += e3
	}
	for ; i < len(raw); i++ {
		e := Exp32(g*float64(raw[i]) - shift)
		row[i] = float32(e)
		sum += e
	}
	return sum
}

// expRowSumF32 is expRowSum32 for float32 scores and shift (softmax, expect):
// x_i = g·s_i − mx rounded to float32 first.
func expRowSumF32(w, s []float32, g, mx float32) float64 {
	w = w[:len(s)]
	var sum float64
	i := 0
	if haveExpAVX2 {
		// Four at a time in AVX2 (expChunkF32: the float32 arguments,
		// then the exponentials), their values added to sum in index
		// order; it stops at an argument outside Exp32's fast range.
		if n := len(s) &^ 3; n > 0 {
			i = expChunkF32(&w[0], &s[0], n, g, mx, &sum)
		}
	}
	return expRowTailF32(w, s, g, mx, i, sum)
}

// expRowTailF32 is expRowSumF32 from index i on, sum holding the sum of
// the first i exponentials.
func expRowTailF32(w, s []float32, g, mx float32, i int, sum float64) float64 {
	w = w[:len(s)]
	for ; i+4 <= len(s); i += 4 {
		x0 := float64(g*s[i] - mx)
		x1 := float64(g*s[i+1] - mx)
		x2 := float64(g*s[i+2] - mx)
		x3 := float64(g*s[i+3] - mx)
		if !(x0 > -700 && x0 < 700 && x1 > -700 && x1 < 700 && x2 > -700 && x2 < 700 && x3 > -700 && x3 < 700) {
			break
		}
		e0, e1, e2, e3 := exp32Core(x0), exp32Core(x1), exp32Core(x2), exp32Core(x3)
		w[i], w[i+1], w[i+2], w[i+3] = float32(e0), float32(e1), float32(e2), float32(e3)
		sum += e0
		sum += e1
		sum += e2
		sum += e3
	}
	for ; i < len(s); i++ {
		e := Exp32(float64(g*s[i] - mx))
		w[i] = float32(e)
		sum += e
	}
	return sum
}
