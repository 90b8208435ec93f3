package data

import (
	"math"
	"strings"
	"testing"
)

// TestProbabilities checks softmax and log-softmax against values computed
// by hand, with large and −Inf logits, and the refusals.
func TestProbabilities(t *testing.T) {
	inf := math.Inf(1)
	// e^0 : e^ln2 : 0 = 1 : 2 : 0, shifted by 1000 (a naive exp overflows).
	logits := []float64{1000, 1000 + math.Ln2, -inf}
	p, err := Probabilities(logits)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1.0 / 3, 2.0 / 3, 0}
	for i := range want {
		if math.Abs(p[i]-want[i]) > 1e-12 { // 1000+ln 2 is rounded to a multiple of 2^-43
			t.Errorf("p[%d] = %v, want %v", i, p[i], want[i])
		}
	}
	lp, err := LogProbabilities(logits)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if w := math.Log(want[i]); !(lp[i] == w || math.Abs(lp[i]-w) < 1e-12) {
			t.Errorf("log p[%d] = %v, want %v", i, lp[i], w)
		}
	}
	for _, c := range []struct {
		logits []float64
		want   string
	}{
		{nil, "no logits"},
		{[]float64{0, math.NaN()}, "logit 1 is NaN"},
		{[]float64{inf, 0}, "logit 0 is +Inf"},
		{[]float64{-inf, -inf}, "every logit is -Inf"},
	} {
		if _, err := Probabilities(c.logits); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Probabilities(%v): got %v, want %q", c.logits, err, c.want)
		}
		if _, err := LogProbabilities(c.logits); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LogProbabilities(%v): got %v, want %q", c.logits, err, c.want)
		}
	}
}
