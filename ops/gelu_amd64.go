//go:build amd64 && !purego

package ops

import (
	"math"

	"golang.org/x/sys/cpu"
)

// haveGELUAVX2 reports whether geluF32 and geluGradF32 may run and give
// math.Exp's bits: they need AVX2 and FMA, and reproduce the path math.Exp
// takes when the CPU has AVX and FMA.
var haveGELUAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// geluConsts64 are the float64 constants of gelu_amd64.s, four copies
// each, in its order: math.Exp's log₂e, ln2 (upper and lower halves),
// 1/16, its Taylor coefficients 1/8!, 1/7!, 1/6!, 1/5!, 1/4!, 1/3!, 1/2, 1,
// then 2, the clamp −700 and 700, the exponent bias 1023 (an int64) and
// the sign bit.
//
//lint:ignore U1000 read by gelu_amd64.s
var geluConsts64 = func() (t [17][4]float64) {
	vals := [17]float64{
		1.4426950408889634073599246810018920,
		0.69314718055966295651160180568695068359375,
		0.28235290563031577122588448175013436025525412068e-12,
		0.0625,
		2.4801587301587301587e-5,
		1.9841269841269841270e-4,
		1.3888888888888888889e-3,
		8.3333333333333333333e-3,
		4.1666666666666666667e-2,
		1.6666666666666666667e-1,
		0.5,
		1,
		2,
		-700,
		700,
		math.Float64frombits(1023),
		math.Float64frombits(1 << 63),
	}
	for i, v := range vals {
		t[i] = [4]float64{v, v, v, v}
	}
	return t
}()

// geluConsts32 are the float32 constants of gelu_amd64.s, four copies
// each: c, k, 3, 1, −88, 15 and the sign bit.
//
//lint:ignore U1000 read by gelu_amd64.s
var geluConsts32 = func() (t [7][4]float32) {
	vals := [7]float32{GELUC, GELUK, 3, 1, -88, 15, math.Float32frombits(1 << 31)}
	for i, v := range vals {
		t[i] = [4]float32{v, v, v, v}
	}
	return t
}()

// geluF32 sets out[i] = gelu(x[i]) for i < n, four at a time, as
// geluRange does (the same bits), and returns how many it computed: a
// multiple of 4, stopping before the first group of four with a NaN
// argument.
//
//go:noescape
func geluF32(x, out *float32, n int) int

// geluGradF32 is geluGradRange's loop for float32, four at a time, the
// same bits, stopping like geluF32.
//
//go:noescape
func geluGradF32(x, dy, out *float32, n int) int
