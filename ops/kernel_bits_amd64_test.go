//go:build amd64 && !purego

package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKernelBackwardRowBits: the kernel's backward pass with its AVX2
// updates (axpyRound32) gives the bits of the scalar Go loops, for the
// dot-product kernels, with and without a causal mask, with zero and NaN
// coefficients, with dg's chain and without (two goroutines).
func TestKernelBackwardRowBits(t *testing.T) {
	if !haveAxpyAVX2 {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, kind := range []KernelKind{KindSoftmax, KindExp, KindLinear} {
		for _, sh := range []kernelArgs{{b: 2, tq: 5, tk: 5, d: 4, g: 0.7}, {b: 3, tq: 19, tk: 19, d: 8, g: 0.3}, {b: 2, tq: 33, tk: 33, d: 64, g: 0.125}} {
			for _, masked := range []bool{false, true} {
				a := sh
				n := a.b * a.tq * a.d
				q, k := make([]float32, n), make([]float32, n)
				for i := range q {
					q[i], k[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
				}
				m := a.b * a.tq * a.tk
				w, dw := make([]float32, m), make([]float32, m)
				var keep []float32
				if masked {
					keep = make([]float32, m)
					for bj := 0; bj < a.b*a.tq; bj++ {
						for i := 0; i <= bj%a.tq; i++ {
							keep[bj*a.tk+i] = 1
						}
					}
				}
				raw := make([]float32, m)
				kernelForward(kind, a, q, k, keep, w, raw)
				for i := range dw {
					dw[i] = float32(rng.NormFloat64())
				}
				dw[3] = 0 // a zero coefficient for the linear kernel
				if kind == KindLinear {
					dw[5] = float32(math.NaN())
				}
				run := func(avx bool, needDG bool) ([]float32, []float32, float64) {
					defer func(v bool) { haveAxpyAVX2 = v }(haveAxpyAVX2)
					haveAxpyAVX2 = avx
					dq, dk := make([]float32, n), make([]float32, n)
					dg := kernelBackward(kind, a, q, k, keep, w, dw, dq, dk, raw, needDG)
					return dq, dk, dg
				}
				for _, needDG := range []bool{true, false} {
					wq, wk, wg := run(false, needDG)
					gq, gk, gg := run(true, needDG)
					if math.Float64bits(gg) != math.Float64bits(wg) {
						t.Fatalf("%v %+v masked %v: dg %v, want %v", kind, a, masked, gg, wg)
					}
					for i := range wq {
						if math.Float32bits(gq[i]) != math.Float32bits(wq[i]) || math.Float32bits(gk[i]) != math.Float32bits(wk[i]) {
							t.Fatalf("%v %+v masked %v needDG %v: element %d: dq %v dk %v, want %v %v", kind, a, masked, needDG, i, gq[i], gk[i], wq[i], wk[i])
						}
					}
				}
			}
		}
	}
}

// BenchmarkKernelBackward times the causal softmax kernel's backward pass
// over 4 heads of context 256 and width 64 (a quarter of a language
// `paper` step's batch of heads), float32, with the AVX2 updates ("avx2")
// and with the scalar loops ("go").
func BenchmarkKernelBackward(b *testing.B) {
	a := kernelArgs{b: 4, tq: 256, tk: 256, d: 64, g: 0.125}
	rng := rand.New(rand.NewPCG(1, 2))
	n, m := a.b*a.tq*a.d, a.b*a.tq*a.tk
	q, k, dq, dk := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range q {
		q[i], k[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	w, dw, raw, keep := make([]float32, m), make([]float32, m), make([]float32, m), make([]float32, m)
	for bj := 0; bj < a.b*a.tq; bj++ {
		for i := 0; i <= bj%a.tq; i++ {
			keep[bj*a.tk+i] = 1
		}
	}
	kernelForward(KindSoftmax, a, q, k, keep, w, raw)
	for i := range dw {
		dw[i] = float32(rng.NormFloat64())
	}
	for _, avx := range []bool{true, false} {
		name := "go"
		if avx {
			name = "avx2"
		}
		b.Run(name, func(b *testing.B) {
			if avx && !haveAxpyAVX2 {
				b.Skip("no AVX2")
			}
			defer func(v bool) { haveAxpyAVX2 = v }(haveAxpyAVX2)
			haveAxpyAVX2 = avx
			for range b.N {
				kernelBackward(KindSoftmax, a, q, k, keep, w, dw, dq, dk, raw, true)
			}
		})
	}
}
