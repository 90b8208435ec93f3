package ops

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// tiedLoss builds Σ R ⊙ TiedLogits(h, w) (or, with mul, the same through
// G.Mul and a transpose) for h (3, 4), w (5, 4) and a constant R (3, 5).
func tiedLoss(mul bool) graphtest.BuildFunc { return tiedLossSized(mul, 3, 5, 4) }

// tiedLossSized is tiedLoss for h (n, d) and w (v, d).
func tiedLossSized(mul bool, n, v, d int) graphtest.BuildFunc {
	return func(s *graph.Scope) (*G.Node, error) {
		h, err := s.Param("h", tensor.Shape{n, d}, graph.Normal(1))
		if err != nil {
			return nil, err
		}
		w, err := s.Param("w", tensor.Shape{v, d}, graph.Normal(1))
		if err != nil {
			return nil, err
		}
		r, err := s.Const("r", tensor.Shape{n, v}, graphtest.RandValues(s, n*v))
		if err != nil {
			return nil, err
		}
		var y *G.Node
		if mul {
			y, err = G.Mul(h, G.Must(G.Transpose(w)))
		} else {
			y, err = TiedLogits(h, w)
		}
		if err != nil {
			return nil, err
		}
		return G.Sum(G.Must(G.HadamardProd(y, r)))
	}
}

func TestTiedLogits(t *testing.T) {
	worst := graphtest.CheckGrad(t, tiedLoss(false), graphtest.Options{Seed: 1})
	worst32 := graphtest.CheckGrad32(t, tiedLoss(false), graphtest.Options{Seed: 1})
	t.Logf("max relative error float64 %.2e, float32 %.2e", worst, worst32)
	for _, dt := range []tensor.Dtype{graph.Float64, graph.Float32} {
		got, gg := graphtest.Gradients(t, tiedLoss(false), dt, 2)
		want, wg := graphtest.Gradients(t, tiedLoss(true), dt, 2)
		tol := 1e-12
		if dt == graph.Float32 {
			tol = 1e-5
		}
		graphtest.AllClose(t, "loss", []float64{got}, []float64{want}, tol)
		for _, name := range []string{"h", "w"} {
			graphtest.AllClose(t, name+" gradient", gg[name], wg[name], tol)
		}
	}
	// Products large enough for gemm's packed path, with edge tiles and an
	// inner dimension of several KC slices (d = 1024 > 256): n = 70 rows of
	// h, v = 150 rows of w.
	for _, dt := range []tensor.Dtype{graph.Float64, graph.Float32} {
		got, gg := graphtest.Gradients(t, tiedLossSized(false, 70, 150, 1024), dt, 3)
		want, wg := graphtest.Gradients(t, tiedLossSized(true, 70, 150, 1024), dt, 3)
		tol := 1e-9
		if dt == graph.Float32 {
			tol = 1e-3
		}
		graphtest.AllClose(t, "panelled loss", []float64{got}, []float64{want}, tol)
		for _, name := range []string{"h", "w"} {
			graphtest.AllClose(t, "panelled "+name+" gradient", gg[name], wg[name], tol)
		}
	}
	s, _ := graph.NewScope(graph.Float64, 1)
	h, _ := s.Param("h", tensor.Shape{3, 4}, graph.Zeros())
	w, _ := s.Param("w", tensor.Shape{5, 3}, graph.Zeros())
	if _, err := TiedLogits(h, w); err == nil || !strings.Contains(err.Error(), "want (N, D) and (V, D)") {
		t.Errorf("mismatched widths: got %v", err)
	}
	if _, err := TiedLogits(nil, w); err == nil {
		t.Error("nil h: got nil error")
	}
}

// TestTiedLogitsReuse runs a machine twice with new values: the reused
// buffers hold the second run's products.
func TestTiedLogitsReuse(t *testing.T) {
	s, _ := graph.NewScope(graph.Float32, 1)
	h, _ := s.Param("h", tensor.Shape{2, 3}, graph.Normal(1))
	w, _ := s.Param("w", tensor.Shape{4, 3}, graph.Normal(1))
	y, err := TiedLogits(h, w)
	if err != nil {
		t.Fatal(err)
	}
	loss := G.Must(G.Sum(y))
	m, err := graph.NewMachine(s, loss, graph.MachineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for run := 0; run < 2; run++ {
		hv := []float64{1, 2, 3, 4, 5, 6}
		wv := []float64{1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}
		for i := range hv {
			hv[i] *= float64(run + 1)
		}
		if err := graph.SetValue(h, hv); err != nil {
			t.Fatal(err)
		}
		if err := graph.SetValue(w, wv); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(); err != nil {
			t.Fatal(err)
		}
		got, _ := graph.Values(y)
		k := float64(run + 1)
		want := []float64{1 * k, 2 * k, 3 * k, 6 * k, 4 * k, 5 * k, 6 * k, 15 * k}
		graphtest.AllClose(t, "logits", got, want, 1e-6)
		gh, _ := graph.GradValues(h) // Σ_v w[v] per row: (2, 2, 2)
		graphtest.AllClose(t, "h gradient", gh, []float64{2, 2, 2, 2, 2, 2}, 1e-6)
		gw, _ := graph.GradValues(w) // Σ_n h[n] per row of w
		c := []float64{5 * k, 7 * k, 9 * k}
		graphtest.AllClose(t, "w gradient", gw, append(append(append(append([]float64{}, c...), c...), c...), c...), 1e-6)
	}
}

// BenchmarkTiedLogits times the tied output layer's three products at the
// language presets' sizes (small: N = 512, d' = 64; paper: N = 1024,
// d' = 512; V = 50,258), float32, per wall and per CPU second:
//
//	GOMAXPROCS=1 go test ./ops -run '^$' -bench TiedLogits
func BenchmarkTiedLogits(b *testing.B) {
	for _, sz := range []struct {
		name    string
		n, v, d int
	}{{"small", 512, 50258, 64}, {"paper", 1024, 50258, 512}} {
		rng := rand.New(rand.NewPCG(1, 2))
		h, w, dy := make([]float32, sz.n*sz.d), make([]float32, sz.v*sz.d), make([]float32, sz.n*sz.v)
		for _, x := range [][]float32{h, w, dy} {
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
		}
		for _, mode := range []TiedMode{TiedForward, TiedGradH, TiedGradW} {
			op := &TiedLogitsOp{n: sz.n, v: sz.v, d: sz.d, mode: mode}
			x, y := h, w
			if mode == TiedGradH {
				x, y = dy, w
			} else if mode == TiedGradW {
				x, y = dy, h
			}
			b.Run(fmt.Sprintf("%s/%v", sz.name, op), func(b *testing.B) {
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					if _, err := tiedDo(op, x, y); err != nil {
						b.Fatal(err)
					}
				}
				flops := 2 * float64(sz.n) * float64(sz.v) * float64(sz.d) * float64(b.N)
				b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				if cpu := cpuTime() - cpu0; cpu > 0 { // on a shared machine, the rate per CPU-second
					b.ReportMetric(flops/cpu.Seconds()/1e9, "GFLOP/cpu-s")
				}
			})
		}
	}
}
