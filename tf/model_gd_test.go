package tf_test

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
	"github.com/gdattn/gdattn/tf"
	G "gorgonia.org/gorgonia"
)

// Tests of the TF started at the GD construction. They need package gd,
// which package tf does not import, so they live in the external test
// package tf_test.

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

// run compiles a forward-only machine on s's graph and runs it once.
func run(t *testing.T, s *graph.Scope) {
	t.Helper()
	vm, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	if err := vm.Run(); err != nil {
		t.Fatal(err)
	}
}

func values(t *testing.T, n *G.Node) []float64 {
	t.Helper()
	v, err := graph.Values(n)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func maxAbsDiff(a, b []float64) float64 {
	m := 0.0
	for i := range a {
		m = math.Max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

// eraseRBF are the head kernels of the interleaved GD start: the model's
// kernel for the update head, the RBF kernel (g = 1, learned) for the erase
// head on λ-scaled x, which tends to the Kronecker delta as λ grows.
var eraseRBF = []layers.KernelSpec{nil, layers.RBF(1)}

// construction is gd.Construction, failing the test on error.
func construction(t testing.TB, form gd.Form, steps, d, dp, n int, alpha, lambda float64) *layers.Construction {
	t.Helper()
	c, err := gd.Construction(form, steps, d, dp, n, alpha, lambda)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fSlot returns the f block of tokens (B, T, D) as (B, T, d') values.
func fSlot(tok []float64, BT, D, off, dp int) []float64 {
	out := make([]float64, 0, BT*dp)
	for i := 0; i < BT; i++ {
		out = append(out, tok[i*D+off:i*D+off+dp]...)
	}
	return out
}

// pair builds a GD model and a TF model on the same batch, with the TF's
// W_e overwritten by the GD model's, and runs both.
func pair(t *testing.T, gcfg gd.Config, tcfg tf.Config, B int, x []float64, y []int) (*gd.Model, *tf.Model) {
	t.Helper()
	gs, _ := graph.NewScope(graph.Float64, 3)
	g, err := gd.NewModel(gs, gcfg, B)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := graph.NewScope(graph.Float64, 4)
	m, err := tf.NewModel(ts, tcfg, B)
	if err != nil {
		t.Fatal(err)
	}
	we, _ := gs.Lookup("we")
	wt, _ := ts.Lookup("we")
	if err := graph.SetValue(wt, values(t, we)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func([]float64, []int) error{g.Feed, m.Feed} {
		if err := f(x, y); err != nil {
			t.Fatal(err)
		}
	}
	run(t, gs)
	run(t, ts)
	return g, m
}

// TestInitFromGDOneStep: a 1-layer TF started at the single-step
// construction of Appendix C computes the same f (at every position) and
// the same logits as the OneStep GD model, for every kernel and for query/key
// widths narrower and wider than the token.
func TestInitFromGDOneStep(t *testing.T) {
	const B, N, d, dp, C = 4, 10, 10, 5, 25
	T := N + 1
	x, y := randomBatch(1, B, T, d, C)
	type tc struct {
		kernel string
		dk     int
	}
	var cases []tc
	for _, k := range layers.KernelNames() {
		cases = append(cases, tc{k, 0})
	}
	cases = append(cases, tc{"softmax", d}, tc{"rbf", d + 2*dp + 3})
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/DK=%d", c.kernel, c.dk), func(t *testing.T) {
			gcfg := gd.Config{D: d, DPrime: dp, C: C, N: N, Form: gd.OneStep, Kernel: layers.Builtin(c.kernel, 0.7).Fixed(),
				Alpha: 2, FixedAlpha: true}
			tcfg := tf.Config{D: d, DPrime: dp, C: C, N: N, Kernel: layers.Builtin(c.kernel, 0.7),
				DK: c.dk, Init: construction(t, gd.OneStep, 1, d, dp, N, 2, 100)}
			g, m := pair(t, gcfg, tcfg, B, x, y)
			D := tcfg.TokenDim()
			ef := maxAbsDiff(fSlot(values(t, m.Tokens[1]), B*T, D, d+dp, dp), values(t, g.F[1]))
			el := maxAbsDiff(values(t, m.Logits), values(t, g.Logits))
			t.Logf("max |f_TF - f_GD| = %.2e, max |logits_TF - logits_GD| = %.2e", ef, el)
			if ef > 1e-10 || el > 1e-10 {
				t.Errorf("TF from GD differs from GD: f %.3g, logits %.3g, want <= 1e-10", ef, el)
			}
		})
	}
}

// TestInitFromGDInterleaved: a 2-layer TF with cross-attention started at the
// interleaved construction (head 0 update, head 1 the RBF erase head on
// λ-scaled x) matches the 2-block GD model with the exact erase once λ is
// large. The erase error is measured for growing λ. f_K (at every position)
// and the logits are compared; the E block of the query token differs: the
// TF's erase head (ContextKeys: the query is never a key) leaves it in place,
// and no later step reads it. (Earlier entries of Tokens cannot be compared:
// Gorgonia reuses their memory during the run.)
func TestInitFromGDInterleaved(t *testing.T) {
	const B, N, d, dp, C, L = 4, 10, 10, 5, 25, 2
	T := N + 1
	x, y := randomBatch(2, B, T, d, C)
	for _, kern := range layers.KernelNames() {
		t.Run(kern, func(t *testing.T) {
			gcfg := gd.Config{D: d, DPrime: dp, C: C, N: N, Blocks: L, Kernel: layers.Builtin(kern, 0.7).Fixed(),
				Alpha: 2, FixedAlpha: true}
			lambdas := []float64{1, 3, 10, 100}
			errs := make([]float64, len(lambdas))
			for i, lam := range lambdas {
				tcfg := tf.Config{D: d, DPrime: dp, C: C, N: N, Layers: L, Cross: true, Kernel: layers.Builtin(kern, 0.7),
					HeadKernels: eraseRBF, Init: construction(t, gd.Interleaved, L, d, dp, N, 2, lam)}
				g, m := pair(t, gcfg, tcfg, B, x, y)
				D := tcfg.TokenDim()
				ef := maxAbsDiff(fSlot(values(t, m.Tokens[L]), B*T, D, d+2*dp, dp), values(t, g.F[L]))
				errs[i] = math.Max(ef, maxAbsDiff(values(t, m.Logits), values(t, g.Logits)))
			}
			t.Logf("max |f_TF - f_GD|, |logits_TF - logits_GD| at λ = %v: %.2e", lambdas, errs)
			if errs[len(errs)-1] > 1e-10 {
				t.Errorf("at λ = 100 the TF differs from exact GD by %.3g, want <= 1e-10", errs[len(errs)-1])
			}
			if !(errs[0] > errs[len(errs)-1]) {
				t.Errorf("erase error does not fall with λ: %v", errs)
			}
		})
	}
}

// TestInitFromGDExtraHeads: heads beyond the construction start silent
// (P = 0), so the model still computes GD exactly.
func TestInitFromGDExtraHeads(t *testing.T) {
	const B, N, d, dp, C = 2, 5, 3, 2, 4
	T := N + 1
	x, y := randomBatch(3, B, T, d, C)
	for _, cross := range []bool{false, true} {
		t.Run(fmt.Sprintf("cross=%v", cross), func(t *testing.T) {
			gcfg := gd.Config{D: d, DPrime: dp, C: C, N: N, Kernel: layers.RBF(0.7), Alpha: 2}
			tcfg := tf.Config{D: d, DPrime: dp, C: C, N: N, Cross: cross, Heads: 3, Kernel: layers.RBF(0.7),
				HeadKernels: eraseRBF, Init: construction(t, gd.Interleaved, 1, d, dp, N, 2, 1e3)}
			if !cross {
				gcfg.Form = gd.OneStep
				tcfg.HeadKernels, tcfg.Init = nil, construction(t, gd.OneStep, 1, d, dp, N, 2, 1e3)
			}
			g, m := pair(t, gcfg, tcfg, B, x, y)
			if e := maxAbsDiff(values(t, m.Logits), values(t, g.Logits)); e > 1e-10 {
				t.Errorf("max |logits_TF - logits_GD| = %.3g, want <= 1e-10", e)
			}
		})
	}
}

// TestModelGradientsGDStart checks the gradients at the GD start, where
// W_Q = W_K (see TestModelGradients for the random start).
func TestModelGradientsGDStart(t *testing.T) {
	const B, N, d, dp, C = 2, 3, 2, 2, 3
	for i, c := range []struct {
		name string
		cfg  tf.Config
		max  int // graphtest.Options.MaxElems
	}{
		{"rbf/L=2/cross/gd-start", tf.Config{D: d, DPrime: dp, C: C, N: N, Layers: 2, Cross: true,
			Kernel: layers.RBF(0.7), HeadKernels: eraseRBF, Init: construction(t, gd.Interleaved, 2, d, dp, N, 2, 2)}, 12},
		{"softmax/gd-start", tf.Config{D: d, DPrime: dp, C: C, N: N, Kernel: layers.Softmax(1),
			Init: construction(t, gd.OneStep, 1, d, dp, N, N, 100)}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			x, y := randomBatch(uint64(121+i), B, N+1, d, C) // the seeds these cases had in TestModelGradients
			build := func(s *graph.Scope) (*G.Node, error) {
				m, err := tf.NewModel(s, c.cfg, B)
				if err != nil {
					return nil, err
				}
				if err := m.Feed(x, y); err != nil {
					return nil, err
				}
				return losses.CrossEntropy(m.Logits, m.Target)
			}
			opts := graphtest.Options{Seed: 1, MaxElems: c.max}
			worst := graphtest.CheckGrad(t, build, opts)
			worst32 := graphtest.CheckGrad32(t, build, opts)
			t.Logf("max relative error: float64 %.2e, float32 %.2e", worst, worst32)
		})
	}
}
