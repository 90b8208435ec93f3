package layers

import (
	"fmt"
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
)

// Attention test sizes: B sequences of T = N+1 tokens of DIn features; the
// forward tests use distinct DK, DV, DOut so that a transposed or swapped
// matrix cannot go unnoticed.
const (
	aB, aT, aDIn    = 2, 4, 3
	aDK, aDV, aDOut = 2, 4, 5
	attnPath        = "block0/attn"
	attnKernelScope = "kernel"
)

// attnKernel is one kernel of the attention tests: ref names it for
// refKernel, make builds it in the head's scope.
type attnKernel struct {
	name string
	ref  string
	make func(s *graph.Scope) (Kernel, error)
}

// named returns the NewKernel kernel name with g = kGamma.
func named(name string, learnable bool) func(s *graph.Scope) (Kernel, error) {
	return func(s *graph.Scope) (Kernel, error) {
		return NewKernel(s.Sub(attnKernelScope), name, KernelConfig{Gamma: kGamma, Learnable: learnable})
	}
}

var attnKernels = []attnKernel{
	{"linear", KernelLinear, named(KernelLinear, false)},
	{"rbf", KernelRBF, named(KernelRBF, false)},
	{"rbf/learnable", KernelRBF, named(KernelRBF, true)},
	{"exp", KernelExp, named(KernelExp, false)},
	{"exp/learnable", KernelExp, named(KernelExp, true)},
	{"laplacian", KernelLaplacian, named(KernelLaplacian, false)},
	{"laplacian/learnable", KernelLaplacian, named(KernelLaplacian, true)},
	{"softmax", KernelSoftmax, named(KernelSoftmax, false)},
	{"softmax/learnable", KernelSoftmax, named(KernelSoftmax, true)},
	{"delta", refDelta, func(*graph.Scope) (Kernel, error) { return DeltaKernel(), nil }},
	{"rbf+bias", refRBFBias, func(s *graph.Scope) (Kernel, error) {
		k, err := named(KernelRBF, false)(s)
		if err != nil {
			return nil, err
		}
		return WithBias(k), nil
	}},
}

var keyModes = []KeyMode{ContextKeys, AllKeys, CausalKeys}

// keyVisible is the (query j, key i) pattern of a key mode over T positions:
// ContextKeys keys are the positions 0..T-2 (never the query T-1), AllKeys
// every position, CausalKeys the positions i < j.
func keyVisible(m KeyMode, t int) func(j, i int) bool {
	switch m {
	case ContextKeys:
		return func(_, i int) bool { return i < t-1 }
	case CausalKeys:
		return func(j, i int) bool { return i < j }
	}
	return func(int, int) bool { return true }
}

// matMul returns a (n×k) · b (k×m), row-major.
func matMul(a, b []float64, n, k, m int) []float64 {
	out := make([]float64, n*m)
	for i := 0; i < n; i++ {
		for j := 0; j < m; j++ {
			var s float64
			for l := 0; l < k; l++ {
				s += a[i*k+l] * b[l*m+j]
			}
			out[i*m+j] = s
		}
	}
	return out
}

// refAttention is the head in plain Go:
// out_j = (Σ_{i ∈ keys(j)} κ(z_j W_Q, z_i W_K) z_i W_V) P for z (b, t, din).
func refAttention(kern string, g float64, keys KeyMode, z, wq, wk, wv, wo []float64, b, t, din, dk, dv, dout int) []float64 {
	var out []float64
	for bb := 0; bb < b; bb++ {
		zb := z[bb*t*din : (bb+1)*t*din]
		q, k, v := matMul(zb, wq, t, din, dk), matMul(zb, wk, t, din, dk), matMul(zb, wv, t, din, dv)
		// Weights over all t positions; invisible keys get 0, which is what
		// slicing the keys (ContextKeys) or masking them (CausalKeys) gives.
		w := refKernel(kern, g, q, k, t, t, dk, keyVisible(keys, t))
		out = append(out, matMul(matMul(w, v, t, t, dv), wo, t, dv, dout)...)
	}
	return out
}

// attnTokens draws the test tokens z (aB, aT, aDIn) from N(0, 1).
func attnTokens() []float64 { return randn(newTestRand(), aB*aT*aDIn, 1) }

