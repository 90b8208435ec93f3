package gd

import (
	"math"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
)

// TestStepSize checks that StepSize is exp(log_alpha) from the parameter's
// value, before any run and after the parameter changes, and Cfg.Alpha
// with FixedAlpha.
func TestStepSize(t *testing.T) {
	s, err := graph.NewScope(graph.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{D: 2, DPrime: 1, N: 3, Kernel: layers.Linear(), Likelihood: Gaussian(), Alpha: 0.7}
	m, err := NewModel(s.Sub("m"), cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := m.StepSize(); err != nil || math.Abs(a-0.7) > 1e-12 {
		t.Fatalf("initial α: got %v, %v; want 0.7", a, err)
	}
	p, ok := s.Lookup("m/log_alpha")
	if !ok {
		t.Fatal("no m/log_alpha")
	}
	if err := graph.SetValue(p, []float64{math.Log(1.5)}); err != nil {
		t.Fatal(err)
	}
	if a, err := m.StepSize(); err != nil || math.Abs(a-1.5) > 1e-12 {
		t.Fatalf("after setting log_alpha = log 1.5: got %v, %v", a, err)
	}
	cfg.FixedAlpha = true
	f, err := NewModel(s.Sub("f"), cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := f.StepSize(); err != nil || a != 0.7 {
		t.Fatalf("FixedAlpha: got %v, %v; want 0.7", a, err)
	}
}
