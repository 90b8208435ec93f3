package layers

import (
	"github.com/gdattn/gdattn/graph"
	G "gorgonia.org/gorgonia"
)

// expFast is graph.Exp32: exp for results stored as float32.
func expFast(x float64) float64 { return graph.Exp32(x) }

// preallocOp is embedded by the ops that implement UsePreallocDo by
// running Do with the offered value at hand (see graph.OutBuffer).
type preallocOp struct{ pre G.Value }

// with runs do with p offered as the output memory.
func (o *preallocOp) with(p G.Value, do func() (G.Value, error)) (G.Value, error) {
	o.pre = p
	defer func() { o.pre = nil }()
	return do()
}

// is32 reports whether F is float32.
func is32[F float32 | float64]() bool {
	var zero F
	_, ok := any(zero).(float32)
	return ok
}
