package graph

import "testing"

// TestNilNodesAndScopeNames: nil nodes are errors, and Sub accepts any
// name (a path: "" is the scope itself, "a/b" two levels), never panicking.
func TestNilNodesAndScopeNames(t *testing.T) {
	if err := SetValue(nil, []float64{1}); err == nil {
		t.Error("SetValue(nil): no error")
	}
	if _, err := Values(nil); err == nil {
		t.Error("Values(nil): no error")
	}
	if _, err := GradValues(nil); err == nil {
		t.Error("GradValues(nil): no error")
	}
	s, _ := NewScope(Float64, 0)
	if got := s.Sub(""); got.Path() != "" {
		t.Errorf(`Sub(""): path %q, want ""`, got.Path())
	}
	if got := s.Sub("a").Sub("b/c"); got.Path() != "a/b/c" {
		t.Errorf(`Sub("a").Sub("b/c"): path %q`, got.Path())
	}
	if got := s.Sub("/a//b/"); got.Path() != "a/b" {
		t.Errorf(`Sub("/a//b/"): path %q`, got.Path())
	}
}
