package tf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/losses"
	G "gorgonia.org/gorgonia"
)

func regressionBatch(seed uint64, B, T, d, dy int) ([]float64, []float64) {
	rng := rand.New(rand.NewPCG(seed, 5))
	x := make([]float64, B*T*d)
	for i := range x {
		x[i] = 2*rng.Float64() - 1
	}
	y := make([]float64, B*T*dy)
	for i := range y {
		y[i] = rng.NormFloat64()
	}
	return x, y
}

// TestRegressorGradients checks every parameter of the regression TF
// (linear and softmax attention, 2 layers, 2 heads) against finite
// differences, float64 and float32.
func TestRegressorGradients(t *testing.T) {
	const B, N, d, dy = 2, 3, 2, 2
	for _, k := range []layers.KernelSpec{layers.Linear(), layers.Softmax(1)} {
		cfg := RegressorConfig{D: d, DY: dy, N: N, Layers: 2, Heads: 2, Kernel: k, WInit: graph.Normal(0.4)}
		x, y := regressionBatch(1, B, N+1, d, dy)
		build := func(s *graph.Scope) (*G.Node, error) {
			m, err := NewRegressor(s, cfg, B)
			if err != nil {
				return nil, err
			}
			if err := m.FeedReal(x, y); err != nil {
				return nil, err
			}
			return losses.MSE(m.Pred, m.Target)
		}
		t.Run(k.Name(), func(t *testing.T) {
			w := graphtest.CheckGrad(t, build, graphtest.Options{Seed: 1})
			w32 := graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 1})
			t.Logf("max relative error: float64 %.2e, float32 %.2e", w, w32)
		})
	}
}

// TestRegressorIsGaussianGD: linear self-attention given the Gaussian GD
// construction (W_Q = W_K select x, W_V = (α/N)(select y − select f) into
// the f slot, P = I, R selects f) computes the Gaussian GD model's
// prediction, for K = 1, 2, 3 layers = steps.
func TestRegressorIsGaussianGD(t *testing.T) {
	const B, N, d, dy, alpha = 3, 5, 3, 2, 0.7
	T, D := N+1, d+2*dy
	for K := 1; K <= 3; K++ {
		t.Run(fmt.Sprint("K=", K), func(t *testing.T) {
			x, y := regressionBatch(uint64(K), B, T, d, dy)
			s, _ := graph.NewScope(graph.Float64, 1)
			m, err := NewRegressor(s, RegressorConfig{D: d, DY: dy, N: N, Layers: K}, B)
			if err != nil {
				t.Fatal(err)
			}
			mat := func(f func(r, c int) float64, rows, cols int) []float64 {
				out := make([]float64, rows*cols)
				for r := 0; r < rows; r++ {
					for c := 0; c < cols; c++ {
						out[r*cols+c] = f(r, c)
					}
				}
				return out
			}
			sel := mat(func(r, c int) float64 { return b2f(r == c && r < d) }, D, D)
			wv := mat(func(r, c int) float64 {
				switch {
				case c >= d+dy && r == c-dy: // y → f slot
					return alpha / N
				case c >= d+dy && r == c: // −f → f slot
					return -alpha / N
				}
				return 0
			}, D, D)
			eye := mat(func(r, c int) float64 { return b2f(r == c) }, D, D)
			set := func(name string, v []float64) {
				n, ok := s.Lookup(name)
				if !ok {
					t.Fatalf("no parameter %s", name)
				}
				if err := graph.SetValue(n, v); err != nil {
					t.Fatal(err)
				}
			}
			for l := 0; l < K; l++ {
				p := fmt.Sprintf("layer%d/head0/", l)
				set(p+"wq", sel)
				set(p+"wk", sel)
				set(p+"wv", wv)
				set(p+"wo", eye)
			}
			set("readout", mat(func(r, c int) float64 { return b2f(r == d+dy+c) }, D, dy))
			if err := m.FeedReal(x, y); err != nil {
				t.Fatal(err)
			}
			vm := G.NewTapeMachine(s.Graph())
			defer vm.Close()
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			got, _ := graph.Values(m.Pred)
			ref, err := gd.ReferenceReal(x, y, B, T, d, dy, nil, gd.ReferenceConfig{Steps: K, Alpha: alpha, Kernel: "linear"})
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for i := range got {
				worst = math.Max(worst, math.Abs(got[i]-ref.Pred[i]))
			}
			if worst > 1e-12 {
				t.Errorf("max |ŷ_TF − ŷ_GD| = %.3g, want <= 1e-12", worst)
			}
		})
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func TestRegressorErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	for _, cfg := range []RegressorConfig{{DY: 1, N: 2}, {D: 1, N: 2}, {D: 1, DY: 1}, {D: 1, DY: 1, N: 2, Layers: -1}} {
		if _, err := NewRegressor(s.Sub(fmt.Sprint(cfg)), cfg, 1); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
	m, err := NewRegressor(s.Sub("ok"), RegressorConfig{D: 1, DY: 1, N: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Feed(make([]float64, 3), make([]int, 3)); err == nil {
		t.Errorf("Feed: no error")
	}
	if err := m.FeedReal(make([]float64, 3), []float64{math.NaN(), 0, 0}); err == nil {
		t.Errorf("NaN context target: no error")
	}
	if err := m.FeedReal(make([]float64, 3), []float64{0, 0, math.NaN()}); err != nil {
		t.Errorf("NaN query target: %v", err)
	}
}

// regressorPred feeds m and returns its prediction from a forward machine.
func regressorPred(t *testing.T, m *Regressor, x, y []float64) []float64 {
	t.Helper()
	if err := m.FeedReal(x, y); err != nil {
		t.Fatal(err)
	}
	vm, err := graph.NewMachine(m.Scope(), nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{m.Pred}})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	if err := vm.Run(); err != nil {
		t.Fatal(err)
	}
	p, _ := graph.Values(m.Pred)
	return append([]float64(nil), p...)
}

// TestRegressorSaveLoad: a 2-layer, 2-head softmax Regressor survives
// Save/LoadRegressor with identical predictions; its config is strict.
func TestRegressorSaveLoad(t *testing.T) {
	const B, N, d, dy = 3, 4, 2, 2
	s, _ := graph.NewScope(graph.Float64, 2)
	m, err := NewRegressor(s.Sub("reg"), RegressorConfig{D: d, DY: dy, N: N, Layers: 2, Heads: 2, Kernel: layers.Softmax(0.7)}, B)
	if err != nil {
		t.Fatal(err)
	}
	x, y := regressionBatch(4, B, N+1, d, dy)
	want := regressorPred(t, m, x, y)
	dir := t.TempDir() + "/ckpt"
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	m2, err := LoadRegressor(dir, B)
	if err != nil {
		t.Fatal(err)
	}
	got := regressorPred(t, m2, x, y)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("prediction %d: %v after loading, %v before", i, got[i], want[i])
		}
	}
	if _, err := Load(dir, B); err == nil {
		t.Errorf("tf.Load of a Regressor checkpoint: no error")
	}
	var c RegressorConfig
	if err := c.UnmarshalJSON([]byte(`{"d": 2, "d_y": 1, "n": 3, "D": 4}`)); err == nil {
		t.Errorf("unknown key: no error")
	}
}
