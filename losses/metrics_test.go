package losses

import (
	"math"
	"strings"
	"testing"
)

// Two examples, C = 3, shared by the NLL and ProbMSE tests.
var (
	probs2     = []float64{0.5, 0.25, 0.25, 0.1, 0.6, 0.3}
	trueProbs2 = []float64{0.4, 0.3, 0.3, 0.2, 0.2, 0.6}
	labels2    = []int{0, 2}
)

func TestNLL(t *testing.T) {
	for _, tc := range []struct {
		name   string
		probs  []float64
		labels []int
		C      int
		want   float64
	}{
		// (-ln 0.5 - ln 0.3) / 2.
		{"hand", probs2, labels2, 3, 0.9485599924429406},
		{"certain", []float64{0, 1}, []int{1}, 2, 0},
		{"zero prob", []float64{0, 1, 0.5, 0.5}, []int{0, 1}, 2, math.Inf(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NLL(tc.probs, tc.labels, tc.C)
			if err != nil {
				t.Fatal(err)
			}
			if !(got == tc.want || math.Abs(got-tc.want) <= 1e-15*math.Abs(tc.want)) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTopK(t *testing.T) {
	third := 1.0 / 3
	probs := []float64{
		0.5, 0.3, 0.2, // label 0: top-1 hit
		0.2, 0.5, 0.3, // label 2: second
		0.4, 0.4, 0.2, // label 0: tied with class 1, which counts against it
		third, third, third, // label 1: tied with both others
	}
	labels := []int{0, 2, 0, 1}
	for _, tc := range []struct {
		k    int
		want float64
	}{
		{1, 0.25}, // row 0 only
		{2, 0.75}, // rows 0, 1, 2
		{3, 1},    // everything
	} {
		got, err := TopK(probs, labels, 3, tc.k)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("TopK(k=%d) = %v, want %v", tc.k, got, tc.want)
		}
	}
	top1, err := Top1(probs, labels, 3)
	if err != nil || top1 != 0.25 {
		t.Errorf("Top1 = %v, %v; want 0.25", top1, err)
	}
	// Logits work too: only the order matters, -Inf included.
	logits := []float64{3, 1, math.Inf(-1), 0, 2, 1}
	if got, err := Top1(logits, []int{0, 2}, 3); err != nil || got != 0.5 {
		t.Errorf("Top1 on logits = %v, %v; want 0.5", got, err)
	}
}

func TestProbMSE(t *testing.T) {
	// d = (0.5 - 0.4, 0.3 - 0.6) = (0.1, -0.3): (0.01 + 0.09) / 2.
	got, err := ProbMSE(probs2, trueProbs2, labels2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got-0.05) > 1e-16 {
		t.Errorf("got %v, want 0.05", got)
	}
	if got, err := ProbMSE(probs2, probs2, labels2, 3); err != nil || got != 0 {
		t.Errorf("ProbMSE(p, p) = %v, %v; want 0", got, err)
	}
}

func TestMetricsBadInput(t *testing.T) {
	nan := math.NaN()
	nll := func(p []float64, l []int, C, _ int) error { _, err := NLL(p, l, C); return err }
	topk := func(p []float64, l []int, C, k int) error { _, err := TopK(p, l, C, k); return err }
	top1 := func(p []float64, l []int, C, _ int) error { _, err := Top1(p, l, C); return err }
	mseP := func(p []float64, l []int, C, _ int) error { _, err := ProbMSE(p, trueProbs2, l, C); return err }
	mseT := func(p []float64, l []int, C, _ int) error { _, err := ProbMSE(probs2, p, l, C); return err }
	type fn = func([]float64, []int, int, int) error
	for _, tc := range []struct {
		name   string
		f      fn
		probs  []float64
		labels []int
		C, k   int
		want   string
	}{
		{"NLL/C", nll, probs2, labels2, 0, 0, "losses: NLL: C = 0"},
		{"NLL/empty", nll, nil, nil, 3, 0, "labels is empty"},
		{"NLL/label", nll, probs2, []int{0, 3}, 3, 0, "labels[1] = 3"},
		{"NLL/length", nll, probs2[:5], labels2, 3, 0, "probs has 5 values, want len(labels)*C = 2*3 = 6"},
		{"NLL/nan", nll, []float64{0.5, nan, 0.5, 0.5}, []int{0, 0}, 2, 0, "probs[1] is NaN"},
		{"NLL/negative", nll, []float64{0.5, 0.5, -0.1, 1.1}, []int{0, 0}, 2, 0, "probs[2] = -0.1 is not a probability"},
		{"NLL/above 1", nll, []float64{2, -1}, []int{0}, 2, 0, "probs[0] = 2 is not a probability"},
		{"TopK/k0", topk, probs2, labels2, 3, 0, "losses: TopK: k = 0, want 1 <= k <= C = 3"},
		{"TopK/k>C", topk, probs2, labels2, 3, 4, "k = 4"},
		{"TopK/label", topk, probs2, []int{-1, 0}, 3, 1, "labels[0] = -1"},
		{"TopK/length", topk, probs2, []int{0}, 3, 1, "probs has 6 values, want len(labels)*C = 1*3 = 3"},
		{"TopK/nan", topk, []float64{nan, 1}, []int{0}, 2, 1, "probs[0] is NaN"},
		{"Top1/C", top1, probs2, labels2, -2, 0, "losses: Top1: C = -2"},
		{"Top1/empty", top1, probs2, []int{}, 3, 0, "labels is empty"},
		{"ProbMSE/probs", mseP, []float64{0.5, 0.5, 0.5, 1.5, 0, 0}, labels2, 3, 0, "probs[3] = 1.5 is not a probability"},
		{"ProbMSE/trueProbs", mseT, []float64{0.5, 0.5, 0.5, nan, 0, 0}, labels2, 3, 0, "trueProbs[3] is NaN"},
		{"ProbMSE/length", mseT, trueProbs2[:3], labels2, 3, 0, "trueProbs has 3 values"},
		{"ProbMSE/label", mseP, probs2, []int{0, 5}, 3, 0, "labels[1] = 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.f(tc.probs, tc.labels, tc.C, tc.k)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
