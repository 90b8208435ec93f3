package gd

import (
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
)

// TestNegativeSizeMessages: a negative size is reported as negative, not as
// "-1 elements exceeds the limit".
func TestNegativeSizeMessages(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 0)
	_, err := NewLM(s, LMConfig{Vocab: 4, DPrime: 2, Context: 2, FF: true, FFHidden: -1}, LMOptions{Batch: 1})
	if err == nil || !strings.Contains(err.Error(), "FFHidden = -1") || strings.Contains(err.Error(), "exceeds") {
		t.Errorf("FFHidden = -1: %v", err)
	}
	_, err = NewModel(s, Config{D: -1, DPrime: 2, C: 2, N: 2}, 1)
	if err == nil || !strings.Contains(err.Error(), "D = -1") || strings.Contains(err.Error(), "exceeds") {
		t.Errorf("D = -1: %v", err)
	}
}
