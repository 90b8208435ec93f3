package layers

import (
	"fmt"
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/internal/numeric"
)

// Cross-attention test sizes: M query rows, d' latent features, C classes;
// tokens are (B, T, DIn).
const (
	cM, cDP, cC    = 5, 3, 4
	cB, cT, cDIn   = 2, 3, 4
	crossPath      = "block0/cross"
	crossScopeName = "cross"
)

// refExpectation is E(w_e|f) = Σ_c v_c softmax_c(f·k_c) in plain Go for f
// (m, dp) and We (dp, C), with the key k_c = w_c W_K and value v_c = w_c W_V
// of the column w_c = We[:, c] (row-vector convention); a nil wk or wv is the
// identity.
func refExpectation(f, we, wk, wv []float64, m, dp, c int) []float64 {
	col := func(ci int) []float64 {
		w := make([]float64, dp)
		for a := range w {
			w[a] = we[a*c+ci]
		}
		return w
	}
	apply := func(w, mat []float64) []float64 {
		if mat == nil {
			return w
		}
		return matMul(w, mat, 1, dp, dp)
	}
	out := make([]float64, m*dp)
	for r := 0; r < m; r++ {
		logits := make([]float64, c)
		for ci := 0; ci < c; ci++ {
			k := apply(col(ci), wk)
			for a := 0; a < dp; a++ {
				logits[ci] += f[r*dp+a] * k[a]
			}
		}
		numeric.SoftmaxInto(logits, logits)
		for ci := 0; ci < c; ci++ {
			v := apply(col(ci), wv)
			for a := 0; a < dp; a++ {
				out[r*dp+a] += logits[ci] * v[a]
			}
		}
	}
	return out
}

// crossData draws f (M, d'), W_e (d', C), W_K and W_V (d', d') from N(0, 1),
// with W_e scaled by 2 so that the softmax is far from uniform.
func crossData() (f, we, wk, wv []float64) {
	rng := newTestRand()
	return randn(rng, cM*cDP, 1), randn(rng, cDP*cC, 2), randn(rng, cDP*cDP, 1), randn(rng, cDP*cDP, 1)
}

func TestExpectation(t *testing.T) {
	fv, wev, wkv, wvv := crossData()
	for _, tc := range []struct {
		name   string
		wk, wv bool
	}{
		{"identity", false, false},
		{"wk", true, false},
		{"wv", false, true},
		{"wk_wv", true, true},
	} {
		for _, dc := range testDtypes {
			t.Run(tc.name+"/"+dc.name, func(t *testing.T) {
				s := newTestScope(t, dc.dt)
				f := mustConst(t, s, "f", tensor.Shape{cM, cDP}, fv)
				we := mustConst(t, s, "we", tensor.Shape{cDP, cC}, wev)
				var wk, wv *G.Node
				var wkr, wvr []float64
				if tc.wk {
					wk, wkr = mustConst(t, s, "wk", tensor.Shape{cDP, cDP}, wkv), rounded(dc.dt, wkv)
				}
				if tc.wv {
					wv, wvr = mustConst(t, s, "wv", tensor.Shape{cDP, cDP}, wvv), rounded(dc.dt, wvv)
				}
				e, err := Expectation(f, we, wk, wv)
				if err != nil {
					t.Fatal(err)
				}
				if !e.Shape().Eq(tensor.Shape{cM, cDP}) {
					t.Fatalf("shape %v, want (%d, %d)", e.Shape(), cM, cDP)
				}
				got := runNodes(t, s, e)[0]
				want := refExpectation(rounded(dc.dt, fv), rounded(dc.dt, wev), wkr, wvr, cM, cDP, cC)
				graphtest.AllClose(t, "E(w_e|f)", got, want, dc.tol)
			})
		}
	}
}

