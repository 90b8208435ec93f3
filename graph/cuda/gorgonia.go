package cuda

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph/internal/gops"
)

// Gorgonia's own ops (matrix products, elementwise ops, broadcasts, sums,
// transposes, concatenations, slices, reshapes, sizes) are recognised, and
// their parameters read, by package gops (shared with the host executor).

// lowerGorgonia lowers Gorgonia's ops; nil for an op it does not know.
func lowerGorgonia(x *Exec, v *value, op G.Op) (devOp, error) {
	s := op.String()
	switch gops.KindOf(op) {
	case gops.LinAlg:
		if tA, tB, batched, ok := gops.LinAlgArgs(s); ok {
			return lowerLinAlg(v, tA, tB, batched), nil
		}
	case gops.ElemUnary:
		return lowerUnary(v, s), nil
	case gops.ElemBin:
		return lowerBinary(v, s), nil
	case gops.Repeat:
		if along, ok := gops.RepeatArgs(s); ok {
			return lowerRepeat(v, along), nil
		}
	case gops.Sum:
		if along, ok := gops.SumArgs(s); ok {
			return lowerSum(x, v, along)
		}
	case gops.Transpose:
		if pattern, ok := gops.TransposeArgs(s); ok {
			return lowerTranspose(v, pattern), nil
		}
	case gops.Concat:
		if axis, ok := gops.ConcatArgs(s); ok {
			return concatAlong(v, axis), nil
		}
	case gops.Slice:
		sl, ok := op.(interface{ IsSlice() tensor.Slice })
		if along, ok2 := gops.SliceAlong(s); ok && ok2 {
			return lowerGorgoniaSlice(v, sl.IsSlice(), along), nil
		}
	}
	return nil, nil
}
