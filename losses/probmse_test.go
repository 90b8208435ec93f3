package losses

import (
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
)

// probMSEBuild builds ProbMSENode on a (B, C) logits parameter, random labels
// and random true probabilities in (0, 1), all drawn from the scope; with
// both it also adds CrossEntropy on the same logits (they share the
// LogSoftMax node).
func probMSEBuild(B, C int, both bool) graphtest.BuildFunc {
	return func(s *graph.Scope) (*G.Node, error) {
		logits, err := s.Param("logits", tensor.Shape{B, C}, graph.Normal(1.5))
		if err != nil {
			return nil, err
		}
		targets, err := s.Const("targets", tensor.Shape{B, C}, randOneHot(s, B, C))
		if err != nil {
			return nil, err
		}
		pt := make([]float64, B)
		for i := range pt {
			pt[i] = s.Rand().Float64()
		}
		trueProb, err := s.Const("true_prob", tensor.Shape{B}, pt)
		if err != nil {
			return nil, err
		}
		mse, err := ProbMSENode(logits, targets, trueProb)
		if err != nil || !both {
			return mse, err
		}
		ce, err := CrossEntropy(logits, targets)
		if err != nil {
			return nil, err
		}
		return G.Add(mse, ce)
	}
}

func TestProbMSENodeValue(t *testing.T) {
	const B, C = 2, 3
	logits := []float64{1, 2, 3, 0, -1, 0.5}
	targets := []float64{1, 0, 0, 0, 0, 1} // labels 0, 2
	trueProbs := []float64{0.3, 0.3, 0.4, 0.1, 0.1, 0.8}
	build := func(s *graph.Scope) (*G.Node, error) {
		l, err := s.Const("logits", tensor.Shape{B, C}, logits)
		if err != nil {
			return nil, err
		}
		tg, err := s.Const("targets", tensor.Shape{B, C}, targets)
		if err != nil {
			return nil, err
		}
		tp, err := s.Const("true_prob", tensor.Shape{B}, []float64{trueProbs[0], trueProbs[5]})
		if err != nil {
			return nil, err
		}
		return ProbMSENode(l, tg, tp)
	}
	// The reference is the plain-Go ProbMSE of the plain-Go softmax.
	p, err := Softmax(logits, C)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ProbMSE(p, trueProbs, []int{0, 2}, C)
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range dtypes {
		t.Run(dt.String(), func(t *testing.T) {
			tol := 1e-15
			if dt == tensor.Float32 {
				tol = 1e-7
			}
			graphtest.AllClose(t, "ProbMSENode", graphtest.Forward(t, build, dt, 1), []float64{want}, tol)
		})
	}
}

func TestProbMSENodeGradient(t *testing.T) {
	for _, tc := range []struct {
		name string
		B, C int
		both bool
	}{
		{"alone", 5, 4, false},
		{"with CrossEntropy", 3, 6, true},
	} {
		t.Run(tc.name+"/float64", func(t *testing.T) {
			t.Logf("max rel error %.3g", graphtest.CheckGrad(t, probMSEBuild(tc.B, tc.C, tc.both), graphtest.Options{Seed: 5}))
		})
		t.Run(tc.name+"/float32", func(t *testing.T) {
			t.Logf("max rel error %.3g", graphtest.CheckGrad32(t, probMSEBuild(tc.B, tc.C, tc.both), graphtest.Options{Seed: 5}))
		})
	}
}

func TestProbMSENodeBadInput(t *testing.T) {
	s, err := graph.NewScope(tensor.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	other, err := graph.NewScope(tensor.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	l := mustConst(t, s, "logits", tensor.Shape{2, 3}, make([]float64, 6))
	tg := mustConst(t, s, "targets", tensor.Shape{2, 3}, make([]float64, 6))
	tp := mustConst(t, s, "tp", tensor.Shape{2}, make([]float64, 2))
	tp3 := mustConst(t, s, "tp3", tensor.Shape{3}, make([]float64, 3))
	tp21 := mustConst(t, s, "tp21", tensor.Shape{2, 1}, make([]float64, 2))
	tp32 := G.NewVector(s.Graph(), tensor.Float32, G.WithShape(2), G.WithName("tp32"), G.WithInit(G.Zeroes()))
	otp := mustConst(t, other, "tp", tensor.Shape{2}, make([]float64, 2))
	for _, tc := range []struct {
		name                  string
		logits, targets, prob *G.Node
		want                  string
	}{
		{"nil logits", nil, tg, tp, "logits is nil"},
		{"nil targets", l, nil, tp, "targets is nil"},
		{"nil trueProb", l, tg, nil, "trueProb is nil"},
		{"length", l, tg, tp3, `trueProb "tp3" has shape (3), want (2)`},
		{"rank", l, tg, tp21, `trueProb "tp21" has shape (2, 1)`},
		{"dtype", l, tg, tp32, "dtype float32"},
		{"graphs", l, tg, otp, "different graphs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ProbMSENode(tc.logits, tc.targets, tc.prob)
			if err == nil || got != nil {
				t.Fatalf("got (%v, %v), want an error", got, err)
			}
			if !strings.HasPrefix(err.Error(), "losses: ProbMSENode: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to mention %q", err, tc.want)
			}
		})
	}
}
