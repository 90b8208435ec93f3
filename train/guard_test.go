package train

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gdattn/gdattn/graph"
)

// TestUpdateGuard: an Adam/AdamW update that would write ±Inf or NaN into
// a parameter or a moment (an extreme learning rate or decay) is refused
// with an error naming the step, the parameter and the element, and leaves
// the parameters, the moments and the step count as they were, so training
// can go on from the last good values.
func TestUpdateGuard(t *testing.T) {
	t.Run("float32", testUpdateGuard[float32])
	t.Run("float64", testUpdateGuard[float64])
}

func testUpdateGuard[T float](t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		// float32Only: the update overflows only when rounded to float32.
		float32Only bool
		want        []string
	}{
		// lr/bc1 = 1e308/0.1 overflows: w - Inf.
		{name: "huge learning rate", cfg: Config{Schedule: func(step int) float64 {
			if step < 2 {
				return 0.01
			}
			return 1e308
		}}, want: []string{"step 3", `"lin/w"`, "element 0", "value"}},
		// Adam's L2 penalty: g' = g + 1e300 w, g'^2 overflows the second moment.
		{name: "huge L2 decay", cfg: Config{LR: 0.01, WeightDecay: 1e300}, want: []string{"step 1", `"lin/w"`, "second moment"}},
		// AdamW: w (1 - lr wd) = -1e39 w is finite in float64 only.
		{name: "decay overflows float32", cfg: Config{Optimizer: "adamw", LR: 1, WeightDecay: 1e39}, float32Only: true,
			want: []string{"step 1", `"lin/w"`, "value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newQuad(t, dtypeOf[T](), []float64{4, -3, 0.25, 10})
			tr := must(NewTrainer(q.mach, tc.cfg))
			var lastLoss float64
			for i := 0; ; i++ {
				w, b := must(graph.Values(q.w)), must(graph.Values(q.b))
				st := mustState(tr)
				l, err := tr.Step()
				if err == nil {
					if tc.float32Only && dtypeOf[T]() == graph.Float64 {
						for _, v := range must(graph.Values(q.w)) {
							if math.IsInf(v, 0) || math.IsNaN(v) {
								t.Fatalf("float64 update wrote %v", v)
							}
						}
						return
					}
					if i > 3 {
						t.Fatalf("no error after %d steps; w = %v", i+1, must(graph.Values(q.w)))
					}
					lastLoss = l
					continue
				}
				for _, s := range tc.want {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				if diff := cmp.Diff(w, must(graph.Values(q.w))); diff != "" {
					t.Errorf("w changed by the refused update (-before +after):\n%s", diff)
				}
				if diff := cmp.Diff(b, must(graph.Values(q.b))); diff != "" {
					t.Errorf("b changed by the refused update (-before +after):\n%s", diff)
				}
				if diff := cmp.Diff(st, mustState(tr)); diff != "" {
					t.Errorf("optimiser state changed by the refused update (-before +after):\n%s", diff)
				}
				if tr.StepCount() != i {
					t.Errorf("StepCount %d after the refused step %d", tr.StepCount(), i+1)
				}
				if i > 0 && !(lastLoss > 0) {
					t.Errorf("last good loss %v", lastLoss)
				}
				return
			}
		})
	}
}