func TestAttentionForward(t *testing.T) {
	zv := attnTokens()
	for _, kc := range attnKernels {
		for _, keys := range keyModes {
			for _, dc := range testDtypes {
				t.Run(fmt.Sprintf("%s/%v/%s", kc.name, keys, dc.name), func(t *testing.T) {
					s := newTestScope(t, dc.dt)
					hs := s.Sub("block0").Sub("attn")
					kern, err := kc.make(hs)
					if err != nil {
						t.Fatal(err)
					}
					a, err := NewAttention(hs, AttentionConfig{DIn: aDIn, DK: aDK, DV: aDV, DOut: aDOut, Kernel: kern, Keys: keys})
					if err != nil {
						t.Fatal(err)
					}
					z := mustConst(t, s, "z", tensor.Shape{aB, aT, aDIn}, zv)
					out, err := a.Forward(z)
					if err != nil {
						t.Fatal(err)
					}
					if want := (tensor.Shape{aB, aT, aDOut}); !out.Shape().Eq(want) {
						t.Fatalf("output shape %v, want %v", out.Shape(), want)
					}
					wq, wk, wv, wo := a.Matrices()
					vals := runNodes(t, s, out, wq, wk, wv, wo)
					want := refAttention(kc.ref, kGamma, keys, rounded(dc.dt, zv), vals[1], vals[2], vals[3], vals[4], aB, aT, aDIn, aDK, aDV, aDOut)
					graphtest.AllClose(t, "output", vals[0], want, dc.tol)
					if keys == CausalKeys { // position 0 sees no key
						for bb := 0; bb < aB; bb++ {
							for c, v := range vals[0][bb*aT*aDOut : bb*aT*aDOut+aDOut] {
								if v != 0 {
									t.Errorf("causal: sequence %d position 0 output[%d] = %v, want exactly 0", bb, c, v)
								}
							}
						}
					}
				})
			}
		}
	}
}

// attnOutput runs a head (created matrices, seed 1) on the tokens zv and
// returns its output; the same seed gives the same matrices on every call.
func attnOutput(t *testing.T, kern func(*graph.Scope) (Kernel, error), keys KeyMode, zv []float64) []float64 {
	t.Helper()
	build := func(s *graph.Scope) (*G.Node, error) {
		hs := s.Sub("block0").Sub("attn")
		k, err := kern(hs)
		if err != nil {
			return nil, err
		}
		a, err := NewAttention(hs, AttentionConfig{DIn: aDIn, Kernel: k, Keys: keys})
		if err != nil {
			return nil, err
		}
		z, err := s.Const("z", tensor.Shape{aB, aT, aDIn}, zv)
		if err != nil {
			return nil, err
		}
		return a.Forward(z)
	}
	return graphtest.Forward(t, build, tensor.Float64, 1)
}

// TestAttentionQueryIsNeverAKey changes only the query token (the last
// position of every sequence): with ContextKeys the outputs of the other
// positions must not move at all, since the query is never a key or value;
// with AllKeys they must (which shows the test can see a difference).
func TestAttentionQueryIsNeverAKey(t *testing.T) {
	zv := attnTokens()
	zq := append([]float64(nil), zv...)
	for bb := 0; bb < aB; bb++ {
		for c := 0; c < aDIn; c++ {
			zq[(bb*aT+aT-1)*aDIn+c] += 1.5 // a new query token
		}
	}
	for _, kc := range attnKernels {
		if kc.ref == refDelta {
			continue // the delta kernel ignores q and k, so AllKeys would not see the change either
		}
		for _, keys := range []KeyMode{ContextKeys, AllKeys} {
			t.Run(fmt.Sprintf("%s/%v", kc.name, keys), func(t *testing.T) {
				before, after := attnOutput(t, kc.make, keys, zv), attnOutput(t, kc.make, keys, zq)
				var otherDiff, queryDiff float64
				for bb := 0; bb < aB; bb++ {
					for j := 0; j < aT; j++ {
						for c := 0; c < aDIn; c++ {
							o := (bb*aT+j)*aDIn + c
							d := math.Abs(after[o] - before[o])
							if j == aT-1 {
								queryDiff = math.Max(queryDiff, d)
							} else {
								otherDiff = math.Max(otherDiff, d)
							}
						}
					}
				}
				if queryDiff < 1e-6 {
					t.Errorf("the query's own output did not change (max change %g)", queryDiff)
				}
				switch keys {
				case ContextKeys:
					if otherDiff != 0 {
						t.Errorf("changing the query moved the context outputs by up to %g, want exactly 0", otherDiff)
					}
				case AllKeys:
					if otherDiff < 1e-6 {
						t.Errorf("AllKeys: changing the query moved the context outputs by only %g", otherDiff)
					}
				}
			})
		}
	}
}

