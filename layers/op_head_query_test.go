package layers

import (
	"fmt"
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/ops"
)

// queryHeadSizes are the sizes of the query-head tests: the layers tests'
// small head, and one wide enough (DIn = DOut = 20, T = 37) that the full
// head's products take gemm's packed and mulAddRows' multi-row kernels.
var queryHeadSizes = []struct{ b, t, din, dk, dv, dout int }{
	{aB, aT, aDIn, aDK, aDV, aDOut},
	{6, 37, 20, 10, 20, 20},
	{32, 40, 20, 10, 20, 20}, // B·T ≥ 1024: the deep products zᵀ·gb
}

// queryMode is how queryHeadRun computes the query row.
type queryMode int

const (
	viaFull    queryMode = iota // Forward's output sliced
	viaQuery                    // ForwardQuery
	viaRegroup                  // ForwardQuery with RegroupQuery
)

// queryHeadRun builds a fused head of kernel kern in a fresh scope, applies
// Forward (full) or ForwardQuery (with or without RegroupQuery) to tokens z
// (a parameter), and returns the output at the query and the loss
// Σ r·out_query with its gradients with respect to every parameter (z, the
// matrices, g), in creation order.
func queryHeadRun(t *testing.T, dt tensor.Dtype, kern string, learnable bool, mode queryMode, b, tt, din, dk, dv, dout int, zv, rv []float64) (out []float64, loss float64, grads [][]float64) {
	t.Helper()
	s := newTestScope(t, dt)
	hs := s.Sub("block0").Sub("attn")
	k, err := NewBuiltinKernel(hs.Sub(attnKernelScope), kern, KernelConfig{Gamma: kGamma, Learnable: learnable})
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAttention(hs, AttentionConfig{DIn: din, DK: dk, DV: dv, DOut: dout, Builtin: k, Keys: ContextKeys, RegroupQuery: mode == viaRegroup})
	if err != nil {
		t.Fatal(err)
	}
	z, err := s.Param("z", tensor.Shape{b, tt, din}, graph.FromValues(zv))
	if err != nil {
		t.Fatal(err)
	}
	var o *G.Node
	if mode != viaFull {
		if o, err = a.ForwardQuery(z); err != nil {
			t.Fatal(err)
		}
		if op, ok := o.Op().(*ops.HeadOp); !ok || op.Regrouped() != (mode == viaRegroup) {
			t.Fatalf("ForwardQuery's op %v, want the fused head (regrouped: %v)", o.Op(), mode == viaRegroup)
		}
	} else {
		full, err := a.Forward(z)
		if err != nil {
			t.Fatal(err)
		}
		o = G.Must(ops.Slice(full, 1, tt-1, tt))
	}
	if want := (tensor.Shape{b, 1, dout}); !o.Shape().Eq(want) {
		t.Fatalf("query output shape %v, want %v", o.Shape(), want)
	}
	r := mustConst(t, s, "r", o.Shape(), rv)
	l := G.Must(G.Sum(G.Must(G.HadamardProd(o, r))))
	m, err := graph.NewMachine(s, l, graph.MachineOptions{Outputs: G.Nodes{o}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Run(); err != nil {
		t.Fatal(err)
	}
	if out, err = graph.Values(o); err != nil {
		t.Fatal(err)
	}
	if loss, err = graph.Scalar(l); err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Params() {
		g, err := graph.GradValues(p)
		if err != nil {
			t.Fatal(err)
		}
		grads = append(grads, g)
	}
	return out, loss, grads
}

// TestFusedHeadQueryExact checks that the query head computes the same bits
// as the full head's last row, forward and every gradient of a loss that
// reads the query only, for every fused kernel in float64 and float32.
func TestFusedHeadQueryExact(t *testing.T) {
	for _, sz := range queryHeadSizes {
		rng := newTestRand()
		zv := randn(rng, sz.b*sz.t*sz.din, 1)
		rv := randn(rng, sz.b*sz.dout, 1)
		for _, kc := range fusedKernels {
			for _, dc := range testDtypes {
				name := fmt.Sprintf("%dx%dx%d/%s/learn=%v/%s", sz.b, sz.t, sz.din, kc.name, kc.learnable, dc.name)
				t.Run(name, func(t *testing.T) {
					wantOut, wantLoss, wantGrads := queryHeadRun(t, dc.dt, kc.name, kc.learnable, viaFull, sz.b, sz.t, sz.din, sz.dk, sz.dv, sz.dout, zv, rv)
					gotOut, gotLoss, gotGrads := queryHeadRun(t, dc.dt, kc.name, kc.learnable, viaQuery, sz.b, sz.t, sz.din, sz.dk, sz.dv, sz.dout, zv, rv)
					sameBits(t, "output", gotOut, wantOut)
					sameBits(t, "loss", []float64{gotLoss}, []float64{wantLoss})
					if len(gotGrads) != len(wantGrads) {
						t.Fatalf("%d gradients, want %d", len(gotGrads), len(wantGrads))
					}
					for i := range wantGrads {
						sameBits(t, fmt.Sprintf("gradient %d", i), gotGrads[i], wantGrads[i])
					}
				})
			}
		}
	}
}

// sameBits fails t unless got and want are equal element by element (the
// values are the dtype's, widened exactly to float64).
func sameBits(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) && !(got[i] == 0 && want[i] == 0) {
			t.Fatalf("%s[%d] = %v, want %v (the full head's)", what, i, got[i], want[i])
		}
	}
}

