package ops

import (
	"fmt"
	"hash"
	"hash/fnv"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// checkFloat returns an error unless dt is float32 or float64, the two
// dtypes every op of this package computes in.
func checkFloat(dt tensor.Dtype) error {
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return fmt.Errorf("unsupported dtype %v (want float32 or float64)", dt)
	}
	return nil
}

// is32 reports whether F is float32.
func is32[F float32 | float64]() bool {
	var zero F
	_, ok := any(zero).(float32)
	return ok
}

// hashOf is an op's Hashcode: FNV-1a of what its WriteHash writes.
func hashOf(op interface{ WriteHash(hash.Hash) }) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

// grow returns s resliced to n elements, or a new slice when s is too
// short.
func grow[F float32 | float64 | int](s []F, n int) []F {
	if cap(s) < n {
		return make([]F, n)
	}
	return s[:n]
}

// rows is the product of all but the last dimension.
func rows(s tensor.Shape) int {
	r := 1
	for _, d := range s[:len(s)-1] {
		r *= d
	}
	return r
}

// denseData returns the flat data of a tensor value, materialising views.
func denseData(v G.Value) any {
	if d, ok := v.(*tensor.Dense); ok && d.IsView() {
		return d.Materialize().Data()
	}
	return v.Data()
}
