package numeric

import (
	"fmt"
	"math"
	"testing"
)

// near reports whether got and want agree to rel tolerance tol (both NaN,
// or equal infinities, count as agreeing).
func near(got, want, tol float64) bool {
	if math.IsNaN(want) || math.IsInf(want, 0) {
		return got == want || (math.IsNaN(got) && math.IsNaN(want))
	}
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

func TestSoftmax(t *testing.T) {
	e1, e2, e3 := math.Exp(1), math.Exp(2), math.Exp(3)
	inf, nan := math.Inf(1), math.NaN()
	for _, tc := range []struct {
		name string
		x    []float64
		want []float64
	}{
		{"one", []float64{7}, []float64{1}},
		{"uniform", []float64{2, 2, 2, 2}, []float64{0.25, 0.25, 0.25, 0.25}},
		{"1,2,3", []float64{1, 2, 3}, []float64{e1 / (e1 + e2 + e3), e2 / (e1 + e2 + e3), e3 / (e1 + e2 + e3)}},
		// exp(1000) overflows; the shift by the maximum keeps it finite.
		{"large", []float64{1000, 1001, 1002}, []float64{e1 / (e1 + e2 + e3), e2 / (e1 + e2 + e3), e3 / (e1 + e2 + e3)}},
		{"-Inf class", []float64{0, -inf, 0}, []float64{0.5, 0, 0.5}},
		{"NaN", []float64{0, nan}, []float64{nan, nan}},
		{"all -Inf", []float64{-inf, -inf}, []float64{nan, nan}},
		{"empty", nil, []float64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Softmax(tc.x)
			if len(got) != len(tc.want) {
				t.Fatalf("len = %d, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if !near(got[i], tc.want[i], 1e-15) {
					t.Errorf("Softmax(%v)[%d] = %v, want %v", tc.x, i, got[i], tc.want[i])
				}
			}
			// In place gives the same bits.
			in := append([]float64(nil), tc.x...)
			SoftmaxInto(in, in)
			for i := range in {
				if math.Float64bits(in[i]) != math.Float64bits(got[i]) {
					t.Errorf("SoftmaxInto(x, x)[%d] = %v, want %v", i, in[i], got[i])
				}
			}
		})
	}
}

// TestSoftmaxOrder pins the arithmetic order the doc promises (callers
// rely on it for bit-identical results): exp(x_i − m), summed left to
// right, then divided by the sum.
func TestSoftmaxOrder(t *testing.T) {
	x := []float64{0.1, -2.7, 3.3, 1e-3, 0.77, -0.5, 2.2}
	m, s := math.Inf(-1), 0.0
	for _, v := range x {
		m = math.Max(m, v)
	}
	want := make([]float64, len(x))
	for i, v := range x {
		want[i] = math.Exp(v - m)
		s += want[i]
	}
	gm, gs := ExpShifted(make([]float64, len(x)), x)
	if gm != m || gs != s {
		t.Errorf("ExpShifted = %v, %v, want %v, %v", gm, gs, m, s)
	}
	got := Softmax(x)
	for i := range want {
		if w := want[i] / s; got[i] != w {
			t.Errorf("Softmax[%d] = %v, want %v exactly", i, got[i], w)
		}
	}
	lse := m + math.Log(s)
	if g := LogSumExp(x); g != lse {
		t.Errorf("LogSumExp = %v, want %v exactly", g, lse)
	}
	for i, g := range LogSoftmax(x) {
		if w := x[i] - lse; g != w {
			t.Errorf("LogSoftmax[%d] = %v, want %v exactly", i, g, w)
		}
	}
}

func TestLogSumExp(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, tc := range []struct {
		name string
		x    []float64
		want float64
	}{
		{"one", []float64{-3.5}, -3.5},
		{"two zeros", []float64{0, 0}, math.Ln2},
		{"1,2,3", []float64{1, 2, 3}, math.Log(math.Exp(1) + math.Exp(2) + math.Exp(3))},
		{"large", []float64{1000, 1000}, 1000 + math.Ln2},
		{"small", []float64{-1000, -1000}, -1000 + math.Ln2},
		{"-Inf element", []float64{-inf, 0}, 0},
		{"all -Inf", []float64{-inf, -inf}, -inf},
		{"empty", nil, -inf},
		{"+Inf", []float64{1, inf}, inf},
		{"NaN", []float64{1, nan}, nan},
	} {
		if got := LogSumExp(tc.x); !near(got, tc.want, 1e-15) {
			t.Errorf("%s: LogSumExp(%v) = %v, want %v", tc.name, tc.x, got, tc.want)
		}
	}
}

func TestLogSoftmax(t *testing.T) {
	inf := math.Inf(1)
	x := []float64{1, 2, -inf, 3}
	p := Softmax(x)
	got := LogSoftmax(x)
	for i := range x {
		if !near(got[i], math.Log(p[i]), 1e-15) {
			t.Errorf("LogSoftmax(%v)[%d] = %v, want log Softmax = %v", x, i, got[i], math.Log(p[i]))
		}
	}
	in := append([]float64(nil), x...)
	LogSoftmaxInto(in, in)
	for i := range in {
		if math.Float64bits(in[i]) != math.Float64bits(got[i]) {
			t.Errorf("LogSoftmaxInto(x, x)[%d] = %v, want %v", i, in[i], got[i])
		}
	}
	if got := LogSoftmax([]float64{-inf, -inf}); !math.IsNaN(got[0]) || !math.IsNaN(got[1]) {
		t.Errorf("LogSoftmax(all -Inf) = %v, want NaN", got)
	}
}

func TestMax(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		x    []float64
		want float64
	}{
		{nil, -inf},
		{[]float64{-inf}, -inf},
		{[]float64{-1, 4, 2}, 4},
		{[]float64{3, math.NaN(), 5}, math.NaN()},
	} {
		if got := Max(tc.x); !near(got, tc.want, 0) {
			t.Errorf("Max(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
}

func ExampleSoftmax() {
	p := Softmax([]float64{1, 2, 3})
	fmt.Printf("%.4f\n", p)
	fmt.Printf("%.4f\n", LogSumExp([]float64{1000, 1000})-1000) // log 2, no overflow
	// Output:
	// [0.0900 0.2447 0.6652]
	// 0.6931
}