// TestFusedHeadQueryGrad checks the query head's gradients with respect to
// its tokens, every matrix and a learnable g against finite differences, in
// float64 and float32.
func TestFusedHeadQueryGrad(t *testing.T) {
	zv := attnTokens()
	maxErr := map[tensor.Dtype]float64{}
	for _, kc := range fusedKernels {
		build := func(s *graph.Scope) (*G.Node, error) {
			a, err := fusedHead(s, kc.name, kc.learnable, ContextKeys, false)
			if err != nil {
				return nil, err
			}
			z, err := s.Param("z", tensor.Shape{aB, aT, aDIn}, graph.FromValues(zv))
			if err != nil {
				return nil, err
			}
			out, err := a.ForwardQuery(z)
			if err != nil {
				return nil, err
			}
			return weightedSum(s, "r", out)
		}
		for _, dc := range testDtypes {
			t.Run(fmt.Sprintf("%s/learn=%v/%s", kc.name, kc.learnable, dc.name), func(t *testing.T) {
				e := graphtest.CheckGradDtype(t, dc.dt, build, graphtest.Options{Seed: 1})
				maxErr[dc.dt] = math.Max(maxErr[dc.dt], e)
			})
		}
	}
	t.Logf("max gradient-check error: float64 %.3g, float32 %.3g", maxErr[tensor.Float64], maxErr[tensor.Float32])
}

// TestFusedHeadQueryRegroupedClose checks that the regrouped query head
// (RegroupQuery) computes the query head's output, loss and every gradient
// up to rounding: each value within tol·(1 + the largest magnitude of its
// tensor), tol 1e-12 in float64 and 2e-5 in float32 (the sums run in
// another order), and that it is not bit for bit the same everywhere in
// float32 (it is another computation, not the default path under a flag).
func TestFusedHeadQueryRegroupedClose(t *testing.T) {
	tols := map[tensor.Dtype]float64{tensor.Float64: 1e-12, tensor.Float32: 2e-5}
	for _, sz := range queryHeadSizes {
		rng := newTestRand()
		zv := randn(rng, sz.b*sz.t*sz.din, 1)
		rv := randn(rng, sz.b*sz.dout, 1)
		for _, kc := range fusedKernels {
			for _, dc := range testDtypes {
				name := fmt.Sprintf("%dx%dx%d/%s/learn=%v/%s", sz.b, sz.t, sz.din, kc.name, kc.learnable, dc.name)
				t.Run(name, func(t *testing.T) {
					tol := tols[dc.dt]
					wantOut, wantLoss, wantGrads := queryHeadRun(t, dc.dt, kc.name, kc.learnable, viaQuery, sz.b, sz.t, sz.din, sz.dk, sz.dv, sz.dout, zv, rv)
					gotOut, gotLoss, gotGrads := queryHeadRun(t, dc.dt, kc.name, kc.learnable, viaRegroup, sz.b, sz.t, sz.din, sz.dk, sz.dv, sz.dout, zv, rv)
					differ := closeTo(t, "output", gotOut, wantOut, tol)
					differ = closeTo(t, "loss", []float64{gotLoss}, []float64{wantLoss}, tol) || differ
					if len(gotGrads) != len(wantGrads) {
						t.Fatalf("%d gradients, want %d", len(gotGrads), len(wantGrads))
					}
					for i := range wantGrads {
						differ = closeTo(t, fmt.Sprintf("gradient %d", i), gotGrads[i], wantGrads[i], tol) || differ
					}
					regroupDiffers[dc.dt] = regroupDiffers[dc.dt] || differ
				})
			}
		}
	}
	if !regroupDiffers[tensor.Float32] {
		t.Errorf("the regrouped head gave the default's bits everywhere in float32: is it computed at all?")
	}
}

