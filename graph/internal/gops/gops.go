package gops

import (
	"reflect"
	"strconv"
	"strings"
	"sync"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Kind is a Gorgonia op kind.
type Kind int

// The kinds recognised; None for any other op (gdattn's own, or nil).
const (
	None      Kind = iota
	LinAlg         // linAlgBinOp: A × B, A ××× B, A × b (with transposes)
	ElemBin        // elemBinOp: + - ⊙ ÷ ^ and comparisons
	ElemUnary      // elemUnaryOp: exp, ln, tanh, ...
	Repeat         // repeatOp: numpy.repeat along one axis (broadcasts)
	Sum            // sumOp: sum along axes
	Transpose      // transposeOp: an axis permutation
	Concat         // concatOp: concatenation along one axis
	Slice          // sliceOp: a slice of one axis
	Reshape        // reshapeOp: a reshape (a view)
	Size           // sizeOp: the length of an axis
)

// kinds maps the dynamic types of Gorgonia's ops (as values and as pointers)
// to their kinds; built once.
var kinds = sync.OnceValue(func() map[reflect.Type]Kind {
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 2), G.WithName("a"))
	b := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 2), G.WithName("b"))
	col := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 1), G.WithName("col"))
	m := map[reflect.Type]Kind{}
	add := func(k Kind, n *G.Node, err error) {
		if err != nil || n == nil || n.Op() == nil {
			// Gorgonia refused a constructor it accepted when this was
			// written: ops of this kind are not recognised (they run on
			// Gorgonia's own path).
			return
		}
		t := reflect.TypeOf(n.Op())
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		m[t] = k
		m[reflect.PointerTo(t)] = k
	}
	n, err := G.Mul(a, b)
	add(LinAlg, n, err)
	n, err = G.Add(a, b)
	add(ElemBin, n, err)
	n, err = G.Exp(a)
	add(ElemUnary, n, err)
	if _, rep, err := G.Broadcast(a, col, G.NewBroadcastPattern(nil, []byte{1})); err == nil {
		add(Repeat, rep, nil)
	}
	n, err = G.Sum(a, 0)
	add(Sum, n, err)
	n, err = G.Transpose(a)
	add(Transpose, n, err)
	n, err = G.Concat(0, a, b)
	add(Concat, n, err)
	n, err = G.Slice(a, G.S(0, 1))
	add(Slice, n, err)
	n, err = G.Reshape(a, tensor.Shape{4})
	add(Reshape, n, err)
	n, err = G.SizeOf(0, a)
	add(Size, n, err)
	return m
})

// KindOf returns the kind of a Gorgonia op (None for any other op).
func KindOf(op G.Op) Kind {
	if op == nil {
		return None
	}
	return kinds()[reflect.TypeOf(op)]
}

// LinAlgArgs parses linAlgBinOp's String: "A × B", "Aᵀ × Bᵀ", "A ××× B"
// (batched), "A × b" (matrix-vector); ok false for the vector products
// ("a · b", "a ⊗ b").
func LinAlgArgs(s string) (transA, transB, batched, ok bool) {
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

// BinSymbol returns the symbol of an elementwise binary op ("+", "-", "⊙",
// "÷", ...: the first field of elemBinOp's String, "<symbol> <retSame>");
// "" for an op of another kind.
func BinSymbol(op G.Op) string {
	if KindOf(op) != ElemBin {
		return ""
	}
	sym, _, _ := strings.Cut(op.String(), " ")
	return sym
}

// RepeatArgs parses repeatOp's String, "Repeat<axis>".
func RepeatArgs(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, "Repeat")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

// RepeatAxis returns the axis a Gorgonia repeat op repeats along, −1 for
// any other op.
func RepeatAxis(op G.Op) int {
	if KindOf(op) != Repeat {
		return -1
	}
	along, ok := RepeatArgs(op.String())
	if !ok {
		return -1
	}
	return along
}

// SumArgs parses sumOp's String, "Σ[<axes>]" (axes separated by spaces).
func SumArgs(s string) ([]int, bool) {
	rest, ok := strings.CutPrefix(s, "Σ[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return nil, false
	}
	return parseInts(strings.Fields(strings.TrimSuffix(rest, "]")))
}

// TransposeArgs parses transposeOp's String, "Aᵀ{<axes>}" (axes separated
// by ", ").
func TransposeArgs(s string) ([]int, bool) {
	rest, ok := strings.CutPrefix(s, "Aᵀ{")
	if !ok || !strings.HasSuffix(rest, "}") {
		return nil, false
	}
	return parseInts(strings.Split(strings.TrimSuffix(rest, "}"), ", "))
}

// ConcatArgs parses concatOp's String, "Concat(axis=<axis>)".
func ConcatArgs(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, "Concat(axis=")
	if !ok || !strings.HasSuffix(rest, ")") {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(rest, ")"))
	return n, err == nil
}

// SliceAlong parses the axis of sliceOp's String, "T[" followed by one
// ":, " per axis before the sliced one.
func SliceAlong(s string) (int, bool) {
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

// SizeArgs parses sizeOp's String: "SizeOf=<size>" when the size is known,
// else "SizeOf(<axis>)" (size 0: read the input's shape).
func SizeArgs(op G.Op) (size, axis int, ok bool) {
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
