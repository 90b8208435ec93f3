package layers

import "math"

// expFast is exp(x) for results that are stored as float32: a degree-7
// polynomial on x − n ln 2, |x − n ln 2| ≤ ln 2 / 2, scaled by 2ⁿ, with a
// relative error below 1e-8 (float32 rounding is 6e-8), about twice as fast
// as math.Exp. Outside [-700, 700] it defers to math.Exp.
func expFast(x float64) float64 {
	if !(x > -700 && x < 700) {
		return math.Exp(x)
	}
	const (
		log2e = 1.4426950408889634
		ln2hi = 6.93147180369123816490e-01
		ln2lo = 1.90821492927058770002e-10
		magic = 6755399441055744.0 // 1.5·2⁵², rounds to the nearest integer
	)
	y := x*log2e + magic
	n := int64(math.Float64bits(y)) - int64(math.Float64bits(magic))
	fn := y - magic
	r := (x - fn*ln2hi) - fn*ln2lo
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040)))))))
	return p * math.Float64frombits(uint64(n+1023)<<52)
}

// is32 reports whether F is float32.
func is32[F float32 | float64]() bool {
	var zero F
	_, ok := any(zero).(float32)
	return ok
}