// regroupDiffers records whether a regrouped run differed in any bit from
// the default (TestFusedHeadQueryRegroupedClose).
var regroupDiffers = map[tensor.Dtype]bool{}

// closeTo fails t unless |got_i − want_i| ≤ tol·(1 + max_j |want_j|) for
// every i, and reports whether any element differs in its bits.
func closeTo(t *testing.T, what string, got, want []float64, tol float64) (differ bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 0.0
	for _, v := range want {
		scale = math.Max(scale, math.Abs(v))
	}
	for i := range want {
		if d := math.Abs(got[i] - want[i]); !(d <= tol*(1+scale)) {
			t.Fatalf("%s[%d] = %v, want %v within %.3g (scale %.3g)", what, i, got[i], want[i], tol*(1+scale), scale)
		}
		differ = differ || got[i] != want[i]
	}
	return differ
}

// TestFusedHeadQueryRegroupedGrad checks the regrouped query head's
// gradients with respect to its tokens, every matrix and a learnable g
// against finite differences, in float64 and float32.
func TestFusedHeadQueryRegroupedGrad(t *testing.T) {
	zv := attnTokens()
	maxErr := map[tensor.Dtype]float64{}
	for _, kc := range fusedKernels {
		build := func(s *graph.Scope) (*G.Node, error) {
			hs := s.Sub("block0").Sub("attn")
			k, err := NewBuiltinKernel(hs.Sub(attnKernelScope), kc.name, KernelConfig{Gamma: kGamma, Learnable: kc.learnable})
			if err != nil {
				return nil, err
			}
			a, err := NewAttention(hs, AttentionConfig{DIn: aDIn, DK: aDK, DV: aDV, DOut: aDOut, Builtin: k, Keys: ContextKeys, RegroupQuery: true})
			if err != nil {
				return nil, err
			}
			z, err := s.Param("z", tensor.Shape{aB, aT, aDIn}, graph.FromValues(zv))
			if err != nil {
				return nil, err
			}
			out, err := a.ForwardQuery(z)
			if err != nil {
				return nil, err
			}
			if op, ok := out.Op().(*ops.HeadOp); !ok || !op.Regrouped() {
				return nil, fmt.Errorf("ForwardQuery's op %v, want the regrouped fused head", out.Op())
			}
			return weightedSum(s, "r", out)
		}
		for _, dc := range testDtypes {
			t.Run(fmt.Sprintf("%s/learn=%v/%s", kc.name, kc.learnable, dc.name), func(t *testing.T) {
				e := graphtest.CheckGradDtype(t, dc.dt, build, graphtest.Options{Seed: 1})
				maxErr[dc.dt] = math.Max(maxErr[dc.dt], e)
			})
		}
	}
	t.Logf("max gradient-check error: float64 %.3g, float32 %.3g", maxErr[tensor.Float64], maxErr[tensor.Float32])
}

// TestAttentionForwardQueryFallback checks that ForwardQuery of a head that
// is not fused (a kernel function, or all keys) is the last row of Forward.
func TestAttentionForwardQueryFallback(t *testing.T) {
	zv := attnTokens()
	for _, keys := range []KeyMode{AllKeys, ContextKeys} {
		t.Run(keys.String(), func(t *testing.T) {
			s := newTestScope(t, tensor.Float64)
			hs := s.Sub("block0").Sub("attn")
			k, err := NewBuiltinKernel(hs.Sub(attnKernelScope), KernelSoftmax, KernelConfig{Gamma: kGamma})
			if err != nil {
				t.Fatal(err)
			}
			cfg := AttentionConfig{DIn: aDIn, DK: aDK, DV: aDV, DOut: aDOut, Builtin: k, Keys: keys}
			if keys == ContextKeys {
				cfg.Builtin, cfg.Kernel = nil, k.Kernel
			}
			a, err := NewAttention(hs, cfg)
			if err != nil {
				t.Fatal(err)
			}
			z := mustConst(t, s, "z", tensor.Shape{aB, aT, aDIn}, zv)
			full, err := a.Forward(z)
			if err != nil {
				t.Fatal(err)
			}
			q, err := a.ForwardQuery(z)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := q.Op().(*ops.HeadOp); ok {
				t.Fatalf("ForwardQuery of an unfused head is a fused head")
			}
			m, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if err := m.Run(); err != nil {
				t.Fatal(err)
			}
			fv, _ := graph.Values(full)
			qv, _ := graph.Values(q)
			for b := 0; b < aB; b++ {
				sameBits(t, "query row", qv[b*aDOut:(b+1)*aDOut], fv[(b*aT+aT-1)*aDOut:(b*aT+aT)*aDOut])
			}
		})
	}
}
