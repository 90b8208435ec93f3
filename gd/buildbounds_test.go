package gd

import (
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
)

// TestBuildBounds: repeated structures are bounded by what can be built
// and compiled in reasonable time and memory (internal/bounds.MaxUnits,
// 2^10: 4096 GD blocks took 49 s to build and compile for one Predict, and
// growth is about quadratic), not merely by what overflows, and
// Reference's Steps by the memory its per-step results take. Each error
// names the field.
func TestBuildBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"Blocks 65536", Config{D: 2, DPrime: 2, C: 2, N: 2, Blocks: 1 << 16}, "Blocks"},
		{"Blocks·Heads", Config{D: 2, DPrime: 2, C: 2, N: 2, Blocks: 64, Heads: 64}, "Blocks·Heads"},
	} {
		s, _ := graph.NewScope(graph.Float64, 0)
		if _, err := NewModel(s, tc.cfg, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: NewModel: %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
	s, _ := graph.NewScope(graph.Float64, 0)
	if _, err := NewLM(s, LMConfig{Vocab: 4, DPrime: 2, Context: 2, Steps: 1 << 16}, LMOptions{Batch: 1}); err == nil || !strings.Contains(err.Error(), "Steps") {
		t.Errorf("LM Steps 65536: %v, want an error naming Steps", err)
	}
	x, y, we := []float64{0, 1, 1, 0}, []int{0, -1}, []float64{1, 0, 0, 1}
	for _, steps := range []int{1 << 40, 1 << 20} {
		_, err := Reference(x, y, 1, 2, 2, we, 2, 2, ReferenceConfig{Kernel: "softmax", Alpha: 1, Steps: steps})
		if err == nil || !strings.Contains(err.Error(), "cfg.Steps") {
			t.Errorf("Reference with Steps %d: %v, want an error naming cfg.Steps", steps, err)
		}
	}
	if _, err := Reference(x, y, 1, 2, 2, we, 2, 2, ReferenceConfig{Kernel: "softmax", Alpha: 1, Steps: 1 << 10}); err != nil {
		t.Errorf("Reference with Steps 1024: %v", err)
	}
}
