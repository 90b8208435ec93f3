package tf_test

import (
	"math"
	"testing"

	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/tf"
)

// Tests of the parameter analysis on the GD construction; they need package
// gd, so they live in the external test package.

// TestAnalyzeGDStart: a TF started at the single-step construction has
// Q = I and ED = (α/N)·I exactly, so both diagonalities and spreads are 0;
// a randomly initialised TF has off-diagonal energy in both.
func TestAnalyzeGDStart(t *testing.T) {
	const d, dp, C, N, alpha = 3, 4, 5, 6, 1.5
	for _, dk := range []int{0, d, 2*d + 2*dp} {
		s, _ := graph.NewScope(graph.Float64, 1)
		m, err := tf.NewModel(s, tf.Config{D: d, DPrime: dp, C: C, N: N, DK: dk, Init: construction(t, gd.OneStep, 1, d, dp, N, alpha, 100)}, 1)
		if err != nil {
			t.Fatal(err)
		}
		a, err := tf.Analyze(m)
		if err != nil {
			t.Fatal(err)
		}
		if a.Q.Rows != d || a.Q.Cols != d || a.ED.Rows != dp || a.ED.Cols != dp {
			t.Fatalf("DK=%d: Q is %dx%d, ED %dx%d, want %dx%d and %dx%d", dk, a.Q.Rows, a.Q.Cols, a.ED.Rows, a.ED.Cols, d, d, dp, dp)
		}
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				if want := b2f(i == j); a.Q.At(i, j) != want {
					t.Errorf("DK=%d: Q[%d,%d] = %v, want %v", dk, i, j, a.Q.At(i, j), want)
				}
			}
		}
		for i := 0; i < dp; i++ {
			for j := 0; j < dp; j++ {
				if want := b2f(i == j) * alpha / N; math.Abs(a.ED.At(i, j)-want) > 1e-15 {
					t.Errorf("DK=%d: ED[%d,%d] = %v, want %v", dk, i, j, a.ED.At(i, j), want)
				}
			}
		}
		if a.QDiagonality != 0 || a.EDDiagonality != 0 || a.QSpread != 0 || a.EDSpread != 0 {
			t.Errorf("DK=%d: diagonality (Q %v, ED %v), spread (Q %v, ED %v), want all 0",
				dk, a.QDiagonality, a.EDDiagonality, a.QSpread, a.EDSpread)
		}
	}

	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := tf.NewModel(s, tf.Config{D: d, DPrime: dp, C: C, N: N}, 1)
	if err != nil {
		t.Fatal(err)
	}
	a, err := tf.Analyze(m)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("random start: diagonality Q %.3f ED %.3f, spread Q %.3f ED %.3f", a.QDiagonality, a.EDDiagonality, a.QSpread, a.EDSpread)
	if !(a.QDiagonality > 0.1) || !(a.EDDiagonality > 0.1) {
		t.Errorf("random start: diagonality Q %v, ED %v, want both > 0.1", a.QDiagonality, a.EDDiagonality)
	}
}

// TestAnalyzeMatricesConvention pins the index conventions on a hand-made
// head with d = 1, d' = 1 (D = 3): W_Q, W_K read x with weights 2 and 3
// (Q = 2·3 = 6), W_V maps the label entry to value entry 1 with weight 5,
// and P maps value entry 1 to the f entry (index 2) with weight 7
// (ED = 35); the other entries are distractors outside A, B, D, E.
func TestAnalyzeMatricesConvention(t *testing.T) {
	wq := gd.Matrix{Rows: 3, Cols: 2, Data: []float64{2, 0, 9, 9, 9, 9}}
	wk := gd.Matrix{Rows: 3, Cols: 2, Data: []float64{3, 0, 9, 9, 9, 9}}
	wv := gd.Matrix{Rows: 3, Cols: 3, Data: []float64{9, 9, 9, 0, 5, 0, 9, 9, 9}}
	p := gd.Matrix{Rows: 3, Cols: 3, Data: []float64{9, 9, 0, 9, 9, 7, 9, 9, 0}}
	a, err := tf.AnalyzeMatrices(1, 1, wq, wk, wv, p)
	if err != nil {
		t.Fatal(err)
	}
	if a.Q.Data[0] != 6 || a.ED.Data[0] != 35 {
		t.Errorf("Q = %v, ED = %v, want [6] and [35]", a.Q.Data, a.ED.Data)
	}
	// The GD matrices of package gd give the same answer as the model.
	h, err := gd.OneStepMatrices(2, 3, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	g, err := tf.AnalyzeMatrices(2, 3, h.WQ, h.WK, h.WV, h.P)
	if err != nil {
		t.Fatal(err)
	}
	if g.QDiagonality != 0 || g.EDDiagonality != 0 || g.ED.At(0, 0) != 0.5 {
		t.Errorf("OneStepMatrices: diagonality %v, %v, ED[0,0] = %v, want 0, 0, 0.5", g.QDiagonality, g.EDDiagonality, g.ED.At(0, 0))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