// TestUpdateGuardNoFalseAlarm: an update whose cheap bound cannot rule out
// an overflow (eps = 5e-324, the smallest float64) but that stays finite is
// made exactly as the reference computes it.
func TestUpdateGuardNoFalseAlarm(t *testing.T) {
	const eps = math.SmallestNonzeroFloat64
	if updateBounded(10, 10, 0, 0, adamHyper{lr: 0.05, beta1: 0.9, beta2: 0.999, eps: eps, bc1: 0.1, bc2: 0.001}, math.MaxFloat64, math.MaxFloat64) {
		t.Fatal("the bound clears the first update: the test would not reach the exact check")
	}
	q := newQuad(t, graph.Float64, []float64{4, -3, 0.25, 10})
	tr := must(NewTrainer(q.mach, Config{LR: 0.05, Eps: eps}))
	w := []float64{4, -3, 0.25, 10, 0.5}
	m, v := make([]float64, 5), make([]float64, 5)
	c := []float64{1, -2, 3, 0.5}
	for step := 1; step <= 5; step++ {
		g := make([]float64, 5)
		for i := range c {
			g[i] = w[i] - c[i]
		}
		g[4] = w[4]
		for i := range w {
			m[i] = 0.9*m[i] + 0.1*g[i]
			v[i] = 0.999*v[i] + 0.001*g[i]*g[i]
			mh := m[i] / (1 - math.Pow(0.9, float64(step)))
			vh := v[i] / (1 - math.Pow(0.999, float64(step)))
			w[i] -= 0.05 * mh / (math.Sqrt(vh) + eps)
		}
		if _, err := tr.Step(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		got := append(must(graph.Values(q.w)), must(graph.Values(q.b))...)
		if diff := cmp.Diff(w, got, approx(1e-12)); diff != "" {
			t.Fatalf("step %d (-want +got):\n%s", step, diff)
		}
	}
}

// TestSetStateRejectsBadMoments: SetState refuses NaN or infinite moments,
// negative second moments and step counts that would overflow.
func TestSetStateRejectsBadMoments(t *testing.T) {
	q := newQuad(t, graph.Float64, []float64{0, 0, 0, 0})
	tr := must(NewTrainer(q.mach, Config{LR: 0.1}))
	must(tr.Step())
	good := mustState(tr)
	clone := func(f func(*State)) State {
		st := State{Step: good.Step, M: map[string][]float64{}, V: map[string][]float64{}}
		for k, v := range good.M {
			st.M[k] = append([]float64{}, v...)
			st.V[k] = append([]float64{}, good.V[k]...)
		}
		f(&st)
		return st
	}
	tests := []struct {
		name string
		st   State
		want string
	}{
		{"NaN first moment", clone(func(s *State) { s.M["lin/w"][2] = math.NaN() }), `M["lin/w"][2] = NaN`},
		{"infinite first moment", clone(func(s *State) { s.M["b"][0] = math.Inf(-1) }), `M["b"][0] = -Inf`},
		{"negative second moment", clone(func(s *State) { s.V["lin/w"][1] = -1e-3 }), `V["lin/w"][1] = -0.001`},
		{"NaN second moment", clone(func(s *State) { s.V["b"][0] = math.NaN() }), `V["b"][0] = NaN`},
		{"step near MaxInt64", clone(func(s *State) { s.Step = math.MaxInt64 }), "step 9223372036854775807"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tr.SetState(tc.st)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want it to contain %q", err, tc.want)
			}
			if diff := cmp.Diff(good, mustState(tr)); diff != "" {
				t.Errorf("state changed by a failed SetState (-want +got):\n%s", diff)
			}
		})
	}
	// The trainer still steps.
	if _, err := tr.Step(); err != nil {
		t.Fatal(err)
	}
}

