package ops

import (
	"math"
	"math/big"
	"math/rand/v2"
	"runtime"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ulp32 is the spacing of the float32s at |v| (normal range).
func ulp32(v float64) float64 {
	f := float32(math.Abs(v))
	return float64(math.Nextafter32(f, float32(math.Inf(1))) - f)
}

// TestXentExpfULP sweeps xentExpf over its range [xentLo, 0] (every 64th
// float32 below −2⁻¹⁰, every float32 of a stretch near 0) against math.Exp
// of the same argument: the largest error must stay within a few ulp of
// the float32 result.
func TestXentExpfULP(t *testing.T) {
	worst, at := 0.0, float32(0)
	check := func(a float32) {
		want := math.Exp(float64(a))
		got := float64(xentExpf(a))
		if e := math.Abs(got-want) / ulp32(want); e > worst {
			worst, at = e, a
		}
	}
	n := 0
	for b := math.Float32bits(-1.0 / 1024); ; b += 64 {
		a := math.Float32frombits(b)
		if a < xentLo {
			break
		}
		check(a)
		n++
	}
	for b := uint32(0x80000000); b < math.Float32bits(-1.0/1024); b += 1 + b&0xffff {
		check(math.Float32frombits(b))
		n++
	}
	check(xentLo)
	check(0)
	t.Logf("%d arguments: largest error %.3f ulp at %v", n, worst, at)
	if worst > 2 {
		t.Errorf("largest error %.3f ulp at %v, want <= 2", worst, at)
	}
	for _, c := range []struct{ a, want float32 }{
		{xentLo - 1e-4, 0}, {-1000, 0}, {float32(math.Inf(-1)), 0}, {0, 1},
		{100, float32(math.Inf(1))}, {float32(math.Inf(1)), float32(math.Inf(1))},
	} {
		if got := xentExpf(c.a); got != c.want {
			t.Errorf("xentExpf(%v) = %v, want %v", c.a, got, c.want)
		}
	}
	if got := xentExpf(float32(math.NaN())); got == got {
		t.Errorf("xentExpf(NaN) = %v, want NaN", got)
	}
}

// TestFMA32 checks fma32 against the exact a·b + c (math/big) rounded to
// float32, on random operands and on ties of the float64 rounding.
func TestFMA32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	exact := func(a, b, c float32) float32 {
		x := new(big.Float).SetPrec(200).SetFloat64(float64(a))
		x.Mul(x, new(big.Float).SetPrec(200).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetPrec(200).SetFloat64(float64(c)))
		f, _ := x.Float32()
		return f
	}
	for i := 0; i < 200000; i++ {
		a := float32(rng.NormFloat64())
		b := float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(20)-10)))
		c := float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(60)-30)))
		if i%4 == 0 {
			// a·b + c near a float32 tie: c a float32 just off half an ulp of a·b.
			p := float32(float64(a) * float64(b))
			c = -p + ulp32Of(p)/2*float32(1+rng.IntN(3)-1)
		}
		if got, want := fma32(a, b, c), exact(a, b, c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma32(%v, %v, %v) = %v, want %v", a, b, c, got, want)
		}
	}
	// A tie of the float64 rounding: 1 + 2⁻²⁴ + 2⁻⁶⁰ rounds to the float32
	// midpoint 1 + 2⁻²⁴ in float64, then to 1 (even) instead of up.
	a, b := float32(1+math.Pow(2, -12)), float32(1+math.Pow(2, -12)) // a·b = 1 + 2⁻¹¹ + 2⁻²⁴
	c := float32(-math.Pow(2, -11))
	if got, want := fma32(a, b, c), exact(a, b, c); got != want {
		t.Errorf("fma32 tie: %v, want %v", got, want)
	}
}

func ulp32Of(f float32) float32 {
	f = float32(math.Abs(float64(f)))
	return math.Nextafter32(f, float32(math.Inf(1))) - f
}

// xentRowRef is xentRowExp32 with the portable loop only.
func xentRowRef(row, e []float32) (float32, float64) {
	m := row[0]
	for _, v := range row[1:] {
		if v > m {
			m = v
		}
	}
	var sums [8]float64
	return m, xentExpTail(row, e, 0, m, &sums)
}

