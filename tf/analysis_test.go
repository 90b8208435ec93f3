package tf

import (
	"math"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
)

func TestDiagonality(t *testing.T) {
	m := func(r, c int, v ...float64) gd.Matrix { return gd.Matrix{Rows: r, Cols: c, Data: v} }
	cases := []struct {
		name           string
		m              gd.Matrix
		diag, spread   float64
		nanDiag, nanSp bool
	}{
		{"identity", m(2, 2, 1, 0, 0, 1), 0, 0, false, false},
		{"scaled", m(3, 3, 2, 0, 0, 0, 2, 0, 0, 0, 2), 0, 0, false, false},
		// off-diagonal energy 2² = 4 of 1 + 4 + 9 = 14; diagonal (1, 3):
		// spread (3 − 1) / 2 = 1.
		{"upper", m(2, 2, 1, 2, 0, 3), 4.0 / 14, 1, false, false},
		// negative diagonal: (−1 − (−3)) / mean(|−1|, |−3|) = 2/2.
		{"negative", m(2, 2, -1, 0, 0, -3), 0, 1, false, false},
		{"antidiagonal", m(2, 2, 0, 1, 1, 0), 1, 0, false, true},
		// rectangular: diagonal entries (0,0) = 1 and (1,1) = 2.
		{"rect", m(2, 3, 1, 0, 1, 0, 2, 0), 1.0 / 6, 2.0 / 3, false, false},
		{"zero", m(2, 2, 0, 0, 0, 0), 0, 0, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, s := Diagonality(c.m), DiagonalSpread(c.m)
			if c.nanDiag != math.IsNaN(d) || (!c.nanDiag && math.Abs(d-c.diag) > 1e-15) {
				t.Errorf("Diagonality = %v, want %v (NaN %v)", d, c.diag, c.nanDiag)
			}
			if c.nanSp != math.IsNaN(s) || (!c.nanSp && math.Abs(s-c.spread) > 1e-15) {
				t.Errorf("DiagonalSpread = %v, want %v (NaN %v)", s, c.spread, c.nanSp)
			}
		})
	}
}

// TestAnalyzeGDStart: a TF started at the single-step construction has
// Q = I and ED = (α/N)·I exactly, so both diagonalities and spreads are 0;
// a randomly initialised TF has off-diagonal energy in both.
func TestAnalyzeGDStart(t *testing.T) {
	const d, dp, C, N, alpha = 3, 4, 5, 6, 1.5
	for _, dk := range []int{0, d, 2*d + 2*dp} {
		s, _ := graph.NewScope(graph.Float64, 1)
		m, err := NewModel(s, Config{D: d, DPrime: dp, C: C, N: N, DK: dk, InitFromGD: true, Alpha: alpha}, 1)
		if err != nil {
			t.Fatal(err)
		}
		a, err := Analyze(m)
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
	m, err := NewModel(s, Config{D: d, DPrime: dp, C: C, N: N}, 1)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Analyze(m)
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
	a, err := AnalyzeMatrices(1, 1, wq, wk, wv, p)
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
	g, err := AnalyzeMatrices(2, 3, h.WQ, h.WK, h.WV, h.P)
	if err != nil {
		t.Fatal(err)
	}
	if g.QDiagonality != 0 || g.EDDiagonality != 0 || g.ED.At(0, 0) != 0.5 {
		t.Errorf("OneStepMatrices: diagonality %v, %v, ED[0,0] = %v, want 0, 0, 0.5", g.QDiagonality, g.EDDiagonality, g.ED.At(0, 0))
	}
}

func TestAnalyzeErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := NewModel(s, Config{D: 2, DPrime: 2, C: 3, N: 3, Heads: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Analyze(m); err == nil || !strings.Contains(err.Error(), "Heads = 2") {
		t.Errorf("Analyze of a 2-head model: error %v, want one naming Heads", err)
	}
	sq := gd.Matrix{Rows: 6, Cols: 6, Data: make([]float64, 36)}
	bad := gd.Matrix{Rows: 5, Cols: 6, Data: make([]float64, 30)}
	short := gd.Matrix{Rows: 6, Cols: 6, Data: make([]float64, 3)}
	cases := []struct {
		name          string
		d, dp         int
		wq, wk, wv, p gd.Matrix
		want          string
	}{
		{"d", 0, 2, sq, sq, sq, sq, "d = 0"},
		{"wq rows", 2, 2, bad, sq, sq, sq, "wq is 5x6"},
		{"wv rows", 2, 2, sq, sq, bad, sq, "wv is 5x6"},
		{"short", 2, 2, sq, sq, sq, short, "p is 6x6 with 3 values"},
	}
	for _, c := range cases {
		if _, err := AnalyzeMatrices(c.d, c.dp, c.wq, c.wk, c.wv, c.p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
