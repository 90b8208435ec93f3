package data

import (
	"fmt"
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

// TestVocabRangesAgree: the restricted vocabulary's two constructors refuse
// the same ids with the same bound ([0, GPT2Pad)).
func TestVocabRangesAgree(t *testing.T) {
	for _, id := range []int{-1, GPT2Pad, GPT2VocabSize} {
		_, err1 := NewRestrictedVocab([][]int{{1, id}}, 0)
		_, err2 := VocabFromGPTIDs([]int{1, GPT2EOT, id})
		want := fmt.Sprintf("[0, %d)", GPT2Pad)
		for _, err := range []error{err1, err2} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("id %d: %v, want an error naming %s", id, err, want)
			}
		}
	}
}