// TestXent32AsmBits: the AVX2 kernels (where the CPU has them) give the bits
// of the portable loops: rows of every length mod 8, into a separate buffer
// and in place, with −Inf entries, values far below the maximum, a NaN and
// +Inf (the kernel stops there); and each argument of a sweep of the
// exponential's range, lane by lane.
func TestXent32AsmBits(t *testing.T) {
	if !haveXent32 {
		t.Log("no AVX2/FMA here (or purego): the portable loops only")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 7, 8, 9, 15, 16, 17, 255, 256, 263, 1030} {
		for kind := 0; kind < 4; kind++ {
			r := make([]float32, n)
			for i := range r {
				r[i] = float32(10 * rng.NormFloat64())
			}
			if n > 10 {
				switch kind {
				case 1:
					r[n/2], r[n/3] = float32(math.Inf(-1)), -500
				case 2:
					r[n/2] = float32(math.NaN())
				case 3:
					r[n-2] = float32(math.Inf(1))
				}
			}
			want := make([]float32, n)
			wm, ws := xentRowRef(r, want)
			got := make([]float32, n)
			gm, gs := xentRowExp32(r, got, nil)
			in := append([]float32(nil), r...)
			im, is := xentRowExp32(in, in, r)
			if kind < 2 && (gm != wm || gs != ws || im != wm || is != ws) {
				t.Errorf("n %d kind %d: max, sum %v %v and in place %v %v, want %v %v", n, kind, gm, gs, im, is, wm, ws)
			}
			if kind >= 2 && n > 10 && !(math.IsNaN(gs) && math.IsNaN(is)) {
				t.Errorf("n %d kind %d: sums %v %v, want NaN", n, kind, gs, is)
			}
			for i := range want {
				if kind < 2 && (math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(in[i]) != math.Float32bits(want[i])) {
					t.Fatalf("n %d kind %d: element %d: %v and in place %v, want %v", n, kind, i, got[i], in[i], want[i])
				}
			}
		}
	}
	// Lane by lane over the range: the kernel on groups of eight arguments
	// (x − 0) against xentExpf.
	if haveXent32 {
		const chunk = 1 << 12
		x, e := make([]float32, chunk), make([]float32, chunk)
		b := math.Float32bits(xentLo)
		for done := false; !done; {
			for i := range x {
				x[i] = math.Float32frombits(b)
				if b > 0x80000000+977 {
					b -= 977
				} else {
					b, done = 0x80000000, true
				}
			}
			var sums [8]float64
			if k := xentExp32(&e[0], &x[0], chunk, 0, &sums, &x[0]); k != chunk {
				t.Fatalf("kernel stopped at %d of %d", k, chunk)
			}
			for i := range x {
				if w := xentExpf(x[i]); math.Float32bits(e[i]) != math.Float32bits(w) {
					t.Fatalf("exp(%v): kernel %v, portable %v", x[i], e[i], w)
				}
			}
		}
		o := make([]float32, 77)
		for i := range o {
			o[i] = float32(rng.NormFloat64())
		}
		w := append([]float32(nil), o...)
		xentScaleF32(o, 0.3)
		for i := range w {
			if w[i] *= 0.3; o[i] != w[i] {
				t.Fatalf("scale: element %d: %v, want %v", i, o[i], w[i])
			}
		}
	}
}

// xentOps returns a forward and a backward op of (n, c) logits.
func xentOps(n, c int, f32 bool) (*SparseCrossEntropyOp, *SparseCrossEntropyOp) {
	f := &SparseCrossEntropyOp{n: n, c: c, f32: f32}
	return f, &SparseCrossEntropyOp{n: n, c: c, back: true, f32: f32, fwd: f}
}

