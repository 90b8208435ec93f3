package ops

import (
	"fmt"
	"math"
)

// The opt-in float32 softmax cross-entropy (SparseCrossEntropyOptions.Float32):
// the softmax of float32 logits computed in float32 arithmetic, as PyTorch's
// CPU cross_entropy does for float32 logits, instead of the default's
// float64 exponentials (Exp32).
//
// Per row: m = max_j x_j (float32); a_j = x_j − m rounded to float32;
// e_j = xentExpf(a_j), a Cephes-style single-precision exponential (a_j
// reduced by ln 2 in two parts, a degree-5 polynomial, the power of two
// built in the exponent bits; every multiply-add fused); the sum
// s = Σ_j e_j in float64, e_j added to lane j mod 8 of eight float64 sums
// that are folded in a fixed order at the row's end. The loss term is
// m + log s − x_label in float64. Arguments below xentLo (exp < 2⁻¹²⁶, the
// smallest normal float32) give 0. The AVX2/FMA kernels (xent32_amd64.s)
// and the portable loops here perform the same operations in the same
// order, so they give the same bits (TestXent32AsmBits).
//
// The forward op then writes the gradient of the loss for dL = 1 into its
// buffer while the row is still in cache: g_j = e_j·k − [j = label]·(1/n),
// k = float32((1/s)/n) (as the default path's gradient, with dL = 1); the
// backward op returns that buffer when dL = 1 (a training step: the loss
// is the graph's cost) and scales it by float32(dL) otherwise.

// xentLo and xentHi bound the arguments of the fast exponential: below
// xentLo the result is 0, above xentHi (or NaN) the kernel leaves the group
// to the portable loop (which gives +Inf or NaN).
const (
	xentLo = float32(exp8Lo)
	xentHi = float32(exp8Hi)

	xentLog2e = float32(math.Log2E)
	xentC1    = float32(expC1) // ln 2 = C1 − C2
	xentC2    = float32(expC2)
	xentP0    = float32(expP0)
	xentP1    = float32(expP1)
	xentP2    = float32(expP2)
	xentP3    = float32(expP3)
	xentP4    = float32(expP4)
	xentP5    = float32(expP5)
)

// xentExp32 (xent32_amd64.s) reads its constants from exp8Tab and exp8Bias,
// the same values as the constants above.

// fma32 is float32's fused multiply-add, a·b + c rounded once to float32
// (VFMADD…PS): the product is exact in float64 and the sum's float64
// rounding error (TwoSum) breaks a tie of the second rounding, so the
// result is correctly rounded for normal float32 results.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b) // exact: 24 + 24 bits
	cc := float64(c)
	s := p + cc
	bb := s - p
	e := (p - (s - bb)) + (cc - bb) // p + cc = s + e exactly
	if e != 0 && math.Float64bits(s)&(1<<29-1) == 1<<28 {
		// s lies halfway between two float32s while the exact sum does not:
		// move it one float64 step towards the exact sum.
		s = math.Nextafter(s, math.Copysign(math.Inf(1), e))
	}
	return float32(s)
}

// xentExpf is the float32 exponential of the float32 softmax: a few ulp
// of exp(a) for a in [xentLo, 0] (TestXentExpfULP), 0 below xentLo, +Inf
// above xentHi, NaN for NaN.
func xentExpf(a float32) float32 {
	if !(a <= xentHi) {
		if a != a {
			return a
		}
		return float32(math.Inf(1))
	}
	if !(a >= xentLo) {
		return 0
	}
	k := float32(math.RoundToEven(float64(a * xentLog2e)))
	r := fma32(k, -xentC1, a)
	r = fma32(k, xentC2, r)
	y := fma32(xentP0, r, xentP1)
	y = fma32(y, r, xentP2)
	y = fma32(y, r, xentP3)
	y = fma32(y, r, xentP4)
	y = fma32(y, r, xentP5)
	y = fma32(y, float32(r*r), r)
	y = float32(y + 1)
	return y * math.Float32frombits(uint32(int32(k)+127)<<23)
}

// xentRowExp32 sets e[j] = xentExpf(row[j] − m), m = max(row), e may be
// row itself, and returns m and Σ_j e[j] (float64, in eight lanes). next,
// if not nil, is the row the caller reads next (at least len(row) long):
// the AVX2 loop prefetches it into the L2 cache.
func xentRowExp32(row, e, next []float32) (float32, float64) {
	m := maxScaledF32(row, 1)
	e = e[:len(row)]
	var sums [8]float64
	j := 0
	if haveXent32 && len(row) >= 8 {
		p := &row[0]
		if len(next) >= len(row) {
			p = &next[0]
		}
		j = xentExp32(&e[0], &row[0], len(row)&^7, m, &sums, p)
	}
	return m, xentExpTail(row, e, j, m, &sums)
}

