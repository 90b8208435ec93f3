package gd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	G "gorgonia.org/gorgonia"
)

// randomBatch draws x ~ U(-1, 1) and labels uniformly, seeded.
func randomBatch(seed uint64, B, T, d, C int) ([]float64, []int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	x := make([]float64, B*T*d)
	for i := range x {
		x[i] = 2*rng.Float64() - 1
	}
	y := make([]int, B*T)
	for i := range y {
		y[i] = rng.IntN(C)
	}
	return x, y
}

// runForward builds m, feeds it, runs one forward pass.
func runForward(t *testing.T, cfg Config, B int, seed uint64, x []float64, y []int) *Model {
	t.Helper()
	s, err := graph.NewScope(graph.Float64, seed)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(s, cfg, B)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Feed(x, y); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(s.Graph(), G.TraceExec())
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	return m
}

// approx is the comparison used by the exactness tests: absolute 1e-10.
var approx = cmpopts.EquateApprox(0, 1e-10)

func maxAbsDiff(a, b []float64) float64 {
	m := 0.0
	for i := range a {
		m = math.Max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

func TestModelMatchesReference(t *testing.T) {
	const B, N, d, dp, C = 4, 10, 10, 5, 25
	T := N + 1
	for _, literal := range []bool{false, true} {
		for _, kern := range layers.KernelNames() {
			for K := 1; K <= 6; K++ {
				t.Run(fmt.Sprintf("literal=%v/%s/K=%d", literal, kern, K), func(t *testing.T) {
					x, y := randomBatch(uint64(K), B, T, d, C)
					cfg := Config{D: d, DPrime: dp, C: C, N: N, Blocks: K, Kernel: layers.Builtin(kern, 0.7), Alpha: 2, Literal: literal}
					m := runForward(t, cfg, B, 3, x, y)
					we, _ := graph.Values(m.We)
					ref, err := Reference(x, y, B, T, d, we, dp, C, ReferenceConfig{Steps: K, Alpha: 2, Kernel: kern, Gamma: 0.7})
					if err != nil {
						t.Fatal(err)
					}
					worst := 0.0
					for k := 0; k <= K; k++ {
						got, _ := graph.Values(m.F[k])
						worst = math.Max(worst, maxAbsDiff(got, ref.F[k]))
					}
					t.Logf("max abs error %.3g", worst)
					for k := 0; k <= K; k++ {
						got, _ := graph.Values(m.F[k])
						if diff := cmp.Diff(ref.F[k], got, approx); diff != "" {
							t.Errorf("f after %d steps differs from the reference (max %.3g; -ref +model):\n%s", k, worst, diff)
						}
					}
				})
			}
		}
	}
}

// TestModelVariantsMatchReference covers the single-step form (Appendix C),
// the bias variant (Appendix B) and multi-head updates (Appendix H).
func TestModelVariantsMatchReference(t *testing.T) {
	const B, N, d, dp, C = 4, 10, 10, 5, 25
	T := N + 1
	for _, kern := range layers.KernelNames() {
		cases := []struct {
			name string
			cfg  Config
			ref  ReferenceConfig
		}{
			{"onestep", Config{Form: OneStep}, ReferenceConfig{Steps: 1}},
			{"bias/K=3", Config{Blocks: 3, Bias: true}, ReferenceConfig{Steps: 3, Bias: true}},
			{"zerocolumn/K=2", Config{Blocks: 2, ZeroColumn: true}, ReferenceConfig{Steps: 2}},
			{"heads=3/K=2", Config{Blocks: 2, Heads: 3}, ReferenceConfig{Steps: 2}},
			{"literal/onestep", Config{Form: OneStep, Literal: true}, ReferenceConfig{Steps: 1}},
			{"literal/bias/K=3", Config{Blocks: 3, Bias: true, Literal: true}, ReferenceConfig{Steps: 3, Bias: true}},
			{"literal/heads=3/K=2", Config{Blocks: 2, Heads: 3, Literal: true}, ReferenceConfig{Steps: 2}},
		}
		for _, tc := range cases {
			t.Run(kern+"/"+tc.name, func(t *testing.T) {
				x, y := randomBatch(5, B, T, d, C)
				cfg := tc.cfg
				cfg.D, cfg.DPrime, cfg.C, cfg.N, cfg.Kernel, cfg.Alpha = d, dp, C, N, layers.Builtin(kern, 0.7), 2
				m := runForward(t, cfg, B, 3, x, y)
				we, _ := graph.Values(m.We)
				rc := tc.ref
				rc.Alpha, rc.Kernel, rc.Gamma = 2, kern, 0.7
				for h := 0; h < cfg.Heads; h++ {
					lam, _ := m.Scope().Lookup(fmt.Sprintf("head%d/lambda", h))
					p, _ := m.Scope().Lookup(fmt.Sprintf("head%d/p", h))
					lv, _ := graph.Values(lam)
					pv, _ := graph.Values(p)
					rc.Heads = append(rc.Heads, RefHead{Lambda: lv, P: pv})
				}
				ref, err := Reference(x, y, B, T, d, we, dp, C, rc)
				if err != nil {
					t.Fatal(err)
				}
				worst := 0.0
				for k := range m.F {
					got, _ := graph.Values(m.F[k])
					worst = math.Max(worst, maxAbsDiff(got, ref.F[k]))
				}
				if worst > 1e-10 {
					t.Errorf("max |f_model - f_ref| = %.3g, want <= 1e-10", worst)
				}
			})
		}
	}
}

// TestModelFloat32 runs the same construction in float32 and compares with
// the float64 reference at float32 precision.
func TestModelFloat32(t *testing.T) {
	const B, N, d, dp, C, K = 4, 10, 10, 5, 25, 3
	T := N + 1
	for _, kern := range layers.KernelNames() {
		t.Run(kern, func(t *testing.T) {
			x, y := randomBatch(9, B, T, d, C)
			s, _ := graph.NewScope(graph.Float32, 3)
			m, err := NewModel(s, Config{D: d, DPrime: dp, C: C, N: N, Blocks: K, Kernel: layers.Builtin(kern, 0.7), Alpha: 2}, B)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Feed(x, y); err != nil {
				t.Fatal(err)
			}
			vm := G.NewTapeMachine(s.Graph(), G.TraceExec())
			defer vm.Close()
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			we, _ := graph.Values(m.We)
			ref, err := Reference(x, y, B, T, d, we, dp, C, ReferenceConfig{Steps: K, Alpha: 2, Kernel: kern, Gamma: 0.7})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := graph.Values(m.F[K])
			if e := maxAbsDiff(got, ref.F[K]); e > 1e-4 {
				t.Errorf("float32 max |f - f_ref| = %.3g, want <= 1e-4", e)
			}
		})
	}
}

func nan() float64 { return math.NaN() }

func contains(s, sub string) bool { return strings.Contains(s, sub) }