// TestUpdateBoundedSound: whenever the cheap bound clears an update, the
// exact update is finite, over random states and hyperparameters spanning
// every magnitude (the bound may be pessimistic, never optimistic).
func TestUpdateBoundedSound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	mag := func() float64 { return math.Pow(10, float64(rng.IntN(640)-320)) * rng.Float64() }
	cleared, overflows := 0, 0
	for trial := 0; trial < 20000; trial++ {
		n := 1 + rng.IntN(4)
		w32, w := make([]float32, n), make([]float64, n)
		g, m, v := make([]float64, n), make([]float64, n), make([]float64, n)
		P, G, M, V := 0.0, 0.0, 0.0, 0.0
		for i := range w {
			w[i] = (rng.Float64()*2 - 1) * mag()
			w32[i] = float32(w[i])
			if math.IsInf(float64(w32[i]), 0) {
				w32[i] = 0
			}
			g[i] = (rng.Float64()*2 - 1) * mag()
			m[i] = (rng.Float64()*2 - 1) * mag()
			v[i] = mag()
			P, M, V = max(P, math.Abs(w[i])), max(M, math.Abs(m[i])), max(V, v[i])
		}
		G = GlobalNorm([][]float64{g})
		if math.IsInf(G, 0) {
			continue // GlobalNorm would report the overflow before any update
		}
		h := adamHyper{lr: mag(), beta1: 0.9, beta2: 0.999, eps: mag() + 1e-300, bc1: 1 - math.Pow(0.9, float64(1+rng.IntN(5))),
			bc2: 1 - math.Pow(0.999, float64(1+rng.IntN(5))), wd: []float64{0, mag()}[rng.IntN(2)], decoupled: rng.IntN(2) == 0}
		if updateBounded(P, G, M, V, h, math.MaxFloat64, math.MaxFloat64) {
			cleared++
			if j, what := adamCheck(w, g, m, v, h); j >= 0 {
				t.Fatalf("trial %d: bound cleared a float64 update whose %s overflows at %d: w %v g %v m %v v %v h %+v", trial, what, j, w, g, m, v, h)
			}
		} else if j, _ := adamCheck(w, g, m, v, h); j >= 0 {
			overflows++
		}
		P32 := maxAbs32(w32)
		if updateBounded(P32, G, M, V, h, math.MaxFloat32, math.MaxFloat64) {
			if j, what := adamCheck(w32, g, m, v, h); j >= 0 {
				t.Fatalf("trial %d: bound cleared a float32 update whose %s overflows at %d: w %v g %v m %v v %v h %+v P %v G %v M %v V %v", trial, what, j, w32, g, m, v, h, P32, G, M, V)
			}
		}
	}
	if cleared < 1000 || overflows < 1000 {
		t.Errorf("%d updates cleared, %d overflowing: the trials do not exercise both sides", cleared, overflows)
	}
}

func TestMaxAbs(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"empty", nil, 0},
		{"signs", []float64{1, -3, 2}, 3},
		{"tiny", []float64{-5e-324, 0}, 5e-324},
		{"inf", []float64{1, math.Inf(-1)}, math.Inf(1)},
		{"nan", []float64{1, math.NaN(), math.Inf(1)}, math.NaN()},
	}
	for _, tc := range tests {
		got := maxAbs64(tc.xs)
		if !(got == tc.want || math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("%s: maxAbs64 = %v, want %v", tc.name, got, tc.want)
		}
		xs32 := make([]float32, len(tc.xs))
		for i, x := range tc.xs {
			xs32[i] = float32(x)
		}
		want32 := float64(float32(tc.want))
		if got := maxAbs32(xs32); !(got == want32 || math.IsNaN(got) && math.IsNaN(want32)) {
			t.Errorf("%s: maxAbs32 = %v, want %v", tc.name, got, want32)
		}
	}
}

// TestMaxAbs32Lengths checks maxAbs32 (AVX2 blocks of 32, then one by one)
// against the one-by-one loop at every length up to 200 and with the
// largest magnitude, a NaN or an infinity at each position class.
func TestMaxAbs32Lengths(t *testing.T) {
	ref := func(xs []float32) uint32 {
		var m uint32
		for _, x := range xs {
			m = max(m, math.Float32bits(x)&^(1<<31))
		}
		return m
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= 200; n++ {
		xs := make([]float32, n)
		for i := range xs {
			xs[i] = float32(rng.NormFloat64()) * float32(math.Ldexp(1, rng.IntN(40)-20))
		}
		for trial := 0; trial < 4 && n > 0; trial++ {
			ys := append([]float32(nil), xs...)
			switch trial {
			case 1:
				ys[rng.IntN(n)] = -1e30
			case 2:
				ys[rng.IntN(n)] = float32(math.Inf(-1))
			case 3:
				ys[rng.IntN(n)] = float32(math.NaN())
			}
			want := float64(math.Float32frombits(ref(ys)))
			if got := maxAbs32(ys); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("n %d trial %d: maxAbs32 = %v, want %v", n, trial, got, want)
			}
		}
	}
}

func BenchmarkMaxAbs32(b *testing.B) {
	xs := make([]float32, 1<<22)
	for i := range xs {
		xs[i] = float32(i%1000) - 500
	}
	b.SetBytes(int64(4 * len(xs)))
	for i := 0; i < b.N; i++ {
		_ = maxAbs32(xs)
	}
}
