package train

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// adamRef is adamUpdateScaled's per-element loop, written out without the
// AVX2 kernels.
func adamRef[M float32 | float64](w, g []float32, scale float64, m, v []M, h adamHyper) (mmax, vmax float64) {
	c1, c2 := 1-h.beta1, 1-h.beta2
	step, rbc2 := h.lr/h.bc1, 1/math.Sqrt(h.bc2)
	l2, keep := 0.0, 1.0
	if h.wd != 0 {
		if h.decoupled {
			keep = 1 - h.lr*h.wd
		} else {
			l2 = h.wd
		}
	}
	for i := range w {
		p := float64(w[i])
		gi := float64(float64(g[i])*scale) + l2*p
		mi := h.beta1*float64(m[i]) + c1*gi
		vi := h.beta2*float64(v[i]) + c2*gi*gi
		m[i], v[i] = M(mi), M(vi)
		w[i] = float32(p*keep - step*mi/(math.Sqrt(vi)*rbc2+h.eps))
		mmax = max(mmax, math.Abs(float64(m[i])))
		vmax = max(vmax, float64(v[i]))
	}
	return mmax, vmax
}

// TestAdamUpdateBits: the update of float32 parameters (AVX2 kernels where
// the CPU has them) gives the bits of the per-element loop, with float32
// and float64 moments, Adam's L2 penalty and AdamW's decay, a clipping
// scale, over lengths of every remainder mod 4 and several steps.
func TestAdamUpdateBits(t *testing.T) {
	t.Run("float32 moments", testAdamUpdateBits[float32])
	t.Run("float64 moments", testAdamUpdateBits[float64])
	// Again with every update of 8 or more elements split over two
	// goroutines.
	defer func(n, procs int) { minParallelAdam = n; runtime.GOMAXPROCS(procs) }(minParallelAdam, runtime.GOMAXPROCS(2))
	minParallelAdam = 8
	t.Run("two goroutines/float32 moments", testAdamUpdateBits[float32])
	t.Run("two goroutines/float64 moments", testAdamUpdateBits[float64])
}

func testAdamUpdateBits[M float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 3, 4, 5, 8, 13, 1031} {
		for _, h := range []adamHyper{
			{lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8},
			{lr: 3e-2, beta1: 0.8, beta2: 0.99, eps: 1e-6, wd: 0.1},
			{lr: 1e-2, beta1: 0.9, beta2: 0.95, eps: 1e-8, wd: 0.01, decoupled: true},
		} {
			w := make([]float32, n)
			for i := range w {
				w[i] = float32(rng.NormFloat64())
			}
			wr := append([]float32(nil), w...)
			m, v := make([]M, n), make([]M, n)
			mr, vr := make([]M, n), make([]M, n)
			for step := 1; step <= 3; step++ {
				g := make([]float32, n)
				for i := range g {
					g[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(7)-3)))
				}
				h.bc1, h.bc2 = 1-math.Pow(h.beta1, float64(step)), 1-math.Pow(h.beta2, float64(step))
				scale := []float64{1, 0.37}[step%2]
				gm, gv := adamUpdateScaled(w, g, scale, m, v, h)
				wm, wv := adamRef(wr, g, scale, mr, vr, h)
				if gm != wm || gv != wv {
					t.Fatalf("n %d %+v step %d: maxima %v %v, want %v %v", n, h, step, gm, gv, wm, wv)
				}
				for i := range w {
					if math.Float32bits(w[i]) != math.Float32bits(wr[i]) || m[i] != mr[i] || v[i] != vr[i] {
						t.Fatalf("n %d %+v step %d element %d: w, m, v %v %v %v, want %v %v %v", n, h, step, i, w[i], m[i], v[i], wr[i], mr[i], vr[i])
					}
				}
			}
		}
	}
}

// TestFirstNonFinite: the first NaN or ±Inf, in both dtypes, -1 if none
// (the largest finite values and subnormals are finite).
func TestFirstNonFinite(t *testing.T) {
	f32 := []float32{0, -1, math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32}
	f64 := []float64{0, -1, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64}
	if j := firstNonFinite(f32); j != -1 {
		t.Errorf("float32 finite: %d", j)
	}
	if j := firstNonFinite(f64); j != -1 {
		t.Errorf("float64 finite: %d", j)
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		a := append(append([]float32(nil), f32...), float32(bad), 0)
		b := append(append([]float64(nil), f64...), bad, 0)
		if j := firstNonFinite(a); j != len(f32) {
			t.Errorf("float32 %v: %d, want %d", bad, j, len(f32))
		}
		if j := firstNonFinite(b); j != len(f64) {
			t.Errorf("float64 %v: %d, want %d", bad, j, len(f64))
		}
	}
}

// TestFirstNonFiniteLong places one NaN, ±Inf or several at every position
// of float32 slices long enough for the AVX2 blocks (and their tails), on
// slices starting at every alignment, and checks the index found.
func TestFirstNonFiniteLong(t *testing.T) {
	base := make([]float32, 200)
	for i := range base {
		base[i] = float32(i%7) - 3 + math.MaxFloat32*float32(i%2)
	}
	for _, n := range []int{31, 32, 33, 64, 95, 130} {
		for off := 0; off < 3; off++ {
			x := append([]float32(nil), base[off:off+n]...)
			if j := firstNonFinite(x); j != -1 {
				t.Fatalf("n %d off %d finite: %d", n, off, j)
			}
			for pos := 0; pos < n; pos++ {
				for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
					y := append([]float32(nil), x...)
					y[pos] = bad
					if pos+5 < n {
						y[pos+5] = bad
					}
					if j := firstNonFinite(y); j != pos {
						t.Fatalf("n %d off %d: %v at %d: found %d", n, off, bad, pos, j)
					}
				}
			}
		}
	}
}

// BenchmarkAdamParamDtype32 times the update of the `paper` GPT's 29 M
// float32 parameters with float32 moments (Config.ParamDtypeMoments), the
// loop a language model's step runs; bytes are the 28 each element reads
// and writes (w, g, m, v read; w, m, v written).
func BenchmarkAdamParamDtype32(b *testing.B) {
	const n = 29 << 20
	w, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range g {
		g[i] = float32(i%7) - 3
		w[i] = 0.01
	}
	h := adamHyper{lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, bc1: 0.1, bc2: 0.001, wd: 0.01, decoupled: true}
	b.SetBytes(n * 28)
	for i := 0; i < b.N; i++ {
		adamUpdateScaled(w, g, 1, m, v, h)
	}
}
