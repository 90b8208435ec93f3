//go:build amd64 && !purego

package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// kernelMask returns a keep mask (b, tq, tk) of the named pattern.
func kernelMask(rng *rand.Rand, pattern string, b, tq, tk int) []float32 {
	if pattern == "none" {
		return nil
	}
	keep := make([]float32, b*tq*tk)
	for s := 0; s < b; s++ {
		for j := 0; j < tq; j++ {
			row := keep[(s*tq+j)*tk : (s*tq+j+1)*tk]
			for i := range row {
				var kept bool
				switch pattern {
				case "causal":
					kept = i <= j
				case "strict":
					kept = i < j
				case "random":
					kept = rng.IntN(3) > 0
				case "holes": // causal with gaps, some rows empty, -0 and NaN marks
					kept = i <= j && (i+j)%5 != 2 && j%7 != 3
				}
				if kept {
					row[i] = 1
					if pattern == "holes" && i%11 == 4 {
						row[i] = float32(math.NaN()) // not 0: kept
					}
				} else if pattern == "holes" && i%3 == 0 {
					row[i] = float32(math.Copysign(0, -1))
				}
			}
		}
	}
	return keep
}

// TestKernelRows32Bits: the float32 dot-product kernels' forward and
// backward passes on the row kernels (kernelForwardRows32,
// kernelBackwardRows32) give the bits of kernelForwardSeqs' and
// kernelBackwardSeqs' loops (run with haveAxpyAVX2 off), on random shapes
// (lengths that are not multiples of 8 or 16, Tq ≠ Tk, widths of 1 to 72),
// masks (none, causal, strictly causal, random, with gaps, empty rows,
// negative zeros and NaN marks), scores beyond the fast exponential's range,
// NaN and zero coefficients, with and without raw scores and dg.
func TestKernelRows32Bits(t *testing.T) {
	if !haveAxpyAVX2 || !haveExpAVX2 {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	same := func(x, y []float32) int {
		for i := range x {
			if !sameBits32(x[i], y[i]) {
				return i
			}
		}
		return -1
	}
	for trial := 0; trial < 120; trial++ {
		kind := []KernelKind{KindSoftmax, KindExp, KindLinear}[trial%3]
		pattern := []string{"none", "causal", "strict", "random", "holes"}[trial/3%5]
		dims := []int{1, 3, 5, 8, 16, 24, 40, 64, 72}
		a := kernelArgs{b: 1 + rng.IntN(3), tq: 1 + rng.IntN(40), d: dims[rng.IntN(len(dims))], g: []float64{0.125, 1, 0.7, -0.3, 0}[rng.IntN(5)]}
		a.tk = a.tq
		if rng.IntN(3) == 0 {
			a.tk = 1 + rng.IntN(40)
		}
		if trial%17 == 5 {
			a.tq, a.tk = 257, 256 // the GD model's heads
		}
		name := fmt.Sprintf("%v/%s/%+v", kind, pattern, a)
		scale := 1.0
		if trial%4 == 3 {
			scale = 30 // scores far beyond exp's fast range for some rows
		}
		q, k := make([]float32, a.b*a.tq*a.d), make([]float32, a.b*a.tk*a.d)
		for i := range q {
			q[i] = float32(scale * rng.NormFloat64())
		}
		for i := range k {
			k[i] = float32(scale * rng.NormFloat64())
		}
		if trial%10 == 9 {
			q[rng.IntN(len(q))] = float32(math.NaN())
			k[rng.IntN(len(k))] = float32(math.Inf(1))
		}
		keep := kernelMask(rng, pattern, a.b, a.tq, a.tk)
		m := a.b * a.tq * a.tk
		forward := func(avx, withRaw bool) ([]float32, []float32) {
			defer func(v bool) { haveAxpyAVX2 = v }(haveAxpyAVX2)
			haveAxpyAVX2 = avx
			w := make([]float32, m)
			for i := range w {
				w[i] = 5 // overwritten everywhere
			}
			var raw []float32
			if withRaw {
				raw = make([]float32, m)
				for i := range raw {
					raw[i] = -3
				}
			}
			kernelForward(kind, a, q, k, keep, w, raw)
			return w, raw
		}
		for _, withRaw := range []bool{true, false} {
			if keep == nil && withRaw {
				continue // the unmasked Gemm path, not the rows
			}
			ww, wr := forward(false, withRaw)
			gw, gr := forward(true, withRaw)
			if i := same(gw, ww); i >= 0 {
				t.Fatalf("%s raw %v: weight %d = %v, want %v", name, withRaw, i, gw[i], ww[i])
			}
			if i := same(gr, wr); i >= 0 {
				t.Fatalf("%s: raw score %d = %v, want %v", name, i, gr[i], wr[i])
			}
		}
		if a.d%8 != 0 {
			continue
		}
		w, raw := forward(false, true)
		if keep == nil {
			raw = make([]float32, m)
			kernelForward(kind, a, q, k, keep, w, raw)
		}
		dw := make([]float32, m)
		for i := range dw {
			dw[i] = float32(rng.NormFloat64())
			if rng.IntN(9) == 0 {
				dw[i] = 0
			}
		}
		if trial%10 == 9 {
			dw[rng.IntN(m)] = float32(math.NaN())
		}
		backward := func(avx, needDG, withDQ, withDK bool) ([]float32, []float32, float64) {
			defer func(v bool) { haveAxpyAVX2 = v }(haveAxpyAVX2)
			haveAxpyAVX2 = avx
			var dq, dk []float32
			if withDQ {
				dq = make([]float32, len(q))
				for i := range dq {
					dq[i] = float32(i%5) - 2 // accumulated into
				}
			}
			if withDK {
				dk = make([]float32, len(k))
			}
			dg := kernelBackward(kind, a, q, k, keep, w, dw, dq, dk, raw, needDG)
			return dq, dk, dg
		}
		for _, c := range [][3]bool{{true, true, true}, {false, true, true}, {true, true, false}, {true, false, true}} {
			wq, wk, wg := backward(false, c[0], c[1], c[2])
			gq, gk, gg := backward(true, c[0], c[1], c[2])
			if math.Float64bits(gg) != math.Float64bits(wg) && !(gg != gg && wg != wg) {
				t.Fatalf("%s %v: dg %v, want %v", name, c, gg, wg)
			}
			if i := same(gq, wq); i >= 0 {
				t.Fatalf("%s %v: dq[%d] = %v, want %v", name, c, i, gq[i], wq[i])
			}
			if i := same(gk, wk); i >= 0 {
				t.Fatalf("%s %v: dk[%d] = %v, want %v", name, c, i, gk[i], wk[i])
			}
		}
	}
}

// TestKeptRange32 checks keptRange32 against a scan, every length to 40.
func TestKeptRange32(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for n := 0; n <= 40; n++ {
		for trial := 0; trial < 50; trial++ {
			keep := make([]float32, n)
			for i := range keep {
				switch rng.IntN(6) {
				case 0:
					keep[i] = 1
				case 1:
					keep[i] = float32(math.NaN())
				case 2:
					keep[i] = float32(math.Copysign(0, -1))
				}
			}
			lo, hi := 0, 0
			first := true
			for i, v := range keep {
				if v != 0 {
					if first {
						lo, first = i, false
					}
					hi = i + 1
				}
			}
			if gl, gh := keptRange32(keep); gl != lo || gh != hi {
				t.Fatalf("%v: range %d..%d, want %d..%d", keep, gl, gh, lo, hi)
			}
		}
	}
}