func TestExpectationErrors(t *testing.T) {
	s := newTestScope(t, tensor.Float64)
	we := mustConst(t, s, "we", tensor.Shape{cDP, cC}, make([]float64, cDP*cC))
	f := mustConst(t, s, "f", tensor.Shape{cM, cDP}, make([]float64, cM*cDP))
	f1 := mustConst(t, s, "f1", tensor.Shape{cDP}, make([]float64, cDP))
	fBad := mustConst(t, s, "f_bad", tensor.Shape{cM, cDP + 1}, make([]float64, cM*(cDP+1)))
	for _, tc := range []struct {
		name  string
		f, we *G.Node
	}{
		{"nil_f", nil, we},
		{"nil_we", f, nil},
		{"rank1_f", f1, we},
		{"dim_mismatch", fBad, we},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Expectation(tc.f, tc.we, nil, nil)
			errContains(t, err, "layers: expectation", "(M, d')", "(d', C)")
		})
	}
}

// TestExpectationRank3 checks that a tensor (B, T, d') of rows f gives the
// rows of the (B·T, d') matrix case, with the tensor's shape.
func TestExpectationRank3(t *testing.T) {
	fv, wev, _, _ := crossData()
	for _, dc := range testDtypes {
		s := newTestScope(t, dc.dt)
		we := mustConst(t, s, "we", tensor.Shape{cDP, cC}, wev)
		f2 := mustConst(t, s, "f2", tensor.Shape{cM, cDP}, fv)
		f3 := mustConst(t, s, "f3", tensor.Shape{1, cM, cDP}, fv)
		e2, err := Expectation(f2, we, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		e3, err := Expectation(f3, we, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !e3.Shape().Eq(tensor.Shape{1, cM, cDP}) {
			t.Fatalf("%s: shape %v, want (1, %d, %d)", dc.name, e3.Shape(), cM, cDP)
		}
		m, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Run(); err != nil {
			t.Fatal(err)
		}
		v2, _ := graph.Values(e2)
		v3, _ := graph.Values(e3)
		graphtest.AllClose(t, dc.name, v3, v2, 0)
		m.Close()
	}
}

// crossTokens draws tokens (cB, cT, cDIn) from N(0, 1), from a stream
// other than crossData's.
func crossTokens() []float64 { return randn(newTestRandSeed(2), cB*cT*cDIn, 1) }

func TestCrossAttentionForward(t *testing.T) {
	_, wev, _, _ := crossData()
	zv := crossTokens()
	for _, learnKV := range []bool{false, true} {
		for _, dc := range testDtypes {
			t.Run(fmt.Sprintf("learnKV=%v/%s", learnKV, dc.name), func(t *testing.T) {
				s := newTestScope(t, dc.dt)
				we := mustConst(t, s, "we", tensor.Shape{cDP, cC}, wev)
				l, err := NewCrossAttention(s.Sub("block0").Sub(crossScopeName), CrossAttentionConfig{DIn: cDIn, DPrime: cDP, We: we, LearnKV: learnKV})
				if err != nil {
					t.Fatal(err)
				}
				z := mustConst(t, s, "z", tensor.Shape{cB, cT, cDIn}, zv)
				out, err := l.Forward(z)
				if err != nil {
					t.Fatal(err)
				}
				if !out.Shape().Eq(tensor.Shape{cB, cT, cDIn}) {
					t.Fatalf("output shape %v, want (%d, %d, %d) (DOut defaults to DIn)", out.Shape(), cB, cT, cDIn)
				}
				nodes := []*G.Node{out}
				for _, name := range []string{"wq", "wo", "wk", "wv"} {
					p, ok := s.Lookup(crossPath + "/" + name)
					if !ok {
						if learnKV || name == "wq" || name == "wo" {
							t.Fatalf("no parameter %s/%s", crossPath, name)
						}
						continue
					}
					nodes = append(nodes, p)
				}
				vals := runNodes(t, s, nodes...)
				var wk, wv []float64
				if learnKV {
					wk, wv = vals[3], vals[4]
				}
				// out = E(w_e | z W_Q) P, row by row.
				f := matMul(rounded(dc.dt, zv), vals[1], cB*cT, cDIn, cDP)
				e := refExpectation(f, rounded(dc.dt, wev), wk, wv, cB*cT, cDP, cC)
				want := matMul(e, vals[2], cB*cT, cDP, cDIn)
				graphtest.AllClose(t, "output", vals[0], want, dc.tol)
			})
		}
	}
}

// TestCrossAttentionPlacement uses the paper's fixed construction: tokens
// (x, E slot, f) with d = 2, W_Q selecting f and P writing into the E slot,
// so the output is exactly (0, E(w_e|f), 0) at every position.
func TestCrossAttentionPlacement(t *testing.T) {
	const dx = 2
	din := dx + 2*cDP // (x, E, f)
	_, wev, _, _ := crossData()
	zv := randn(newTestRandSeed(3), cB*cT*din, 1)
	wq := make([]float64, din*cDP) // rows dx+d'..dx+2d'-1 form the identity
	p := make([]float64, cDP*din)  // column dx+a gets feature a
	for a := 0; a < cDP; a++ {
		wq[(dx+cDP+a)*cDP+a] = 1
		p[a*din+dx+a] = 1
	}
	for _, learnKV := range []bool{false, true} {
		for _, dc := range testDtypes {
			t.Run(fmt.Sprintf("learnKV=%v/%s", learnKV, dc.name), func(t *testing.T) {
				s := newTestScope(t, dc.dt)
				we := mustConst(t, s, "we", tensor.Shape{cDP, cC}, wev)
				cfg := CrossAttentionConfig{
					DIn: din, DPrime: cDP, We: we, LearnKV: learnKV,
					WQ: mustConst(t, s, "wq_select_f", tensor.Shape{din, cDP}, wq),
					P:  mustConst(t, s, "p_place_e", tensor.Shape{cDP, din}, p),
				}
				if learnKV {
					// Identity initialisation: the learnable W_K, W_V start at the paper's values.
					eye := make([]float64, cDP*cDP)
					for a := 0; a < cDP; a++ {
						eye[a*cDP+a] = 1
					}
					cfg.WInit = graph.FromValues(eye)
				}
				l, err := NewCrossAttention(s.Sub("block0").Sub(crossScopeName), cfg)
				if err != nil {
					t.Fatal(err)
				}
				var wantParams []string
				if learnKV {
					wantParams = []string{crossPath + "/wk", crossPath + "/wv"}
				}
				var gotParams []string
				for _, n := range l.Params() {
					gotParams = append(gotParams, n.Name())
				}
				if fmt.Sprint(gotParams) != fmt.Sprint(wantParams) {
					t.Errorf("Params() = %v, want %v", gotParams, wantParams)
				}
				z := mustConst(t, s, "z", tensor.Shape{cB, cT, din}, zv)
				out, err := l.Forward(z)
				if err != nil {
					t.Fatal(err)
				}
				got := runNodes(t, s, out)[0]
				zr := rounded(dc.dt, zv)
				f := make([]float64, cB*cT*cDP)
				for r := 0; r < cB*cT; r++ {
					copy(f[r*cDP:(r+1)*cDP], zr[r*din+dx+cDP:r*din+dx+2*cDP])
				}
				e := refExpectation(f, rounded(dc.dt, wev), nil, nil, cB*cT, cDP, cC)
				want := make([]float64, cB*cT*din)
				for r := 0; r < cB*cT; r++ {
					copy(want[r*din+dx:r*din+dx+cDP], e[r*cDP:(r+1)*cDP])
				}
				graphtest.AllClose(t, "placed E(w_e|f)", got, want, dc.tol)
				for o, v := range got {
					if c := o % din; (c < dx || c >= dx+cDP) && v != 0 {
						t.Errorf("output[%d] (feature %d, outside the E slot) = %v, want exactly 0", o, c, v)
					}
				}
			})
		}
	}
}

func TestCrossAttentionParams(t *testing.T) {
	for _, tc := range []struct {
		name    string
		learnKV bool
		givenWK bool
		want    []string
	}{
		{"default", false, false, []string{"wq", "wo"}},
		{"learn_kv", true, false, []string{"wq", "wk", "wv", "wo"}},
		{"learn_kv_given_wk", true, true, []string{"wq", "wv", "wo"}},
		{"given_wk", false, true, []string{"wq", "wo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestScope(t, tensor.Float64)
			we := mustConst(t, s, "we", tensor.Shape{cDP, cC}, make([]float64, cDP*cC))
			cfg := CrossAttentionConfig{DIn: cDIn, DPrime: cDP, DOut: 6, We: we, LearnKV: tc.learnKV}
			if tc.givenWK {
				cfg.WK = mustConst(t, s, "given_wk", tensor.Shape{cDP, cDP}, make([]float64, cDP*cDP))
			}
			l, err := NewCrossAttention(s.Sub("block0").Sub(crossScopeName), cfg)
			if err != nil {
				t.Fatal(err)
			}
			var want, got []string
			for _, n := range tc.want {
				want = append(want, crossPath+"/"+n)
			}
			for _, n := range l.Params() {
				got = append(got, n.Name())
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("Params() = %v, want %v", got, want)
			}
			if sp := s.ParamNames(); fmt.Sprint(sp) != fmt.Sprint(want) {
				t.Errorf("scope params %v, want %v (W_e is the model's, not the layer's)", sp, want)
			}
			if wo, _ := s.Lookup(crossPath + "/wo"); !wo.Shape().Eq(tensor.Shape{cDP, 6}) {
				t.Errorf("wo has shape %v, want (%d, 6)", wo.Shape(), cDP)
			}
		})
	}
}

func TestNewCrossAttentionErrors(t *testing.T) {
	s := newTestScope(t, tensor.Float64)
	m := func(name string, shape ...int) *G.Node {
		sh := tensor.Shape(shape)
		return mustConst(t, s, name, sh, make([]float64, sh.TotalSize()))
	}
	we := m("we", cDP, cC)
	for _, tc := range []struct {
		name string
		cfg  CrossAttentionConfig
		want []string
	}{
		{"din_zero", CrossAttentionConfig{DPrime: cDP, We: we}, []string{"DIn = 0"}},
		{"dprime_zero", CrossAttentionConfig{DIn: cDIn, We: we}, []string{"DPrime = 0"}},
		{"dout_negative", CrossAttentionConfig{DIn: cDIn, DPrime: cDP, DOut: -1, We: we}, []string{"DOut = -1"}},
		{"nil_we", CrossAttentionConfig{DIn: cDIn, DPrime: cDP}, []string{"We is nil"}},
		{"we_rank1", CrossAttentionConfig{DIn: cDIn, DPrime: cDP, We: m("we_vec", cDP*cC)}, []string{"We has shape", "want (3, C)"}},
		{"we_rows", CrossAttentionConfig{DIn: cDIn, DPrime: cDP, We: m("we_rows", cDP+1, cC)}, []string{"We has shape (4, 4), want (3, C)"}},
		{"wq_shape", CrossAttentionConfig{DIn: cDIn, DPrime: cDP, We: we, WQ: m("wq_bad", cDP, cDIn)}, []string{"wq has shape (3, 4), want (4, 3)"}},
		{"wk_shape", CrossAttentionConfig{DIn: cDIn, DPrime: cDP, We: we, WK: m("wk_bad", cDP, cDP+1)}, []string{"wk has shape (3, 4), want (3, 3)"}},
		{"wv_shape", CrossAttentionConfig{DIn: cDIn, DPrime: cDP, We: we, LearnKV: true, WV: m("wv_bad", cDP+1, cDP)}, []string{"wv has shape (4, 3), want (3, 3)"}},
		{"p_shape", CrossAttentionConfig{DIn: cDIn, DPrime: cDP, We: we, P: m("p_bad", cDIn, cDP)}, []string{"wo has shape (4, 3), want (3, 4)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewCrossAttention(s.Sub("block0").Sub(tc.name), tc.cfg)
			if l != nil {
				t.Errorf("got a non-nil layer with the error")
			}
			errContains(t, err, append([]string{fmt.Sprintf("layers: cross-attention %q", "block0/"+tc.name)}, tc.want...)...)
		})
	}
}

func TestCrossAttentionForwardErrors(t *testing.T) {
	s := newTestScope(t, tensor.Float64)
	we := mustConst(t, s, "we", tensor.Shape{cDP, cC}, make([]float64, cDP*cC))
	l, err := NewCrossAttention(s.Sub("block0").Sub(crossScopeName), CrossAttentionConfig{DIn: cDIn, DPrime: cDP, We: we})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		shape tensor.Shape
		want  string
	}{
		{"rank2", tensor.Shape{cT, cDIn}, "rank 3"},
		{"last_dim", tensor.Shape{cB, cT, cDIn + 1}, "last dimension 4"},
		{"nil", nil, "nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var z *G.Node
			if tc.shape != nil {
				z = mustConst(t, s, "z_"+tc.name, tc.shape, make([]float64, tc.shape.TotalSize()))
			}
			out, err := l.Forward(z)
			if out != nil {
				t.Errorf("got a non-nil output with the error")
			}
			errContains(t, err, fmt.Sprintf("layers: cross-attention %q", crossPath), tc.want)
		})
	}
}

