package cuda

import (
	"reflect"
	"strconv"
	"strings"
	"sync"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Gorgonia's own ops (matrix products, elementwise ops, broadcasts, sums,
// transposes, concatenations, slices, reshapes, sizes) have unexported types
// in gorgonia.org/gorgonia, pinned at v0.9.18 by go.mod. The executor
// recognises one by the dynamic type of the op that Gorgonia's exported
// constructor builds (G.Mul, G.Add, G.Exp, G.Broadcast, G.Sum, G.Transpose,
// G.Concat, G.Slice, G.Reshape, G.SizeOf, applied once to small nodes in a
// scratch graph), and reads its parameters from its exported methods: the
// printed form (String) and, for a slice, IsSlice. No field is read.
// TestGorgoniaOps checks every parser against ops built with known
// parameters, so a Gorgonia upgrade that changes a format fails that test.

// gKind is a Gorgonia op kind the executor lowers.
type gKind int

const (
	gNone      gKind = iota
	gLinAlg          // linAlgBinOp: A × B, A ××× B, A × b (with transposes)
	gElemBin         // elemBinOp: + - ⊙ ÷ ^ and comparisons
	gElemUnary       // elemUnaryOp: exp, ln, tanh, ...
	gRepeat          // repeatOp: numpy.repeat along one axis (broadcasts)
	gSum             // sumOp: sum along axes
	gTranspose       // transposeOp: an axis permutation
	gConcat          // concatOp: concatenation along one axis
	gSlice           // sliceOp: a slice of one axis
	gReshape         // reshapeOp: a reshape (a view)
	gSize            // sizeOp: the length of an axis
)

// gorgoniaKinds maps the dynamic types of Gorgonia's ops (as values and as
// pointers) to their kinds; built once.
var gorgoniaKinds = sync.OnceValue(func() map[reflect.Type]gKind {
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 2), G.WithName("a"))
	b := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 2), G.WithName("b"))
	col := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 1), G.WithName("col"))
	kinds := map[reflect.Type]gKind{}
	add := func(k gKind, n *G.Node, err error) {
		if err != nil || n == nil || n.Op() == nil {
			// Gorgonia refused a constructor it accepted when this was
			// written: its ops of this kind run on the host.
			return
		}
		t := reflect.TypeOf(n.Op())
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		kinds[t] = k
		kinds[reflect.PointerTo(t)] = k
	}
	n, err := G.Mul(a, b)
	add(gLinAlg, n, err)
	n, err = G.Add(a, b)
	add(gElemBin, n, err)
	n, err = G.Exp(a)
	add(gElemUnary, n, err)
	if _, rep, err := G.Broadcast(a, col, G.NewBroadcastPattern(nil, []byte{1})); err == nil {
		add(gRepeat, rep, nil)
	}
	n, err = G.Sum(a, 0)
	add(gSum, n, err)
	n, err = G.Transpose(a)
	add(gTranspose, n, err)
	n, err = G.Concat(0, a, b)
	add(gConcat, n, err)
	n, err = G.Slice(a, G.S(0, 1))
	add(gSlice, n, err)
	n, err = G.Reshape(a, tensor.Shape{4})
	add(gReshape, n, err)
	n, err = G.SizeOf(0, a)
	add(gSize, n, err)
	return kinds
})

// gorgoniaKindOf returns the kind of a Gorgonia op (gNone for any other).
func gorgoniaKindOf(op G.Op) gKind {
	if op == nil {
		return gNone
	}
	return gorgoniaKinds()[reflect.TypeOf(op)]
}