// TestAttentionEraseHead checks the two forms of the paper's erase head
// (Section 3.2.2): with AllKeys, the delta kernel gives out_j = z_j W_V P
// exactly, and an RBF kernel on λ-scaled tokens (W_Q = W_K = λI) reaches the
// same output up to exp(-λ² min_{i≠j} ||z_i − z_j||²).
func TestAttentionEraseHead(t *testing.T) {
	zv := attnTokens()
	const lambda = 30.0
	minD2 := math.Inf(1)
	for bb := 0; bb < aB; bb++ {
		for j := 0; j < aT; j++ {
			for i := 0; i < j; i++ {
				var d2 float64
				for c := 0; c < aDIn; c++ {
					d := zv[(bb*aT+j)*aDIn+c] - zv[(bb*aT+i)*aDIn+c]
					d2 += d * d
				}
				minD2 = math.Min(minD2, d2)
			}
		}
	}
	// Off-diagonal RBF weights are at most exp(-λ² minD2); keep the bound
	// far below the tolerance so the test checks the construction.
	if bound := math.Exp(-lambda * lambda * minD2); bound > 1e-14 {
		t.Fatalf("tokens too close for λ = %v: off-diagonal weights up to %g", lambda, bound)
	}
	rng := newTestRand()
	wvVals, pVals := randn(rng, aDIn*aDV, 1), randn(rng, aDV*aDOut, 1)
	eye := make([]float64, aDIn*aDIn)
	for i := 0; i < aDIn; i++ {
		eye[i*aDIn+i] = lambda
	}
	for _, dc := range testDtypes {
		t.Run(dc.name, func(t *testing.T) {
			s := newTestScope(t, dc.dt)
			z := mustConst(t, s, "z", tensor.Shape{aB, aT, aDIn}, zv)
			wv := mustConst(t, s, "wv", tensor.Shape{aDIn, aDV}, wvVals)
			p := mustConst(t, s, "p", tensor.Shape{aDV, aDOut}, pVals)
			lam := mustConst(t, s, "lambda_eye", tensor.Shape{aDIn, aDIn}, eye)
			rbf, err := NewKernel(s, KernelRBF, KernelConfig{Gamma: 1})
			if err != nil {
				t.Fatal(err)
			}
			var outs []*G.Node
			for _, cfg := range []AttentionConfig{
				{DIn: aDIn, DOut: aDOut, DV: aDV, Kernel: DeltaKernel(), Keys: AllKeys, WQ: lam, TieQK: true, WV: wv, P: p},
				{DIn: aDIn, DOut: aDOut, DV: aDV, Kernel: rbf, Keys: AllKeys, WQ: lam, TieQK: true, WV: wv, P: p},
			} {
				a, err := NewAttention(s.Sub(fmt.Sprintf("erase%d", len(outs))), cfg)
				if err != nil {
					t.Fatal(err)
				}
				out, err := a.Forward(z)
				if err != nil {
					t.Fatal(err)
				}
				outs = append(outs, out)
			}
			if ps := s.ParamNames(); len(ps) != 0 {
				t.Errorf("erase heads with every matrix given created parameters %v", ps)
			}
			vals := runNodes(t, s, outs[0], outs[1])
			// out_j = z_j W_V P
			zr, wvr, pr := rounded(dc.dt, zv), rounded(dc.dt, wvVals), rounded(dc.dt, pVals)
			want := matMul(matMul(zr, wvr, aB*aT, aDIn, aDV), pr, aB*aT, aDV, aDOut)
			graphtest.AllClose(t, "delta erase head", vals[0], want, dc.tol)
			graphtest.AllClose(t, "λ-scaled RBF erase head", vals[1], want, dc.tol)
		})
	}
}

