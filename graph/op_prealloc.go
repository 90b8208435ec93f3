package graph

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// OutBuffer returns n values of dtype F for an op's result: the data of p,
// the value Gorgonia's tape machine offers an op that implements
// UsePreallocDo (the memory of the node's register from the previous run),
// when p is a contiguous dense tensor of that dtype and size that shares no
// memory with the op's inputs; otherwise a fresh slice. Its contents are
// arbitrary when reused: the op must write every element.
//
// Reusing the register's memory saves an allocation (and the clearing of
// it) per op and run.
func OutBuffer[F float32 | float64](p G.Value, inputs []G.Value, n int) []F {
	if d, ok := p.(*tensor.Dense); ok && !d.IsView() && n > 0 {
		if s, ok := d.Data().([]F); ok && len(s) == n {
			shared := false
			for _, in := range inputs {
				if in == nil {
					continue
				}
				if x, ok := in.Data().([]F); ok && len(x) > 0 && &x[0] == &s[0] {
					shared = true
				}
			}
			if !shared {
				return s
			}
		}
	}
	return make([]F, n)
}

// preallocOp is embedded by the ops that implement UsePreallocDo by
// running Do with the offered value at hand.
type preallocOp struct{ pre G.Value }

// with runs do with p offered as the output memory.
func (o *preallocOp) with(p G.Value, do func() (G.Value, error)) (G.Value, error) {
	o.pre = p
	defer func() { o.pre = nil }()
	return do()
}