// lowerGorgonia lowers Gorgonia's ops; nil for an op it does not know.
func lowerGorgonia(x *Exec, v *value, op G.Op) (devOp, error) {
	s := op.String()
	switch gorgoniaKindOf(op) {
	case gLinAlg:
		if tA, tB, batched, ok := linAlgArgs(s); ok {
			return lowerLinAlg(v, tA, tB, batched), nil
		}
	case gElemUnary:
		return lowerUnary(v, s), nil
	case gElemBin:
		return lowerBinary(v, s), nil
	case gRepeat:
		if along, ok := repeatArgs(s); ok {
			return lowerRepeat(v, along), nil
		}
	case gSum:
		if along, ok := sumArgs(s); ok {
			return lowerSum(x, v, along)
		}
	case gTranspose:
		if pattern, ok := transposeArgs(s); ok {
			return lowerTranspose(v, pattern), nil
		}
	case gConcat:
		if axis, ok := concatArgs(s); ok {
			return concatAlong(v, axis), nil
		}
	case gSlice:
		sl, ok := op.(interface{ IsSlice() tensor.Slice })
		if along, ok2 := sliceAlong(s); ok && ok2 {
			return lowerGorgoniaSlice(v, sl.IsSlice(), along), nil
		}
	}
	return nil, nil
}

// linAlgArgs parses linAlgBinOp's String: "A × B", "Aᵀ × Bᵀ", "A ××× B"
// (batched), "A × b" (matrix-vector); ok false for the vector products
// ("a · b", "a ⊗ b"), which stay on the host.
func linAlgArgs(s string) (transA, transB, batched, ok bool) {
	f := strings.Fields(s)
	if len(f) != 3 || (f[0] != "A" && f[0] != "Aᵀ") {
		return false, false, false, false
	}
	switch f[1] {
	case "×":
	case "×××":
		batched = true
	default:
		return false, false, false, false
	}
	switch f[2] {
	case "B", "b":
	case "Bᵀ", "bᵀ":
		transB = true
	default:
		return false, false, false, false
	}
	return f[0] == "Aᵀ", transB, batched, true
}

// repeatArgs parses repeatOp's String, "Repeat<axis>".
func repeatArgs(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, "Repeat")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

// sumArgs parses sumOp's String, "Σ[<axes>]" (axes separated by spaces).
func sumArgs(s string) ([]int, bool) {
	rest, ok := strings.CutPrefix(s, "Σ[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return nil, false
	}
	return parseInts(strings.Fields(strings.TrimSuffix(rest, "]")))
}

// transposeArgs parses transposeOp's String, "Aᵀ{<axes>}" (axes separated
// by ", ").
func transposeArgs(s string) ([]int, bool) {
	rest, ok := strings.CutPrefix(s, "Aᵀ{")
	if !ok || !strings.HasSuffix(rest, "}") {
		return nil, false
	}
	return parseInts(strings.Split(strings.TrimSuffix(rest, "}"), ", "))
}

// concatArgs parses concatOp's String, "Concat(axis=<axis>)".
func concatArgs(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, "Concat(axis=")
	if !ok || !strings.HasSuffix(rest, ")") {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(rest, ")"))
	return n, err == nil
}

// sliceAlong parses the axis of sliceOp's String, "T[" followed by one
// ":, " per axis before the sliced one.
func sliceAlong(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, "T[")
	if !ok || !strings.HasSuffix(rest, "...]") {
		return 0, false
	}
	along := 0
	for {
		r, ok := strings.CutPrefix(rest, ":, ")
		if !ok {
			return along, true
		}
		rest = r
		along++
	}
}

// sizeOpArgs parses sizeOp's String: "SizeOf=<size>" when the size is
// known, else "SizeOf(<axis>)" (size 0: read the input's shape).
func sizeOpArgs(op G.Op) (size, axis int, ok bool) {
	s := op.String()
	if rest, found := strings.CutPrefix(s, "SizeOf="); found {
		n, err := strconv.Atoi(rest)
		return n, 0, err == nil && n > 0
	}
	rest, found := strings.CutPrefix(s, "SizeOf(")
	if !found || !strings.HasSuffix(rest, ")") {
		return 0, 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(rest, ")"))
	return 0, n, err == nil
}

func parseInts(fields []string) ([]int, bool) {
	out := make([]int, 0, len(fields))
	for _, f := range fields {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}