// TestAttentionForwardTwice calls Forward twice on the same head (in one
// graph): both calls must succeed and agree, for every key mode.
func TestAttentionForwardTwice(t *testing.T) {
	zv := attnTokens()
	for _, keys := range keyModes {
		t.Run(keys.String(), func(t *testing.T) {
			s := newTestScope(t, tensor.Float64)
			kern, err := NewKernel(s, KernelSoftmax, KernelConfig{})
			if err != nil {
				t.Fatal(err)
			}
			a, err := NewAttention(s.Sub("attn"), AttentionConfig{DIn: aDIn, Kernel: kern, Keys: keys})
			if err != nil {
				t.Fatal(err)
			}
			z := mustConst(t, s, "z", tensor.Shape{aB, aT, aDIn}, zv)
			o1, err := a.Forward(z)
			if err != nil {
				t.Fatalf("first Forward: %v", err)
			}
			o2, err := a.Forward(z)
			if err != nil {
				t.Fatalf("second Forward: %v", err)
			}
			// A different batch size in the same graph as well.
			z1 := mustConst(t, s, "z1", tensor.Shape{1, aT, aDIn}, zv[:aT*aDIn])
			o3, err := a.Forward(z1)
			if err != nil {
				t.Fatalf("Forward with B = 1: %v", err)
			}
			vals := runNodes(t, s, o1, o2, o3)
			graphtest.AllClose(t, "second output", vals[1], vals[0], 0)
			graphtest.AllClose(t, "B = 1 output", vals[2], vals[0][:aT*aDIn], 1e-15)
		})
	}
}

func TestAttentionParams(t *testing.T) {
	p := func(names ...string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = attnPath + "/" + n
		}
		return out
	}
	for _, tc := range []struct {
		name string
		// given lists the matrices passed in the config ("wq", "wk", "wv", "wo").
		given  []string
		tieQK  bool
		want   []string // Params, in creation order
		tiedQK bool     // Matrices() must return the same node for W_Q and W_K
	}{
		{name: "all_created", want: p("wq", "wk", "wv", "wo")},
		{name: "wq_given", given: []string{"wq"}, want: p("wk", "wv", "wo")},
		{name: "wv_p_given", given: []string{"wv", "wo"}, want: p("wq", "wk")},
		{name: "all_given", given: []string{"wq", "wk", "wv", "wo"}, want: nil},
		{name: "tie_created", tieQK: true, want: p("wq", "wv", "wo"), tiedQK: true},
		{name: "tie_given", given: []string{"wq"}, tieQK: true, want: p("wv", "wo"), tiedQK: true},
		{name: "tie_given_same_wk", given: []string{"wq", "wk=wq"}, tieQK: true, want: p("wv", "wo"), tiedQK: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestScope(t, tensor.Float64)
			cfg := AttentionConfig{DIn: aDIn, DK: aDK, DV: aDV, DOut: aDOut, Kernel: LinearKernel(), TieQK: tc.tieQK}
			givenNodes := map[string]*G.Node{}
			mk := func(name string, r, c int) *G.Node {
				n := mustConst(t, s, "given_"+name, tensor.Shape{r, c}, make([]float64, r*c))
				givenNodes[name] = n
				return n
			}
			for _, g := range tc.given {
				switch g {
				case "wq":
					cfg.WQ = mk("wq", aDIn, aDK)
				case "wk":
					cfg.WK = mk("wk", aDIn, aDK)
				case "wk=wq":
					cfg.WK = cfg.WQ
				case "wv":
					cfg.WV = mk("wv", aDIn, aDV)
				case "wo":
					cfg.P = mk("wo", aDV, aDOut)
				}
			}
			a, err := NewAttention(s.Sub("block0").Sub("attn"), cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range a.Params() {
				got = append(got, n.Name())
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Params() = %v, want %v", got, tc.want)
			}
			if sp := s.ParamNames(); fmt.Sprint(sp) != fmt.Sprint(tc.want) {
				t.Errorf("scope params %v, want %v", sp, tc.want)
			}
			wq, wk, wv, wo := a.Matrices()
			for name, m := range map[string]*G.Node{"wq": wq, "wk": wk, "wv": wv, "wo": wo} {
				if g, ok := givenNodes[name]; ok && m != g {
					t.Errorf("Matrices(): %s is not the given node", name)
				}
			}
			if tc.tiedQK != (wq == wk) {
				t.Errorf("Matrices(): W_Q == W_K is %v, want %v", wq == wk, tc.tiedQK)
			}
			wantShapes := map[string]tensor.Shape{"wq": {aDIn, aDK}, "wk": {aDIn, aDK}, "wv": {aDIn, aDV}, "wo": {aDV, aDOut}}
			for name, m := range map[string]*G.Node{"wq": wq, "wk": wk, "wv": wv, "wo": wo} {
				if !m.Shape().Eq(wantShapes[name]) {
					t.Errorf("%s has shape %v, want %v", name, m.Shape(), wantShapes[name])
				}
			}
		})
	}
}

