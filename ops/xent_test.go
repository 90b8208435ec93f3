package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestSparseXentLarge compares the float32 op with the float64 op on a wide
// softmax (rows split between goroutines with GOMAXPROCS >= 2), over two
// runs (the softmax buffer is reused), and the backward op run on its own
// (it recomputes the softmax) with the backward after a forward.
func TestSparseXentLarge(t *testing.T) {
	const n, c = 24, 4000
	rng := rand.New(rand.NewPCG(3, 4))
	x64 := make([]float64, n*c)
	x32 := make([]float32, n*c)
	for i := range x64 {
		x64[i] = 4 * rng.NormFloat64()
		x32[i] = float32(x64[i])
		x64[i] = float64(x32[i])
	}
	labels := make([]int, n)
	for i := range labels {
		labels[i] = rng.IntN(c) - 1 // some -1: not scored
	}
	lab := tensor.New(tensor.WithShape(n), tensor.WithBacking(labels))
	for run := 0; run < 2; run++ {
		f64 := &SparseCrossEntropyOp{n: n, c: c}
		b64 := &SparseCrossEntropyOp{n: n, c: c, back: true, fwd: f64}
		f32 := &SparseCrossEntropyOp{n: n, c: c}
		b32 := &SparseCrossEntropyOp{n: n, c: c, back: true, fwd: f32}
		for rep := 0; rep < 2; rep++ {
			l64, err := f64.Do(tensor.New(tensor.WithShape(n, c), tensor.WithBacking(x64)), lab)
			if err != nil {
				t.Fatal(err)
			}
			g64, err := b64.Do(tensor.New(tensor.WithShape(n, c), tensor.WithBacking(x64)), lab, G.NewF64(2))
			if err != nil {
				t.Fatal(err)
			}
			if run == 0 {
				l32, err := f32.Do(tensor.New(tensor.WithShape(n, c), tensor.WithBacking(x32)), lab)
				if err != nil {
					t.Fatal(err)
				}
				if d := math.Abs(float64(*l32.(*G.F32)) - float64(*l64.(*G.F64))); d > 1e-5 {
					t.Errorf("loss float32 vs float64: differ by %.2e", d)
				}
			}
			// run 1: the backward op alone, without a forward run.
			g32, err := b32.Do(tensor.New(tensor.WithShape(n, c), tensor.WithBacking(x32)), lab, G.NewF32(2))
			if err != nil {
				t.Fatal(err)
			}
			a, b := g32.Data().([]float32), g64.Data().([]float64)
			worst := 0.0
			for i := range a {
				worst = math.Max(worst, math.Abs(float64(a[i])-b[i]))
			}
			if worst > 1e-7 {
				t.Errorf("run %d rep %d: gradient float32 vs float64: max difference %.2e", run, rep, worst)
			}
			if run == 1 {
				break
			}
		}
	}
}

// TestSparseXentNaN: a NaN logit makes the loss NaN (the trainer's guard
// then refuses the update), in both dtypes.
func TestSparseXentNaN(t *testing.T) {
	lab := tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{1, 0}))
	op32 := &SparseCrossEntropyOp{n: 2, c: 3}
	l32, err := op32.Do(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float32{0, 1, float32(math.NaN()), 1, 2, 3})), lab)
	if err != nil || !math.IsNaN(float64(*l32.(*G.F32))) {
		t.Errorf("float32: loss %v, %v; want NaN", l32, err)
	}
	op64 := &SparseCrossEntropyOp{n: 2, c: 3}
	l64, err := op64.Do(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{0, 1, math.NaN(), 1, 2, 3})), lab)
	if err != nil || !math.IsNaN(float64(*l64.(*G.F64))) {
		t.Errorf("float64: loss %v, %v; want NaN", l64, err)
	}
}

// rowExpRef is rowExp's float32 row without the AVX2 chunks: Exp32 per
// element, even indices summed into s0 and odd into s1.
func rowExpRef(r, e []float32) (float64, float64) {
	m := r[0]
	for _, v := range r[1:] {
		if v > m {
			m = v
		}
	}
	m64 := float64(m)
	var s0, s1 float64
	j := 0
	for ; j+1 < len(r); j += 2 {
		a, b := Exp32(float64(r[j])-m64), Exp32(float64(r[j+1])-m64)
		e[j], e[j+1] = float32(a), float32(b)
		s0 += a
		s1 += b
	}
	if j < len(r) {
		a := Exp32(float64(r[j]) - m64)
		e[j] = float32(a)
		s0 += a
	}
	return m64, s0 + s1
}

// TestRowExpBits: rowExp (AVX2 chunks where the CPU has them) gives the
// bits of the per-element loop, into a separate buffer and in place, for
// rows of every length mod 4 and past a chunk, with values beyond Exp32's
// fast range (x − max ≤ −700).
func TestRowExpBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 255, 256, 257, 515, 1030} {
		for _, far := range []bool{false, true} {
			r := make([]float32, n)
			for i := range r {
				r[i] = float32(8 * rng.NormFloat64())
			}
			if far && n > 6 {
				r[n/2] = -1000
				r[n-1] = 800
			}
			want := make([]float32, n)
			wm, ws := rowExpRef(r, want)
			got := make([]float32, n)
			gm, gs := rowExp(r, got)
			in := append([]float32(nil), r...)
			im, is := rowExp(in, in)
			if gm != wm || gs != ws || im != wm || is != ws {
				t.Errorf("n %d far %v: max, sum %v %v and in place %v %v, want %v %v", n, far, gm, gs, im, is, wm, ws)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(in[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n %d far %v: element %d: %v and in place %v, want %v", n, far, i, got[i], in[i], want[i])
				}
			}
		}
	}
}