// TestCrossAttentionGrad checks the gradient of Σ out ⊙ r with respect to
// W_e (a parameter of the enclosing model, here of the scope) and the
// layer's created parameters.
func TestCrossAttentionGrad(t *testing.T) {
	_, wev, _, _ := crossData()
	zv := crossTokens()
	maxErr := map[tensor.Dtype]float64{}
	for _, learnKV := range []bool{false, true} {
		build := func(s *graph.Scope) (*G.Node, error) {
			we, err := s.Param("we", tensor.Shape{cDP, cC}, graph.FromValues(wev))
			if err != nil {
				return nil, err
			}
			l, err := NewCrossAttention(s.Sub("block0").Sub(crossScopeName), CrossAttentionConfig{DIn: cDIn, DPrime: cDP, We: we, LearnKV: learnKV})
			if err != nil {
				return nil, err
			}
			z, err := s.Const("z", tensor.Shape{cB, cT, cDIn}, zv)
			if err != nil {
				return nil, err
			}
			out, err := l.Forward(z)
			if err != nil {
				return nil, err
			}
			return weightedSum(s, "r", out)
		}
		for _, dc := range testDtypes {
			t.Run(fmt.Sprintf("learnKV=%v/%s", learnKV, dc.name), func(t *testing.T) {
				e := graphtest.CheckGradDtype(t, dc.dt, build, graphtest.Options{Seed: 1})
				maxErr[dc.dt] = math.Max(maxErr[dc.dt], e)
			})
		}
	}
	// Expectation alone, with respect to f and W_e.
	fv, _, _, _ := crossData()
	build := func(s *graph.Scope) (*G.Node, error) {
		f, err := s.Param("f", tensor.Shape{cM, cDP}, graph.FromValues(fv))
		if err != nil {
			return nil, err
		}
		we, err := s.Param("we", tensor.Shape{cDP, cC}, graph.FromValues(wev))
		if err != nil {
			return nil, err
		}
		e, err := Expectation(f, we, nil, nil)
		if err != nil {
			return nil, err
		}
		return weightedSum(s, "r", e)
	}
	for _, dc := range testDtypes {
		t.Run("expectation/"+dc.name, func(t *testing.T) {
			e := graphtest.CheckGradDtype(t, dc.dt, build, graphtest.Options{Seed: 1})
			maxErr[dc.dt] = math.Max(maxErr[dc.dt], e)
		})
	}
	t.Logf("max gradient-check error: float64 %.3g, float32 %.3g", maxErr[tensor.Float64], maxErr[tensor.Float32])
}