func TestAttentionDefaults(t *testing.T) {
	s := newTestScope(t, tensor.Float64)
	a, err := NewAttention(s, AttentionConfig{DIn: aDIn, Kernel: LinearKernel()})
	if err != nil {
		t.Fatal(err)
	}
	wq, wk, wv, wo := a.Matrices()
	for _, m := range []*G.Node{wq, wk, wv, wo} {
		if !m.Shape().Eq(tensor.Shape{aDIn, aDIn}) {
			t.Errorf("%s has shape %v, want DK = DV = DOut = DIn = %d", m.Name(), m.Shape(), aDIn)
		}
	}
	// GlorotUniform by default: U(-a, a), a = sqrt(6/(DIn+DIn)) = 1.
	vals := runNodes(t, s, wq)[0]
	nonzero := false
	for _, v := range vals {
		if math.Abs(v) > 1 {
			t.Errorf("default init value %v outside the Glorot range [-1, 1]", v)
		}
		nonzero = nonzero || v != 0
	}
	if !nonzero {
		t.Errorf("default init gave all zeros")
	}
	if got := []string{ContextKeys.String(), AllKeys.String(), CausalKeys.String(), KeyMode(7).String()}; fmt.Sprint(got) != "[context all causal KeyMode(7)]" {
		t.Errorf("KeyMode strings %v", got)
	}
}

func TestNewAttentionErrors(t *testing.T) {
	s := newTestScope(t, tensor.Float64)
	m := func(name string, r, c int) *G.Node {
		return mustConst(t, s, name, tensor.Shape{r, c}, make([]float64, r*c))
	}
	wq, otherWK := m("wq33", 3, 3), m("wk33", 3, 3)
	for _, tc := range []struct {
		name string
		cfg  AttentionConfig
		want []string
	}{
		{"din_zero", AttentionConfig{Kernel: LinearKernel()}, []string{"DIn = 0"}},
		{"din_negative", AttentionConfig{DIn: -2, Kernel: LinearKernel()}, []string{"DIn = -2"}},
		{"dk_negative", AttentionConfig{DIn: 3, DK: -1, Kernel: LinearKernel()}, []string{"DK=-1"}},
		{"dout_negative", AttentionConfig{DIn: 3, DOut: -4, Kernel: LinearKernel()}, []string{"DOut=-4"}},
		{"nil_kernel", AttentionConfig{DIn: 3}, []string{"Kernel is nil"}},
		{"key_mode", AttentionConfig{DIn: 3, Kernel: LinearKernel(), Keys: KeyMode(9)}, []string{"key mode 9"}},
		{"wq_shape", AttentionConfig{DIn: 3, Kernel: LinearKernel(), WQ: m("wq23", 2, 3)}, []string{"wq has shape (2, 3), want (3, 3)"}},
		{"wk_shape", AttentionConfig{DIn: 3, DK: 2, Kernel: LinearKernel(), WK: m("wk33b", 3, 3)}, []string{"wk has shape (3, 3), want (3, 2)"}},
		{"wv_shape", AttentionConfig{DIn: 3, DV: 4, Kernel: LinearKernel(), WV: m("wv33", 3, 3)}, []string{"wv has shape (3, 3), want (3, 4)"}},
		{"p_shape", AttentionConfig{DIn: 3, DV: 4, Kernel: LinearKernel(), P: m("p33", 3, 3)}, []string{"wo has shape (3, 3), want (4, 3)"}},
		{"tie_different_wk", AttentionConfig{DIn: 3, Kernel: LinearKernel(), WQ: wq, WK: otherWK, TieQK: true}, []string{"TieQK"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := NewAttention(s.Sub("block0").Sub(tc.name), tc.cfg)
			if a != nil {
				t.Errorf("got a non-nil head with the error")
			}
			errContains(t, err, append([]string{fmt.Sprintf("layers: attention %q", "block0/"+tc.name)}, tc.want...)...)
		})
	}
}

