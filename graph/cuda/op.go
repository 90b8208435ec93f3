package cuda

import (
	"fmt"

	"github.com/gdattn/gdattn/graph/internal/gops"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// devOp is the device implementation of one node's op.
type devOp interface {
	run(x *Exec, v *value) error
}

// preparer is a devOp with work on the host before each run's launches:
// checking and uploading what it derives from the run's host inputs (the
// scatters' order of the ids). Exec calls prepare after the inputs'
// uploads, every Run and RunStep, and also before the replay of a captured
// step, whose launches it must leave unchanged (device buffers fixed at
// lowering, copies outside the capture).
type preparer interface {
	prepare(x *Exec) error
}

// devFunc adapts a function to devOp.
type devFunc func(x *Exec, v *value) error

func (f devFunc) run(x *Exec, v *value) error { return f(x, v) }

// lower picks v's device implementation: it sets v.dev, or v.alias for a
// free reshape, or leaves both unset for the CPU fallback. gdattn's ops are
// recognised by a type switch on their exported types in package ops and
// read through their accessors, so a change to an op's parameters breaks
// this package's build (CI builds it with -tags gdcuda and -tags cudaemu)
// rather than its lowering. Gorgonia's ops (pinned at v0.9.18, unexported
// types) are recognised by the dynamic type of the op its exported
// constructor builds and read through their exported methods (gorgonia.go).
// An op or a shape the lowering does not expect runs on the host: a new op
// costs speed, never correctness.
func lower(x *Exec, v *value) error {
	if v.dt != tensor.Float32 && v.dt != tensor.Float64 {
		return nil
	}
	op := v.n.Op()
	if _, ok := op.(*ops.ReshapeOp); ok || gops.KindOf(op) == gops.Reshape {
		if len(v.ins) == 1 && v.ins[0].bytes == v.bytes && v.ins[0].dt == v.dt {
			v.alias = true
		}
		return nil
	}
	if gops.KindOf(op) == gops.Size {
		return lowerSize(v, op)
	}
	for _, in := range v.ins {
		if in.dt != v.dt && in.dt != tensor.Int {
			return nil // mixed float dtypes: leave it to the op itself
		}
	}
	var dev devOp
	var err error
	switch op := op.(type) {
	case *ops.MatMulOp:
		dev = lowerMM(v, op.TransA(), op.TransB())
	case *ops.BatchedMatMulOp:
		dev = lowerBMM(v, op.TransA(), op.TransB())
	case *ops.SliceOp:
		lo, hi := op.Band()
		dev = lowerSlice(v, op.Shape(), op.Axis(), lo, hi, op.Backward())
	case *ops.SoftMaxOp:
		dev = lowerSoftmax(v, op.Log(), false)
	case *ops.SoftMaxGradOp:
		dev = lowerSoftmax(v, op.Log(), true)
	case *ops.ConcatLastOp:
		dev = lowerConcatLast(v)
	case *ops.ExpectationOp:
		dev, err = lowerExpect(x, v, op, expectFwd, 0)
	case *ops.ExpectationGradOp:
		dev, err = lowerExpect(x, v, op.Forward(), expectDF, 0)
	case *ops.ExpectationParamGradOp:
		dev, err = lowerExpect(x, v, op.Forward(), expectParam, op.Wrt())
	case *ops.HeadOp:
		dev, err = lowerHead(x, v, op)
	case *ops.HeadGradOp:
		dev, err = lowerHeadGrad(x, v, op.Head(), 0)
	case *ops.HeadParamGradOp:
		dev, err = lowerHeadGrad(x, v, op.Head(), op.Wrt())
	case *ops.GatherOp:
		dev, err = lowerGather(x, v, op.Vocab(), op.Dim(), op.Centered())
	case *ops.ScatterOp:
		dev, err = lowerScatter(x, v, op.Vocab(), op.Dim(), op.Centered())
	case *ops.GatherColsOp:
		d, vv, r := op.Dims()
		dev = lowerGatherCols(v, d, vv, r)
	case *ops.ScatterColsOp:
		d, vv, r := op.Dims()
		dev, err = lowerScatterCols(x, v, d, vv, r)
	case *ops.TiedLogitsOp:
		dev = lowerTied(v, op)
	case *ops.SparseCrossEntropyOp:
		dev, err = lowerXent(x, v, op)
	case *ops.LayerNormOp:
		dev, err = lowerLayerNorm(x, v, op)
	case *ops.LayerNormGradOp:
		dev, err = lowerLayerNormGrad(x, v, op)
	case *ops.LayerNormMeanGradOp:
		dev, err = lowerLayerNormMeanGrad(x, v)
	case *ops.LayerNormParamGradOp:
		dev, err = lowerLayerNormParamGrad(x, v, op)
	case *ops.GELUOp:
		dev = lowerGELU(v, false)
	case *ops.GELUGradOp:
		dev = lowerGELU(v, true)
	case *ops.KernelOp:
		dev, err = lowerKernel(x, v, op, -1)
	case *ops.KernelGradOp:
		dev, err = lowerKernel(x, v, op.Forward(), op.Wrt())
	case *ops.KernelApplyOp:
		dev, err = lowerKernelApply(x, v, op, -1)
	case *ops.KernelApplyGradOp:
		dev, err = lowerKernelApply(x, v, op.Forward(), op.Wrt())
	default:
		dev, err = lowerGorgonia(x, v, op)
	}
	if err != nil {
		return err
	}
	if dev != nil {
		v.dev = dev
	}
	return nil
}

// suffix is the kernel name suffix of a dtype.
func suffix(dt tensor.Dtype) string {
	if dt == tensor.Float32 {
		return "_f32"
	}
	return "_f64"
}

// lowerSize turns Gorgonia's sizeOp (the length of an axis, a constant of
// the graph's static shapes) into a constant uploaded once.
func lowerSize(v *value, op G.Op) error {
	if len(v.ins) != 1 || !v.shape.IsScalar() {
		return nil
	}
	size, axis, ok := gops.SizeArgs(op)
	if !ok {
		return nil
	}
	if size == 0 {
		s := v.ins[0].shape
		if axis < 0 || axis >= len(s) {
			return nil
		}
		size = s[axis]
	}
	switch v.dt {
	case tensor.Float64:
		v.cval = G.NewF64(float64(size))
	case tensor.Float32:
		v.cval = G.NewF32(float32(size))
	default:
		return nil
	}
	v.kind = kindConst
	return nil
}

// launch runs kernel name+suffix(v.dt) over n items; n is also the
// kernel's first parameter.
func (x *Exec) launch(v *value, name string, n int64, args ...any) error {
	if n <= 0 {
		return nil
	}
	return x.b.Launch(name+suffix(v.dt), n, append([]any{n}, args...)...)
}

// scalarArg returns a function giving the device address of a scalar
// argument: input idx of v when learned, else a buffer holding fixed
// (uploaded once, in v's dtype).
func (x *Exec) scalarArg(v *value, learned bool, idx int, fixed float64) (func() Ptr, error) {
	if learned {
		if idx >= len(v.ins) || v.ins[idx].size != 1 {
			return nil, fmt.Errorf("scalar input %d missing", idx)
		}
		in := v.ins[idx]
		return func() Ptr { return in.ptr }, nil
	}
	buf, err := x.alloc(8)
	if err != nil {
		return nil, err
	}
	var hv G.Value = G.NewF64(fixed)
	if v.dt == tensor.Float32 {
		hv = G.NewF32(float32(fixed))
	}
	p, n, err := hostBytes(hv)
	if err != nil {
		return nil, err
	}
	if err := x.b.CopyHtoD(buf, p, n); err != nil {
		return nil, err
	}
	return func() Ptr { return buf }, nil
}
