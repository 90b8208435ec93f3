package layers

import (
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/ops"
)

// Softmax-head test sizes: B feature rows f of d' features, C classes.
const hB, hDP, hC = 3, 4, 5

// headData draws f (B, d') and W_e (d', C) from N(0, 1).
func headData() (f, we []float64) {
	rng := newTestRand()
	return randn(rng, hB*hDP, 1), randn(rng, hDP*hC, 1)
}

func TestSoftmaxHeadForward(t *testing.T) {
	fv, wev := headData()
	for _, dc := range testDtypes {
		t.Run(dc.name, func(t *testing.T) {
			s := newTestScope(t, dc.dt)
			we := mustConst(t, s, "we", tensor.Shape{hDP, hC}, wev)
			h, err := NewSoftmaxHead(we)
			if err != nil {
				t.Fatal(err)
			}
			if ps := h.Params(); len(ps) != 0 {
				t.Errorf("Params() = %v, want none (W_e belongs to the model)", ps)
			}
			f := mustConst(t, s, "f", tensor.Shape{hB, hDP}, fv)
			logits, err := h.Forward(f)
			if err != nil {
				t.Fatal(err)
			}
			if !logits.Shape().Eq(tensor.Shape{hB, hC}) {
				t.Fatalf("logits have shape %v, want (%d, %d)", logits.Shape(), hB, hC)
			}
			got := runNodes(t, s, logits)[0]
			// logit_c = w_{e,c}·f
			want := matMul(rounded(dc.dt, fv), rounded(dc.dt, wev), hB, hDP, hC)
			graphtest.AllClose(t, "logits", got, want, dc.tol)
		})
	}
}

func TestSoftmaxHeadErrors(t *testing.T) {
	s := newTestScope(t, tensor.Float64)
	c := func(name string, shape ...int) *G.Node {
		sh := tensor.Shape(shape)
		return mustConst(t, s, name, sh, make([]float64, sh.TotalSize()))
	}
	for _, tc := range []struct {
		name string
		we   *G.Node
	}{
		{"nil", nil},
		{"vector", c("we_vec", hDP)},
		{"rank3", c("we3", 1, hDP, hC)},
	} {
		t.Run("new/"+tc.name, func(t *testing.T) {
			h, err := NewSoftmaxHead(tc.we)
			if h != nil {
				t.Errorf("got a non-nil head with the error")
			}
			errContains(t, err, "layers: softmax head", "(d', C)")
		})
	}
	h, err := NewSoftmaxHead(c("we", hDP, hC))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    *G.Node
		want string
	}{
		{"nil", nil, "f has shape nil, want (B, 4)"},
		{"vector", c("f_vec", hDP), "f has shape (4), want (B, 4)"},
		{"rank3", c("f3", 2, hB, hDP), "f has shape (2, 3, 4), want (B, 4)"},
		{"wrong_dim", c("f_bad", hB, hDP+1), "f has shape (3, 5), want (B, 4)"},
	} {
		t.Run("forward/"+tc.name, func(t *testing.T) {
			out, err := h.Forward(tc.f)
			if out != nil {
				t.Errorf("got a non-nil output with the error")
			}
			errContains(t, err, "layers: softmax head", tc.want)
		})
	}
}

// TestSoftmaxHeadGrad checks the gradient of the log-likelihood
// Σ_b log softmax(f_b W_e)_{y_b} (labels y_b = b mod C) with respect to f and
// W_e, both parameters.
func TestSoftmaxHeadGrad(t *testing.T) {
	fv, wev := headData()
	onehot := make([]float64, hB*hC)
	for b := 0; b < hB; b++ {
		onehot[b*hC+b%hC] = 1
	}
	build := func(s *graph.Scope) (*G.Node, error) {
		f, err := s.Param("f", tensor.Shape{hB, hDP}, graph.FromValues(fv))
		if err != nil {
			return nil, err
		}
		we, err := s.Param("we", tensor.Shape{hDP, hC}, graph.FromValues(wev))
		if err != nil {
			return nil, err
		}
		h, err := NewSoftmaxHead(we)
		if err != nil {
			return nil, err
		}
		logits, err := h.Forward(f)
		if err != nil {
			return nil, err
		}
		logp, err := ops.LogSoftMax(logits)
		if err != nil {
			return nil, err
		}
		y, err := s.Const("y", tensor.Shape{hB, hC}, onehot)
		if err != nil {
			return nil, err
		}
		ll, err := G.HadamardProd(logp, y)
		if err != nil {
			return nil, err
		}
		return G.Sum(ll)
	}
	maxErr := map[tensor.Dtype]float64{}
	for _, dc := range testDtypes {
		t.Run(dc.name, func(t *testing.T) {
			maxErr[dc.dt] = math.Max(maxErr[dc.dt], graphtest.CheckGradDtype(t, dc.dt, build, graphtest.Options{Seed: 1}))
		})
	}
	t.Logf("max gradient-check error: float64 %.3g, float32 %.3g", maxErr[tensor.Float64], maxErr[tensor.Float32])
}
