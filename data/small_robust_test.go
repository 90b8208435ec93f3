package data

import (
	"strings"
	"testing"
)

// TestSmallRefusals: values that used to be accepted silently are errors
// naming them (issue 21).
func TestSmallRefusals(t *testing.T) {
	if _, err := NewRestrictedVocab([][]int{{1, 2}}, -1); err == nil || !strings.Contains(err.Error(), "minCount") {
		t.Errorf("NewRestrictedVocab minCount -1: %v", err)
	}
	if _, err := SampleWindows([]int{1, 2, 3, 4}, 1, 2, 1, -1); err == nil || !strings.Contains(err.Error(), "step") {
		t.Errorf("SampleWindows step -1: %v", err)
	}
	if _, err := NewSynthetic(SyntheticConfig{Scale: 1e308}, 1); err == nil || !strings.Contains(err.Error(), "Scale") {
		t.Errorf("NewSynthetic Scale 1e308: %v", err)
	}
	calls := 0
	ragged := func(ctx [][]int) ([][]float64, error) {
		calls++
		out := make([][]float64, len(ctx))
		for i := range out {
			out[i] = make([]float64, 6-calls) // one logit fewer each call
		}
		return out, nil
	}
	for _, s := range []string{DecodeGreedy, DecodeBeam} {
		calls = 0
		if _, err := Generate(ragged, [][]int{{1}}, DecodeConfig{Strategy: s, MaxNew: 3, Beams: 2, Stop: StopNever()}); err == nil || !strings.Contains(err.Error(), "logits") {
			t.Errorf("%s: Generate with ragged logits across calls: %v", s, err)
		}
	}
}
