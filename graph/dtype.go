package graph

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Float32 and Float64 are the two dtypes gdattn graphs support.
var (
	Float32 = tensor.Float32
	Float64 = tensor.Float64
)

// ParseDtype maps "float32"/"float64" (also "f32"/"f64") to a dtype.
func ParseDtype(s string) (tensor.Dtype, error) {
	switch s {
	case "float32", "f32":
		return tensor.Float32, nil
	case "float64", "f64":
		return tensor.Float64, nil
	}
	return tensor.Dtype{}, fmt.Errorf("graph: unknown dtype %q (want float32 or float64)", s)
}

// CheckDtype returns an error unless dt is float32 or float64.
func CheckDtype(dt tensor.Dtype) error {
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return fmt.Errorf("graph: unsupported dtype %v (want float32 or float64)", dt)
	}
	return nil
}

// NewTensor returns a dense tensor of dtype dt and the given shape holding vals
// (converted to dt).
func NewTensor(dt tensor.Dtype, shape tensor.Shape, vals []float64) (*tensor.Dense, error) {
	if err := CheckDtype(dt); err != nil {
		return nil, err
	}
	if len(shape) == 0 {
		return nil, fmt.Errorf("graph: NewTensor needs rank >= 1 (scalars are G.NewF64/G.NewF32 values)")
	}
	size, err := CheckShape(shape)
	if err != nil {
		return nil, fmt.Errorf("graph: NewTensor: %w", err)
	}
	if len(vals) != size {
		return nil, fmt.Errorf("graph: %d values for shape %v", len(vals), shape)
	}
	var backing any
	if dt == tensor.Float64 {
		b := make([]float64, len(vals))
		copy(b, vals)
		backing = b
	} else {
		b := make([]float32, len(vals))
		for i, v := range vals {
			b[i] = float32(v)
		}
		backing = b
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing)), nil
}

// Values returns a copy of the node's current value as float64s (row-major).
func Values(n *G.Node) ([]float64, error) {
	if n == nil {
		return nil, fmt.Errorf("graph: Values: node is nil")
	}
	v := n.Value()
	if v == nil {
		return nil, fmt.Errorf("graph: node %q has no value (run the machine first)", n.Name())
	}
	return valueFloats(v)
}

// GradValues returns a copy of the node's gradient as float64s.
func GradValues(n *G.Node) ([]float64, error) {
	if n == nil {
		return nil, fmt.Errorf("graph: GradValues: node is nil")
	}
	gv, err := n.Grad()
	if err != nil {
		return nil, fmt.Errorf("graph: gradient of %q: %w", n.Name(), err)
	}
	return valueFloats(gv)
}

func valueFloats(v G.Value) ([]float64, error) {
	switch x := v.Data().(type) {
	case []float64:
		out := make([]float64, len(x))
		copy(out, x)
		return out, nil
	case []float32:
		out := make([]float64, len(x))
		for i, f := range x {
			out[i] = float64(f)
		}
		return out, nil
	case float64:
		return []float64{x}, nil
	case float32:
		return []float64{float64(x)}, nil
	}
	return nil, fmt.Errorf("graph: unsupported value type %T", v.Data())
}

// Scalar returns a scalar node's value as float64.
func Scalar(n *G.Node) (float64, error) {
	vs, err := Values(n)
	if err != nil {
		return 0, err
	}
	if len(vs) != 1 {
		return 0, fmt.Errorf("graph: node %q holds %d values, want a scalar", n.Name(), len(vs))
	}
	return vs[0], nil
}

// SetValue copies vals (converted to the node's dtype) into the backing store
// of n's current value, without reallocating, so a compiled machine sees the
// new data on its next run. len(vals) must equal the node's size.
func SetValue(n *G.Node, vals []float64) error {
	if n == nil {
		return fmt.Errorf("graph: SetValue: node is nil")
	}
	v := n.Value()
	if v == nil {
		return fmt.Errorf("graph: node %q has no value to overwrite", n.Name())
	}
	switch x := v.Data().(type) {
	case []float64:
		if len(x) != len(vals) {
			return fmt.Errorf("graph: node %q has %d elements, got %d values", n.Name(), len(x), len(vals))
		}
		copy(x, vals)
	case []float32:
		if len(x) != len(vals) {
			return fmt.Errorf("graph: node %q has %d elements, got %d values", n.Name(), len(x), len(vals))
		}
		return ToFloat32(x, vals)
	default:
		// Scalar nodes hold *G.F64 / *G.F32 values: write through the pointer.
		if len(vals) != 1 {
			return fmt.Errorf("graph: scalar node %q needs 1 value, got %d", n.Name(), len(vals))
		}
		switch p := v.(type) {
		case *G.F64:
			*p = G.F64(vals[0])
		case *G.F32:
			*p = G.F32(float32(vals[0]))
		default:
			return fmt.Errorf("graph: node %q: unsupported value type %T", n.Name(), v)
		}
	}
	return nil
}

// ToFloat32 sets dst[i] = float32(src[i]) for every i < len(src): Go's
// conversion (round to nearest even), the bulk of it with AVX where the
// machine has it (the same bits). It returns an error, writing nothing,
// when dst is shorter than src.
func ToFloat32(dst []float32, src []float64) error {
	if len(dst) < len(src) {
		return fmt.Errorf("graph: ToFloat32: %d destination elements for %d values", len(dst), len(src))
	}
	dst = dst[:len(src)]
	i := 0
	if haveAddAVX2 && len(src) >= 16 {
		narrowF64(&dst[0], &src[0], len(src))
		i = len(src) &^ 15
	}
	for ; i < len(src); i++ {
		dst[i] = float32(src[i])
	}
	return nil
}

// AllFinite reports whether every value is finite.
func AllFinite(vals []float64) bool {
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
