package cuda

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// devOp is the device implementation of one node's op.
type devOp interface {
	run(x *Exec, v *value) error
}

// devFunc adapts a function to devOp.
type devFunc func(x *Exec, v *value) error

func (f devFunc) run(x *Exec, v *value) error { return f(x, v) }

// lower picks v's device implementation: it sets v.dev, or v.alias for a
// free reshape, or leaves both unset for the CPU fallback. Ops are
// recognised by their Go type name (most are unexported, in Gorgonia, graph
// and layers) and their parameters read with reflect; anything unexpected
// leaves the op on the fallback path, so a new op costs speed, never
// correctness. That includes a new option of an op lowered here: an op of
// graph or layers whose struct has a field opFields does not list runs on
// the host, and its report name says which field ("[unlowered field
// layers.gatherOp.center]").
func lower(x *Exec, v *value) error {
	if v.dt != tensor.Float32 && v.dt != tensor.Float64 {
		return nil
	}
	op := v.n.Op()
	typ := strings.TrimPrefix(fmt.Sprintf("%T", op), "*")
	if f := unknownField(op); f != "" {
		// An option this lowering does not know (added to the op after
		// the lowering was written) could change what the op computes:
		// the host runs it, and the report says why.
		v.what += " [unlowered field " + f + "]"
		return nil
	}
	switch typ {
	case "gorgonia.reshapeOp", "ops.ReshapeOp":
		if len(v.ins) == 1 && v.ins[0].bytes == v.bytes && v.ins[0].dt == v.dt {
			v.alias = true
		}
		return nil
	case "gorgonia.sizeOp":
		return lowerSize(v)
	}
	for _, in := range v.ins {
		if in.dt != v.dt && in.dt != tensor.Int {
			return nil // mixed float dtypes: leave it to the op itself
		}
	}
	var dev devOp
	switch typ {
	case "gorgonia.linAlgBinOp":
		dev = lowerLinAlg(v, op)
	case "ops.MatMulOp":
		dev = lowerMM(v, op)
	case "ops.BatchedMatMulOp":
		dev = lowerBMM(v, op)
	case "gorgonia.elemUnaryOp":
		dev = lowerUnary(v, op)
	case "gorgonia.elemBinOp":
		dev = lowerBinary(v, op)
	case "gorgonia.repeatOp":
		dev = lowerRepeat(v, op)
	case "gorgonia.sumOp":
		var err error
		if dev, err = lowerSum(x, v, op); err != nil {
			return err
		}
	case "gorgonia.transposeOp":
		dev = lowerTranspose(v, op)
	case "gorgonia.concatOp":
		dev = lowerConcat(v, op)
	case "ops.SliceOp":
		dev = lowerSlice(v, op)
	case "gorgonia.sliceOp":
		dev = lowerGorgoniaSlice(v, op)
	case "ops.SoftMaxOp", "ops.SoftMaxGradOp":
		dev = lowerSoftmax(v, op, typ == "ops.SoftMaxGradOp")
	case "ops.ConcatLastOp":
		dev = lowerConcatLast(v)
	case "ops.ExpectationOp", "ops.ExpectationGradOp", "ops.ExpectationParamGradOp":
		kind := map[string]string{"ops.ExpectationOp": "fwd", "ops.ExpectationGradOp": "df", "ops.ExpectationParamGradOp": "param"}[typ]
		var err error
		if dev, err = lowerExpect(x, v, op, kind); err != nil {
			return err
		}
	case "ops.HeadOp", "ops.HeadGradOp", "ops.HeadParamGradOp":
		part := map[string]string{"ops.HeadOp": "fwd", "ops.HeadGradOp": "dz", "ops.HeadParamGradOp": "param"}[typ]
		var err error
		if dev, err = lowerHead(x, v, op, part); err != nil {
			return err
		}
	case "ops.GatherOp", "ops.ScatterOp":
		lowerFn := lowerGather
		if typ == "ops.ScatterOp" {
			lowerFn = lowerScatter
		}
		var err error
		if dev, err = lowerFn(x, v, op); err != nil {
			return err
		}
	case "ops.TiedLogitsOp":
		dev = lowerTied(v, op)
	case "ops.SparseCrossEntropyOp":
		var err error
		if dev, err = lowerXent(x, v, op); err != nil {
			return err
		}
	case "ops.KernelOp", "ops.KernelGradOp":
		var err error
		if dev, err = lowerKernel(x, v, op, typ == "ops.KernelGradOp"); err != nil {
			return err
		}
	}
	if dev != nil {
		v.dev = dev
	}
	return nil
}

