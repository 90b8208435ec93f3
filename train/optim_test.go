package train

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gdattn/gdattn/graph"
)

// TestGlobalNormPaths checks the one-pass norm against the scaled one on
// ordinary, tiny (the squares underflow) and huge (they overflow) values.
func TestGlobalNormPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, scale := range []float64{1, 1e-170, 1e-300, 1e170, 1e300} {
		grads := [][]float64{make([]float64, 1001), make([]float64, 7), nil}
		for _, g := range grads {
			for j := range g {
				g[j] = scale * rng.NormFloat64()
			}
		}
		got, want := GlobalNorm(grads), scaledNorm(grads)
		if math.Abs(got-want) > 1e-13*want || want == 0 || math.IsInf(got, 0) {
			t.Errorf("scale %g: GlobalNorm %v, scaled norm %v", scale, got, want)
		}
	}
}

// TestAdamUpdateFormula compares adamUpdate with the textbook update
// (torch.optim.Adam and AdamW) for both kinds of weight decay.
func TestAdamUpdateFormula(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 37
	for _, decoupled := range []bool{false, true} {
		for _, wd := range []float64{0, 0.1} {
			w := make([]float64, n)
			g, m, v := make([]float64, n), make([]float64, n), make([]float64, n)
			for i := range w {
				w[i], g[i], m[i], v[i] = rng.NormFloat64(), rng.NormFloat64(), 0.1*rng.NormFloat64(), rng.Float64()
			}
			h := adamHyper{lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8, bc1: 1 - math.Pow(0.9, 3), bc2: 1 - math.Pow(0.999, 3), wd: wd, decoupled: decoupled}
			want := make([]float64, n)
			wm, wv := append([]float64(nil), m...), append([]float64(nil), v...)
			for i := range w {
				p, gi := w[i], g[i]
				if !decoupled {
					gi += wd * p
				}
				wm[i] = 0.9*wm[i] + 0.1*gi
				wv[i] = 0.999*wv[i] + 0.001*gi*gi
				if decoupled {
					p -= h.lr * wd * p
				}
				want[i] = p - h.lr*(wm[i]/h.bc1)/(math.Sqrt(wv[i]/h.bc2)+h.eps)
			}
			w32 := make([]float32, n)
			m32, v32 := append([]float64(nil), m...), append([]float64(nil), v...)
			for i := range w {
				w32[i] = float32(w[i])
			}
			adamUpdate(w, g, m, v, h)
			for i := range w {
				if math.Abs(w[i]-want[i]) > 1e-14 || math.Abs(m[i]-wm[i]) > 1e-15 || math.Abs(v[i]-wv[i]) > 1e-15 {
					t.Fatalf("decoupled %v wd %v: element %d: w %v m %v v %v, want %v %v %v", decoupled, wd, i, w[i], m[i], v[i], want[i], wm[i], wv[i])
				}
			}
			adamUpdate(w32, g, m32, v32, h)
			for i := range w32 {
				if math.Abs(float64(w32[i])-want[i]) > 1e-6 {
					t.Fatalf("float32: decoupled %v wd %v: element %d: %v, want %v", decoupled, wd, i, w32[i], want[i])
				}
			}
		}
	}
}

func BenchmarkAdamUpdate(b *testing.B) {
	const n = 1 << 20
	w := make([]float32, n)
	g, m, v := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range g {
		g[i] = float64(i%7) - 3
	}
	h := adamHyper{lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, bc1: 0.1, bc2: 0.001, wd: 0.01, decoupled: true}
	b.SetBytes(n * (4 + 3*8))
	for i := 0; i < b.N; i++ {
		adamUpdate(w, g, m, v, h)
	}
}

func BenchmarkAdamCheck(b *testing.B) {
	const n = 1 << 20
	w := make([]float32, n)
	g, m, v := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range g {
		g[i] = float64(i%7) - 3
	}
	h := adamHyper{lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, bc1: 0.1, bc2: 0.001, wd: 0.01, decoupled: true}
	b.SetBytes(n * (4 + 3*8))
	for i := 0; i < b.N; i++ {
		if j, _ := adamCheck(w, g, m, v, h); j >= 0 {
			b.Fatal(j)
		}
	}
}

