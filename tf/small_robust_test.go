package tf

import (
	"math"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
)

// TestSmallRefusals: nil models and inconsistent matrices are errors (or
// NaN for the float-valued measures), never panics; a negative DK is
// reported as negative, not as a size beyond the limit.
func TestSmallRefusals(t *testing.T) {
	if _, err := Analyze(nil); err == nil {
		t.Error("Analyze(nil): no error")
	}
	var m *Model
	if set, err := m.PrepareContexts(nil, nil); set != nil || err == nil || !strings.Contains(err.Error(), "model is nil") {
		t.Errorf("PrepareContexts on a nil model: %v, %v", set, err)
	}
	if err := m.FeedPrepared(nil, nil); err == nil || !strings.Contains(err.Error(), "model is nil") {
		t.Errorf("FeedPrepared on a nil model: %v", err)
	}
	bad := layers.Matrix{Rows: 3, Cols: 3, Data: []float64{1, 2}}
	if d := Diagonality(bad); !math.IsNaN(d) {
		t.Errorf("Diagonality of an inconsistent matrix: %v, want NaN", d)
	}
	if d := DiagonalSpread(bad); !math.IsNaN(d) {
		t.Errorf("DiagonalSpread of an inconsistent matrix: %v, want NaN", d)
	}
	s, _ := graph.NewScope(graph.Float64, 0)
	_, err := NewModel(s, Config{D: 2, DPrime: 2, C: 2, N: 2, DK: -1}, 1)
	if err == nil || !strings.Contains(err.Error(), "DK = -1") || strings.Contains(err.Error(), "exceeds") {
		t.Errorf("DK = -1: %v, want an error naming DK = -1 as negative", err)
	}
}
