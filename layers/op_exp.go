package layers

import "github.com/gdattn/gdattn/graph"

// expFast is graph.Exp32: exp for results stored as float32.
func expFast(x float64) float64 { return graph.Exp32(x) }

// is32 reports whether F is float32.
func is32[F float32 | float64]() bool {
	var zero F
	_, ok := any(zero).(float32)
	return ok
}
