package train

import (
	"math"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
)

// TestParamDtypeMoments: with Config.ParamDtypeMoments a float32 model
// keeps float32 moments: the parameters follow a reference update that
// rounds each new moment to float32 (and stay within float32 rounding of the
// float64-moment run); State holds float32 values; a state with float64
// moments (an older checkpoint) loads, rounded, and one whose moments
// overflow float32 is refused. A float64 model is unaffected.
func TestParamDtypeMoments(t *testing.T) {
	cfg := Config{Optimizer: "adamw", LR: 0.05, WeightDecay: 0.1, ClipNorm: 3}
	cfg32 := cfg
	cfg32.ParamDtypeMoments = true
	w0 := []float64{4, -3, 0.25, 10}
	a := newQuad(t, graph.Float32, w0)
	ta := must(NewTrainer(a.mach, cfg32))
	b := newQuad(t, graph.Float32, w0)
	tb := must(NewTrainer(b.mach, cfg))
	if ta.mv[0].m32 == nil || tb.mv[0].m32 != nil {
		t.Fatal("moments: want float32 with ParamDtypeMoments, float64 without")
	}

	// The reference: the quad's gradients (w − c for w, b for b), clipped
	// by their global norm, Adam with float32 moments written out.
	c := []float64{1, -2, 3, 0.5}
	w := append([]float64(nil), w0...)
	for i := range w {
		w[i] = float64(float32(w[i]))
	}
	bias := 0.5
	m := make([]float32, 5)
	v := make([]float32, 5)
	for n := 1; n <= 6; n++ {
		must(ta.Step())
		must(tb.Step())
		g := []float64{w[0] - c[0], w[1] - c[1], w[2] - c[2], w[3] - c[3], bias}
		ss := 0.0
		for _, x := range g {
			x = float64(float32(x))
			ss += x * x
		}
		scale := 1.0
		if norm := math.Sqrt(ss); norm > cfg.ClipNorm {
			scale = cfg.ClipNorm / norm
		}
		bc1, bc2 := 1-math.Pow(0.9, float64(n)), 1-math.Pow(0.999, float64(n))
		p := append(append([]float64(nil), w...), bias)
		for i := range p {
			gi := float64(float64(float32(g[i])) * scale)
			mi := 0.9*float64(m[i]) + (1-0.9)*gi
			vi := 0.999*float64(v[i]) + (1-0.999)*gi*gi
			m[i], v[i] = float32(mi), float32(vi)
			keep := 1 - cfg.LR*cfg.WeightDecay
			p[i] = float64(float32(p[i]*keep - cfg.LR/bc1*mi/(math.Sqrt(vi)/math.Sqrt(bc2)+1e-8)))
		}
		copy(w, p[:4])
		bias = p[4]
		got := append(must(graph.Values(a.w)), must(graph.Values(a.b))...)
		for i := range got {
			if math.Abs(got[i]-p[i]) > 1e-6*math.Max(1, math.Abs(p[i])) {
				t.Fatalf("step %d: parameter %d = %v, reference %v", n, i, got[i], p[i])
			}
		}
		other := append(must(graph.Values(b.w)), must(graph.Values(b.b))...)
		for i := range got {
			if math.Abs(got[i]-other[i]) > 1e-5*math.Max(1, math.Abs(other[i])) {
				t.Fatalf("step %d: parameter %d = %v with float32 moments, %v with float64", n, i, got[i], other[i])
			}
		}
	}
	st := mustState(ta)
	for name, ms := range st.M {
		for j, x := range append(append([]float64(nil), ms...), st.V[name]...) {
			if x != float64(float32(x)) {
				t.Fatalf("State: moment %s[%d] = %v is not a float32 value", name, j, x)
			}
		}
	}

	// float64 moments (an older checkpoint) into float32 storage: rounded.
	st64 := mustState(tb)
	if err := ta.SetState(st64); err != nil {
		t.Fatal(err)
	}
	back := mustState(ta)
	for name, ms := range st64.M {
		for j, x := range ms {
			if back.M[name][j] != float64(float32(x)) || back.V[name][j] != float64(float32(st64.V[name][j])) {
				t.Fatalf("SetState: %s[%d] = %v, %v; want %v, %v rounded to float32", name, j, back.M[name][j], back.V[name][j], x, st64.V[name][j])
			}
		}
	}
	bad := mustState(tb)
	bad.V["b"] = []float64{1e39}
	if err := ta.SetState(bad); err == nil || !strings.Contains(err.Error(), "overflows") {
		t.Errorf("SetState with a moment beyond float32: %v", err)
	}
	if again := mustState(ta); again.V["b"][0] != back.V["b"][0] {
		t.Error("a refused SetState changed the moments")
	}

	// float64 parameters keep float64 moments.
	d := newQuad(t, graph.Float64, w0)
	td := must(NewTrainer(d.mach, cfg32))
	if td.mv[0].m64 == nil {
		t.Error("float64 model: moments not float64 with ParamDtypeMoments")
	}
}