func BenchmarkMaxAbs(b *testing.B) {
	w := make([]float32, 1<<20)
	for i := range w {
		w[i] = float32(i%7) - 3
	}
	b.SetBytes(4 << 20)
	for i := 0; i < b.N; i++ {
		if maxAbs32(w) != 3 {
			b.Fatal("maxAbs")
		}
	}
}

// TestStepReadsGradientViews checks Trainer.Step, which reads the gradients
// in place (gradView), against the update on float64 copies it replaced:
// readInto, ClipGlobalNorm, adamUpdate, bit for bit, in both dtypes, with
// and without clipping, Adam and AdamW.
func TestStepReadsGradientViews(t *testing.T) {
	t.Run("float32", testStepViews[float32])
	t.Run("float64", testStepViews[float64])
}

func testStepViews[T float](t *testing.T) {
	for _, cfg := range []Config{
		{LR: 0.1},
		{LR: 0.1, ClipNorm: 0.5},
		{Optimizer: "adamw", LR: 0.05, WeightDecay: 0.1, ClipNorm: 0.5},
	} {
		m := newLinModel(t, dtypeOf[T]())
		if err := graph.SetValue(m.x, []float64{1, 2, 3, -1, 0.5, 2}); err != nil {
			t.Fatal(err)
		}
		if err := graph.SetValue(m.y, []float64{0.3, -0.2, 1, 2}); err != nil {
			t.Fatal(err)
		}
		mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := NewTrainer(mach, cfg)
		if err != nil {
			t.Fatal(err)
		}
		def := DefaultConfig()
		params := mach.Params()
		mom, vel := make([][]float64, len(params)), make([][]float64, len(params))
		for i, p := range params {
			mom[i], vel[i] = make([]float64, p.Shape().TotalSize()), make([]float64, p.Shape().TotalSize())
		}
		for step := 1; step <= 4; step++ {
			// the reference: gradients copied to float64, clipped in place, updated
			if err := mach.Run(); err != nil {
				t.Fatal(err)
			}
			grads := make([][]float64, len(params))
			want := make([][]T, len(params))
			for i, p := range params {
				gv, _ := p.Grad()
				grads[i] = make([]float64, p.Shape().TotalSize())
				if err := readInto(grads[i], gv); err != nil {
					t.Fatal(err)
				}
				f32, f64, _ := valueView(p.Value())
				if f32 != nil {
					want[i] = any(append([]float32(nil), f32...)).([]T)
				} else {
					want[i] = any(append([]float64(nil), f64...)).([]T)
				}
			}
			if norm := ClipGlobalNorm(grads, cfg.ClipNorm); cfg.ClipNorm > 0 && !(norm > cfg.ClipNorm) {
				t.Fatalf("%+v step %d: gradient norm %v: the test wants the clipping active", cfg, step, norm)
			}
			for i := range params {
				h := adamHyper{lr: cfg.LR, beta1: def.Beta1, beta2: def.Beta2, eps: def.Eps,
					bc1: 1 - math.Pow(def.Beta1, float64(step)), bc2: 1 - math.Pow(def.Beta2, float64(step)),
					decoupled: cfg.Optimizer == "adamw"}
				if cfg.WeightDecay > 0 { // Decay nil: every parameter
					h.wd = cfg.WeightDecay
				}
				adamUpdate(want[i], grads[i], mom[i], vel[i], h)
			}
			if _, err := tr.Step(); err != nil {
				t.Fatal(err)
			}
			for i, p := range params {
				f32, f64, _ := valueView(p.Value())
				var got []T
				if f32 != nil {
					got = any(f32).([]T)
				} else {
					got = any(f64).([]T)
				}
				for j := range got {
					if got[j] != want[i][j] {
						t.Fatalf("%+v step %d: %s[%d] = %v, want %v (the update on float64 copies)", cfg, step, p.Name(), j, got[j], want[i][j])
					}
				}
			}
		}
	}
}