func TestAttentionForwardErrors(t *testing.T) {
	s := newTestScope(t, tensor.Float64)
	for _, tc := range []struct {
		name  string
		keys  KeyMode
		shape tensor.Shape // nil: a nil input
		want  []string
	}{
		{"rank2", ContextKeys, tensor.Shape{aT, aDIn}, []string{"rank 3"}},
		{"rank4", AllKeys, tensor.Shape{1, aB, aT, aDIn}, []string{"rank 3"}},
		{"last_dim", ContextKeys, tensor.Shape{aB, aT, aDIn + 1}, []string{"last dimension 3"}},
		{"one_position", ContextKeys, tensor.Shape{aB, 1, aDIn}, []string{"T = 1"}},
		{"nil", ContextKeys, nil, []string{"nil"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := s.Sub("block0").Sub(tc.name)
			a, err := NewAttention(hs, AttentionConfig{DIn: aDIn, Kernel: LinearKernel(), Keys: tc.keys})
			if err != nil {
				t.Fatal(err)
			}
			var z *G.Node
			if tc.shape != nil {
				z = mustConst(t, s, "z_"+tc.name, tc.shape, make([]float64, tc.shape.TotalSize()))
			}
			out, err := a.Forward(z)
			if out != nil {
				t.Errorf("got a non-nil output with the error")
			}
			errContains(t, err, append([]string{fmt.Sprintf("layers: attention %q", "block0/"+tc.name)}, tc.want...)...)
		})
	}
	// A single position is fine where no context is needed: AllKeys sees
	// itself, CausalKeys nothing (zero output).
	for _, keys := range []KeyMode{AllKeys, CausalKeys} {
		t.Run("one_position_"+keys.String(), func(t *testing.T) {
			s := newTestScope(t, tensor.Float64)
			a, err := NewAttention(s, AttentionConfig{DIn: aDIn, Kernel: LinearKernel(), Keys: keys})
			if err != nil {
				t.Fatal(err)
			}
			z := mustConst(t, s, "z", tensor.Shape{aB, 1, aDIn}, attnTokens()[:aB*aDIn])
			out, err := a.Forward(z)
			if err != nil {
				t.Fatalf("Forward: %v", err)
			}
			got := runNodes(t, s, out)[0]
			if !graph.AllFinite(got) {
				t.Errorf("output not finite: %v", got)
			}
			if keys == CausalKeys {
				graphtest.AllClose(t, "causal T=1 output", got, make([]float64, len(got)), 0)
			}
		})
	}
}

// TestAttentionGrad checks the gradient of Σ out ⊙ r with respect to every
// created parameter (W_Q, W_K, W_V, P and a learnable log_gamma), for every
// kernel and key mode, in float64 and float32.
func TestAttentionGrad(t *testing.T) {
	zv := attnTokens()
	maxErr := map[tensor.Dtype]float64{}
	for _, kc := range attnKernels {
		for _, keys := range keyModes {
			var wrt []string
			if kc.ref == refDelta {
				// κ ignores q and k, so W_Q and W_K do not reach the loss.
				wrt = []string{attnPath + "/wv", attnPath + "/wo"}
			}
			build := func(s *graph.Scope) (*G.Node, error) {
				hs := s.Sub("block0").Sub("attn")
				k, err := kc.make(hs)
				if err != nil {
					return nil, err
				}
				a, err := NewAttention(hs, AttentionConfig{DIn: aDIn, Kernel: k, Keys: keys})
				if err != nil {
					return nil, err
				}
				z, err := s.Const("z", tensor.Shape{aB, aT, aDIn}, zv)
				if err != nil {
					return nil, err
				}
				out, err := a.Forward(z)
				if err != nil {
					return nil, err
				}
				return weightedSum(s, "r", out)
			}
			for _, dc := range testDtypes {
				t.Run(fmt.Sprintf("%s/%v/%s", kc.name, keys, dc.name), func(t *testing.T) {
					e := graphtest.CheckGradDtype(t, dc.dt, build, graphtest.Options{Seed: 1, Wrt: wrt})
					maxErr[dc.dt] = math.Max(maxErr[dc.dt], e)
				})
			}
		}
	}
	t.Logf("max gradient-check error: float64 %.3g, float32 %.3g", maxErr[tensor.Float64], maxErr[tensor.Float32])
}