// TestSparseXent32VsDefault compares the op with the Float32 option to the
// default float32 op on random logits of several magnitudes, with −1
// labels, rows holding −Inf entries and huge values: the losses within
// 1e-6 relative and every gradient entry within 2e-6 of the row's largest
// probability plus 1e-6 relative; through forward then backward, the
// backward alone (it recomputes), a second run (the buffers are reused)
// and dL ≠ 1.
func TestSparseXent32VsDefault(t *testing.T) {
	const n, c = 16, 3001
	rng := rand.New(rand.NewPCG(5, 6))
	for _, scale := range []float64{1e-3, 1, 8, 40} {
		x := make([]float32, n*c)
		for i := range x {
			x[i] = float32(scale * rng.NormFloat64())
		}
		labels := make([]int, n)
		for i := range labels {
			labels[i] = rng.IntN(c+1) - 1
		}
		labels[3] = -1
		for j := 0; j < c; j += 7 {
			x[5*c+j] = float32(math.Inf(-1))
		}
		labels[5] = 1 // a finite entry
		x[6*c+11] = 3e38
		x[6*c+12] = -3e38
		labels[6] = 12 // a loss of 6e38, a gradient of −1/n there
		lab := tensor.New(tensor.WithShape(n), tensor.WithBacking(labels))
		dense := func() tensor.Tensor {
			return tensor.New(tensor.WithShape(n, c), tensor.WithBacking(x))
		}
		fd, bd := xentOps(n, c, false)
		f3, b3 := xentOps(n, c, true)
		for run := 0; run < 3; run++ {
			g := 1.0
			if run == 2 {
				g = 0.37
			}
			ld, err := fd.Do(dense(), lab)
			if err != nil {
				t.Fatal(err)
			}
			gd, err := bd.Do(dense(), lab, G.NewF32(float32(g)))
			if err != nil {
				t.Fatal(err)
			}
			if run != 1 { // run 1: the backward op alone
				l3, err := f3.Do(dense(), lab)
				if err != nil {
					t.Fatal(err)
				}
				a, b := float64(*l3.(*G.F32)), float64(*ld.(*G.F32))
				if math.Abs(a-b) > 1e-6*math.Abs(b) {
					t.Errorf("scale %g run %d: loss %v, default %v", scale, run, a, b)
				}
			}
			g3, err := b3.Do(dense(), lab, G.NewF32(float32(g)))
			if err != nil {
				t.Fatal(err)
			}
			a, b := g3.Data().([]float32), gd.Data().([]float32)
			worst := 0.0
			for i := range a {
				d := math.Abs(float64(a[i]) - float64(b[i]))
				if d > 2e-6*g/float64(n)+1e-6*math.Abs(float64(b[i])) || math.IsNaN(float64(a[i])) != math.IsNaN(float64(b[i])) {
					t.Fatalf("scale %g run %d: gradient %d (row %d label %d): %v, default %v", scale, run, i, i/c, labels[i/c], a[i], b[i])
				}
				worst = math.Max(worst, d)
			}
			t.Logf("scale %g run %d: gradient max difference %.2e", scale, run, worst)
		}
	}
}

