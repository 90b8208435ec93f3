package tf

import (
	"math"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
)

func TestDiagonality(t *testing.T) {
	m := func(r, c int, v ...float64) layers.Matrix { return layers.Matrix{Rows: r, Cols: c, Data: v} }
	cases := []struct {
		name           string
		m              layers.Matrix
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

func TestAnalyzeErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := NewModel(s, Config{D: 2, DPrime: 2, C: 3, N: 3, Heads: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Analyze(m); err == nil || !strings.Contains(err.Error(), "Heads = 2") {
		t.Errorf("Analyze of a 2-head model: error %v, want one naming Heads", err)
	}
	sq := layers.Matrix{Rows: 6, Cols: 6, Data: make([]float64, 36)}
	bad := layers.Matrix{Rows: 5, Cols: 6, Data: make([]float64, 30)}
	short := layers.Matrix{Rows: 6, Cols: 6, Data: make([]float64, 3)}
	cases := []struct {
		name          string
		d, dp         int
		wq, wk, wv, p layers.Matrix
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