// xentExpTail is xentExp32's loop from element j on, one at a time, and
// the lanes' sum folded in xentRowExp32's order.
func xentExpTail(row, e []float32, j int, m float32, sums *[8]float64) float64 {
	for ; j < len(row); j++ {
		v := xentExpf(float32(row[j] - m))
		e[j] = v
		sums[j&7] += float64(v)
	}
	return ((sums[0] + sums[4]) + (sums[2] + sums[6])) + ((sums[1] + sums[5]) + (sums[3] + sums[7]))
}

// xentScaleF32 sets o[i] = o[i]·k in float32.
func xentScaleF32(o []float32, k float32) {
	if haveXent32 && len(o) > 0 {
		xentScale32(&o[0], len(o), k)
		return
	}
	for i := range o {
		o[i] *= k
	}
}

// xentGradRow32 turns a row of exponentials e (sum 1/inv) into the
// gradient row (e·inv − onehot(label))·scale, as xentGrad does:
// e[j]·float32(inv·scale), then float32(scale) off the label's entry.
func xentGradRow32(e []float32, label int, inv, scale float64) {
	if label < 0 {
		clear(e)
		return
	}
	xentScaleF32(e, float32(inv*scale))
	e[label] -= float32(scale)
}

// xentLoss32 is xentLoss with the Float32 option: each row's exponentials,
// its loss term and then its gradient for dL = 1 (see above), written into
// the op's buffer (the logits themselves when overwritesLogits).
func xentLoss32(op *SparseCrossEntropyOp, x []float32, labels []int, scored int) float64 {
	prob := x
	inPlace := op.overwritesLogits()
	if !inPlace {
		var ok bool
		if prob, ok = op.prob.([]float32); !ok || len(prob) != len(x) {
			prob = make([]float32, len(x))
			op.prob = prob
		}
	}
	if len(op.inv) != op.n {
		op.inv = make([]float64, op.n)
	}
	nll := make([]float64, op.n)
	xentRows32(op, x, prob, labels, scored, nll)
	op.ready, op.src, op.dirty, op.grad = true, x, nil, true
	if inPlace {
		op.dirty = x
	}
	return scoredMean(nll, labels, scored)
}

// xentRows32 computes the gradient rows for dL = 1 of x into prob (which
// may be x), 1/Σ of each row into op.inv and, when nll is not nil, each
// row's loss term into nll.
func xentRows32(op *SparseCrossEntropyOp, x, prob []float32, labels []int, scored int, nll []float64) {
	c := op.c
	scale := 0.0
	if scored > 0 {
		scale = 1 / float64(scored)
	}
	parallelRows(op.n, c, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			l := labels[i]
			var xl float32 // read before the row is overwritten
			if l >= 0 {
				xl = x[i*c+l]
			}
			var next []float32
			if i+1 < hi {
				next = x[(i+1)*c : (i+2)*c]
			}
			m, s := xentRowExp32(x[i*c:(i+1)*c], prob[i*c:(i+1)*c], next)
			op.inv[i] = 1 / s
			if nll != nil {
				nll[i] = float64(m) + math.Log(s) - float64(xl)
			}
			xentGradRow32(prob[i*c:(i+1)*c], l, op.inv[i], scale)
		}
	})
}

// xentGrad32 is xentGrad with the Float32 option: the forward op's buffer
// when it holds this run's gradient for dL = 1 (computed here otherwise),
// scaled by float32(g) unless that is 1.
func xentGrad32(op *SparseCrossEntropyOp, x []float32, labels []int, scored int, g float64) ([]float32, error) {
	f := op.fwd
	var prob []float32
	switch {
	case f.ready && f.grad && sameSlice(f.dirty, x) && sameSlice(f.src, x):
		prob = x // the forward op wrote this run's gradient over the logits
	case sameSlice(f.dirty, x):
		return nil, fmt.Errorf("ops: sparse cross-entropy: the logits were overwritten by the forward op's gradient (run the forward op again)")
	default:
		var ok bool
		prob, ok = f.prob.([]float32)
		if f.dirty != nil || !ok || !f.ready || !f.grad || len(prob) != len(x) || !sameSlice(f.src, x) {
			if !ok || len(prob) != len(x) {
				prob = make([]float32, len(x))
				f.prob = prob
			}
			if len(f.inv) != op.n {
				f.inv = make([]float64, op.n)
			}
			xentRows32(f, x, prob, labels, scored, nil)
		}
	}
	f.ready, f.src = false, nil // the buffer is the gradient handed out
	if k := float32(g); k != 1 {
		parallelRows(op.n, op.c, func(lo, hi int) { xentScaleF32(prob[lo*op.c:hi*op.c], k) })
	}
	return prob, nil
}