// opFields lists, for each op type of gdattn's own packages that lower
// maps, every field of the op's struct the lowering knows: the fields it
// reads, and those it knows not to matter on the device (host state,
// caches, bookkeeping). An op whose struct has a field not listed here runs
// on the host (unknownField): a new option of an op the executor lowers
// (as center was for the gather) must not be silently ignored. Struct or
// pointer-to-struct fields whose type is itself listed (a gradient op's
// forward op) are checked too. Gorgonia's ops, pinned at v0.9.18, are not
// listed.
var opFields = map[string][]string{
	"ops.MatMulOp":               {"transA", "transB", "ra", "rb", "dataA", "dataB"},
	"ops.BatchedMatMulOp":        {"transA", "transB"},
	"ops.ReshapeOp":              {"from", "to"},
	"ops.SliceOp":                {"shape", "axis", "lo", "hi", "backward"},
	"ops.SoftMaxOp":              {"log"},
	"ops.SoftMaxGradOp":          {"log"},
	"ops.ConcatLastOp":           {"lead", "widths", "shapes", "data"},
	"ops.ExpectationOp":          {"id", "rankF", "st"},
	"ops.ExpectationGradOp":      {"e"},
	"ops.ExpectationParamGradOp": {"e", "wrt"},
	"ops.HeadOp":                 {"kind", "gFixed", "learnG", "ctx", "id", "st", "gst"},
	"ops.HeadGradOp":             {"head"},
	"ops.HeadParamGradOp":        {"head", "wrt"},
	"ops.GatherOp":               {"v", "d", "ids", "center"},
	"ops.ScatterOp":              {"v", "d", "ids", "center", "buf"},
	"ops.SparseCrossEntropyOp":   {"n", "c", "back", "fwd", "prob", "inv", "ready", "src"},
	"ops.KernelOp":               {"kind", "g", "learnG", "masked", "dataQK", "c"},
	"ops.KernelGradOp":           {"kernelOp", "wrt"},
	"ops.TiedLogitsOp":           {"n", "v", "d", "mode", "buf", "wt"},
}

// unknownField returns "type.field" for the first field of op (or of a
// listed op type it holds) that opFields does not list for its type, or ""
// when every field is known or op's type is not listed.
func unknownField(op any) string {
	return unknownFieldOf(reflect.ValueOf(op), map[reflect.Type]bool{})
}

func unknownFieldOf(rv reflect.Value, seen map[reflect.Type]bool) string {
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return ""
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct || seen[rv.Type()] {
		return ""
	}
	typ := strings.TrimPrefix(rv.Type().String(), "*")
	known, ok := opFields[typ]
	if !ok {
		return ""
	}
	seen[rv.Type()] = true
	for i := 0; i < rv.NumField(); i++ {
		name := rv.Type().Field(i).Name
		if !slices.Contains(known, name) {
			return typ + "." + name
		}
		if f := unknownFieldOf(rv.Field(i), seen); f != "" {
			return f
		}
	}
	return ""
}

// suffix is the kernel name suffix of a dtype.
func suffix(dt tensor.Dtype) string {
	if dt == tensor.Float32 {
		return "_f32"
	}
	return "_f64"
}

// field reads a field of an op (unexported included) by name; ok is false
// when the op has no such field. Embedded structs are searched too.
func field(op any, name string) (reflect.Value, bool) {
	rv := reflect.ValueOf(op)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return reflect.Value{}, false
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	f := rv.FieldByName(name)
	return f, f.IsValid()
}

func fieldBool(op any, name string) (bool, bool) {
	f, ok := field(op, name)
	if !ok || f.Kind() != reflect.Bool {
		return false, false
	}
	return f.Bool(), true
}

func fieldInt(op any, name string) (int, bool) {
	f, ok := field(op, name)
	if !ok {
		return 0, false
	}
	switch f.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(f.Int()), true
	}
	return 0, false
}

func fieldFloat(op any, name string) (float64, bool) {
	f, ok := field(op, name)
	if !ok || (f.Kind() != reflect.Float64 && f.Kind() != reflect.Float32) {
		return 0, false
	}
	return f.Float(), true
}

func fieldInts(op any, name string) ([]int, bool) {
	f, ok := field(op, name)
	if !ok || f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.Int {
		return nil, false
	}
	out := make([]int, f.Len())
	for i := range out {
		out[i] = int(f.Index(i).Int())
	}
	return out, true
}

// lowerSize turns Gorgonia's sizeOp (the length of an axis, a constant of
// the graph's static shapes) into a constant uploaded once.
func lowerSize(v *value) error {
	if len(v.ins) != 1 || !v.shape.IsScalar() {
		return nil
	}
	size, _ := fieldInt(v.n.Op(), "val")
	if size == 0 {
		axis, ok := fieldInt(v.n.Op(), "axis")
		s := v.ins[0].shape
		if !ok || axis < 0 || axis >= len(s) {
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
