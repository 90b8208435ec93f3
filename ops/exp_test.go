package ops

import (
	"math"
	"testing"
)

// TestExp32 checks Exp32 against math.Exp over the range attention scores
// take, relative error 1e-9.
func TestExp32(t *testing.T) {
	worst := 0.0
	for x := -120.0; x <= 120; x += 0.0137 {
		want := math.Exp(x)
		got := Exp32(x)
		if e := math.Abs(got-want) / want; e > worst {
			worst = e
		}
	}
	if worst > 1e-9 {
		t.Errorf("Exp32: largest relative error %.3g, want < 1e-9", worst)
	}
	for _, x := range []float64{-800, 800, math.Inf(-1), math.Inf(1)} {
		if got, want := Exp32(x), math.Exp(x); got != want {
			t.Errorf("Exp32(%v) = %v, want %v", x, got, want)
		}
	}
	if !math.IsNaN(Exp32(math.NaN())) {
		t.Error("Exp32(NaN) is not NaN")
	}
	t.Logf("largest relative error %.3g", worst)
}
