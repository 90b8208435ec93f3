package ops

import "math"

// exp2Sixteenths[i] is 2^(i/16).
var exp2Sixteenths = func() (t [16]float64) {
	for i := range t {
		t[i] = math.Exp2(float64(i) / 16)
	}
	return t
}()

// Exp32 is exp(x) for results that are stored as float32: x = (16q + i)
// ln2/16 + r with |r| ≤ ln2/32, exp(x) = 2^q · 2^(i/16) · p(r) with p the
// degree-4 Taylor polynomial of exp (error below 4e-11 on that range) and
// 2^(i/16) from a table. Its relative error is below 1e-9 (float32 rounding
// is 6e-8); it is about three times as fast as math.Exp. Outside
// [-700, 700] it defers to math.Exp.
func Exp32(x float64) float64 {
	if !(x > -700 && x < 700) {
		return math.Exp(x)
	}
	const (
		k     = 16 / math.Ln2
		c     = math.Ln2 / 16
		magic = 6755399441055744.0 // 1.5·2⁵²: adding it rounds to an integer
	)
	y := x*k + magic
	n := int64(math.Float64bits(y)) - int64(math.Float64bits(magic))
	r := x - (y-magic)*c
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24))))
	return p * exp2Sixteenths[n&15] * math.Float64frombits(uint64((n>>4)+1023)<<52)
}