// TestSparseXent32Bad: the option fails as the default does on a label out
// of range, gives NaN for a NaN logit and +Inf or NaN logits, and 0 (a zero
// gradient) with no label scored.
func TestSparseXent32Bad(t *testing.T) {
	f, b := xentOps(2, 3, true)
	x := func(v ...float32) tensor.Tensor { return tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(v)) }
	lab := func(l ...int) tensor.Tensor { return tensor.New(tensor.WithShape(2), tensor.WithBacking(l)) }
	if _, err := f.Do(x(0, 1, 2, 3, 4, 5), lab(0, 3)); err == nil {
		t.Error("label 3 of 3 classes: no error")
	}
	if _, err := b.Do(x(0, 1, 2, 3, 4, 5), lab(-2, 0), G.NewF32(1)); err == nil {
		t.Error("label -2: no error")
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		l, err := f.Do(x(0, 1, bad, 1, 2, 3), lab(1, 0))
		if err != nil || !math.IsNaN(float64(*l.(*G.F32))) {
			t.Errorf("logit %v: loss %v, %v; want NaN", bad, l, err)
		}
	}
	l, err := f.Do(x(0, 1, 2, 3, 4, 5), lab(-1, -1))
	if err != nil || *l.(*G.F32) != 0 {
		t.Errorf("nothing scored: loss %v, %v; want 0", l, err)
	}
	gr, err := b.Do(x(0, 1, 2, 3, 4, 5), lab(-1, -1), G.NewF32(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range gr.Data().([]float32) {
		if v != 0 {
			t.Fatalf("nothing scored: gradient %v, want zeros", gr.Data())
		}
	}
}

// BenchmarkSparseXent times the op's forward and backward on (256, 50,258)
// float32 logits (a quarter of the language models' paper step), with and
// without the Float32 option; cpu-ns/elem is the process CPU time per logit.
func BenchmarkSparseXent(b *testing.B) {
	const n, c = 256, 50258
	rng := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, n*c)
	for i := range x {
		x[i] = float32(3 * rng.NormFloat64())
	}
	labels := make([]int, n)
	for i := range labels {
		labels[i] = rng.IntN(c)
	}
	lab := tensor.New(tensor.WithShape(n), tensor.WithBacking(labels))
	xt := tensor.New(tensor.WithShape(n, c), tensor.WithBacking(x))
	for _, f32 := range []bool{false, true} {
		name := "default"
		if f32 {
			name = "float32"
		}
		b.Run(name, func(b *testing.B) {
			f, bk := xentOps(n, c, f32)
			c0 := cpuTime()
			for i := 0; i < b.N; i++ {
				if _, err := f.Do(xt, lab); err != nil {
					b.Fatal(err)
				}
				if _, err := bk.Do(xt, lab, G.NewF32(1)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/float64(n*c), "cpu-ns/elem")
		})
	}
}

// BenchmarkXentRow times one row of the paper step's logits (50,258
// float32, in the L2 cache with its output row): the exponentials, their
// sum and the gradient scaling, per logit, for the default path (rowExp,
// then xentGrad's loop) and the Float32 option (xentRowExp32,
// xentGradRow32).
func BenchmarkXentRow(b *testing.B) {
	const c = 50258
	rng := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, c)
	for i := range x {
		x[i] = float32(3 * rng.NormFloat64())
	}
	e := make([]float32, c)
	b.Run("default", func(b *testing.B) {
		c0 := cpuTime()
		for i := 0; i < b.N; i++ {
			_, s := rowExp(x, e)
			k := float32(1 / s / 1024)
			for j := range e {
				e[j] *= k
			}
			e[7] -= 1.0 / 1024
		}
		b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/c, "cpu-ns/elem")
	})
	b.Run("float32", func(b *testing.B) {
		c0 := cpuTime()
		for i := 0; i < b.N; i++ {
			_, s := xentRowExp32(x, e, nil)
			xentGradRow32(e, 7, 1/s, 1.0/1024)
		}
		b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/c, "cpu-ns/elem")
	})
}

// TestSparseXent32Threads: with the Float32 option, rows split between two
// goroutines (GOMAXPROCS 2, (24, 4000) logits) give the bits of one
// goroutine, loss and gradient, with dL = 1 and dL = 3.
func TestSparseXent32Threads(t *testing.T) {
	const n, c = 24, 4000
	rng := rand.New(rand.NewPCG(9, 9))
	x := make([]float32, n*c)
	for i := range x {
		x[i] = float32(5 * rng.NormFloat64())
	}
	labels := make([]int, n)
	for i := range labels {
		labels[i] = rng.IntN(c+1) - 1
	}
	lab := tensor.New(tensor.WithShape(n), tensor.WithBacking(labels))
	run := func(procs int, g float32) (float32, []float32) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		f, b := xentOps(n, c, true)
		xt := tensor.New(tensor.WithShape(n, c), tensor.WithBacking(append([]float32(nil), x...)))
		l, err := f.Do(xt, lab)
		if err != nil {
			t.Fatal(err)
		}
		gr, err := b.Do(xt, lab, G.NewF32(g))
		if err != nil {
			t.Fatal(err)
		}
		return float32(*l.(*G.F32)), append([]float32(nil), gr.Data().([]float32)...)
	}
	for _, g := range []float32{1, 3} {
		l1, g1 := run(1, g)
		l2, g2 := run(2, g)
		if l1 != l2 {
			t.Errorf("dL %v: loss %v on two goroutines, %v on one", g, l2, l1)
		}
		for i := range g1 {
			if math.Float32bits(g1[i]) != math.Float32bits(g2[i]) {
				t.Fatalf("dL %v: gradient %d: %v on two goroutines, %v on one", g, i, g2[i], g1[i])
			}
		}
	}
}
