package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TiedLogits returns h wᵀ for h (N, D) and a table w (V, D): the product
// MatMul(h, w, false, true) computes, with its gradients dh = dY w and
// dw = dYᵀ h, through Gemm. Unlike MatMul, the three ops ([TiedLogitsOp]) keep
// their (N, V), (N, D) and (V, D) outputs in buffers they own and reuse from
// run to run (as the gather's gradient does), so a training step of a
// language model allocates (and the runtime zeroes) no vocabulary-sized
// tensor for its output layer. A value read from the output is valid until
// the machine runs again.
func TiedLogits(h, w *G.Node) (*G.Node, error) {
	if h == nil || w == nil {
		return nil, fmt.Errorf("ops: tied logits: nil input")
	}
	hs, ws := h.Shape(), w.Shape()
	if hs.Dims() != 2 || ws.Dims() != 2 || hs[1] != ws[1] {
		return nil, fmt.Errorf("ops: tied logits: h %v and table %v, want (N, D) and (V, D)", hs, ws)
	}
	if h.Dtype() != w.Dtype() {
		return nil, fmt.Errorf("ops: tied logits: dtypes %v and %v differ", h.Dtype(), w.Dtype())
	}
	if err := checkFloat(h.Dtype()); err != nil {
		return nil, fmt.Errorf("ops: tied logits: %w", err)
	}
	return G.ApplyOp(&TiedLogitsOp{n: hs[0], v: ws[0], d: ws[1]}, h, w)
}

// TiedLogitsOp is one of the three products of the tied output layer
// ([TiedLogits]), for h (n, d), w (v, d) and the logits' gradient dY (n, v);
// Mode says which.
type TiedLogitsOp struct {
	n, v, d int
	mode    TiedMode
	buf     any // []float32 or []float64: the output, reused
}

// TiedMode says which product a [TiedLogitsOp] computes.
type TiedMode int

// The three products of the tied output layer.
const (
	TiedForward TiedMode = iota // (h, w) -> h wᵀ (n, v)
	TiedGradH                   // (dY, w) -> dY w (n, d)
	TiedGradW                   // (dY, h) -> dYᵀ h (v, d)
)

// Dims are the sizes n (rows of h), v (rows of w, the vocabulary) and d
// (the width of both).
func (op *TiedLogitsOp) Dims() (n, v, d int) { return op.n, op.v, op.d }

// Mode is the product the op computes.
func (op *TiedLogitsOp) Mode() TiedMode { return op.mode }

// NoNegativeZero reports that the op's outputs hold no −0 and no
// signalling NaN (graph.NoNegZeroOp): each element is a chain of
// multiply-adds that [Gemm] starts from +0 (beta 0), and in
// round-to-nearest a sum with a +0 term is −0 only when every term is;
// arithmetic makes no signalling NaN. TestTiedNoNegativeZero checks it on
// products of signed zeros through every kernel path. So a lookup's
// gradient can be added into the table's gradient dYᵀh on the rows of its
// ids only ([ScatterOp.AddTo]).
func (op *TiedLogitsOp) NoNegativeZero() bool { return true }

func (op *TiedLogitsOp) outShape() tensor.Shape {
	switch op.mode {
	case TiedGradH:
		return tensor.Shape{op.n, op.d}
	case TiedGradW:
		return tensor.Shape{op.v, op.d}
	}
	return tensor.Shape{op.n, op.v}
}

func (op *TiedLogitsOp) Arity() int { return 2 }
func (op *TiedLogitsOp) Type() hm.Type {
	t := &G.TensorType{Dims: 2, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t, t)
}
func (op *TiedLogitsOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.outShape(), nil }
func (op *TiedLogitsOp) ReturnsPtr() bool                               { return false }
func (op *TiedLogitsOp) CallsExtern() bool                              { return false }
func (op *TiedLogitsOp) OverwritesInput() int                           { return -1 }
func (op *TiedLogitsOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.tied (%d,%d,%d) mode %d", op.n, op.v, op.d, op.mode)
}
func (op *TiedLogitsOp) Hashcode() uint32 { return hashOf(op) }
func (op *TiedLogitsOp) String() string {
	return [...]string{"TiedLogits", "TiedLogitsGradH", "TiedLogitsGradW"}[op.mode] + fmt.Sprintf("(%d,%d,%d)", op.n, op.v, op.d)
}
func (op *TiedLogitsOp) DiffWRT(int) []bool {
	if op.mode != TiedForward {
		return []bool{false, false}
	}
	return []bool{true, true}
}
func (op *TiedLogitsOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if op.mode != TiedForward {
		return nil, fmt.Errorf("ops: the tied logits' gradients have no gradient of their own (second derivatives are unsupported)")
	}
	dh, err := G.ApplyOp(&TiedLogitsOp{n: op.n, v: op.v, d: op.d, mode: TiedGradH}, grad, inputs[1])
	if err != nil {
		return nil, err
	}
	dw, err := G.ApplyOp(&TiedLogitsOp{n: op.n, v: op.v, d: op.d, mode: TiedGradW}, grad, inputs[0])
	if err != nil {
		return nil, err
	}
	return G.Nodes{dh, dw}, nil
}

func (op *TiedLogitsOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("ops: %v: %d inputs, want 2", op, len(vals))
	}
	switch a := denseData(vals[0]).(type) {
	case []float64:
		b, ok := denseData(vals[1]).([]float64)
		if !ok {
			return nil, fmt.Errorf("ops: %v: mixed dtypes", op)
		}
		return tiedDo(op, a, b)
	case []float32:
		b, ok := denseData(vals[1]).([]float32)
		if !ok {
			return nil, fmt.Errorf("ops: %v: mixed dtypes", op)
		}
		return tiedDo(op, a, b)
	}
	return nil, fmt.Errorf("ops: %v: unsupported data %T", op, vals[0].Data())
}

func tiedDo[F float32 | float64](op *TiedLogitsOp, a, b []F) (G.Value, error) {
	n, v, d := op.n, op.v, op.d
	// Input sizes: (h or dY) and (w or h).
	wantA, wantB := n*d, v*d
	if op.mode != TiedForward {
		wantA = n * v
		if op.mode == TiedGradW {
			wantB = n * d
		}
	}
	if len(a) != wantA || len(b) != wantB {
		return nil, fmt.Errorf("ops: %v: inputs of %d and %d values, want %d and %d", op, len(a), len(b), wantA, wantB)
	}
	shape := op.outShape()
	c, ok := op.buf.([]F)
	if !ok || len(c) != shape.TotalSize() {
		c = make([]F, shape.TotalSize())
		op.buf = c
	}
	// Each product is one Gemm: packed and cache-blocked, the transposes
	// cost nothing beyond the packing.
	switch op.mode {
	case TiedForward: // (n, v) = h (n, d) · wᵀ
		Gemm(false, true, n, v, d, 1, a, d, b, d, 0, c, v)
	case TiedGradH: // (n, d) = dY (n, v) · w (v, d)
		Gemm(false, false, n, d, v, 1, a, v, b, d, 0, c, d)
	case TiedGradW: // (v, d) = dYᵀ (v, n) · h (n, d)
		Gemm(true, false, v, d, n, 1, a, v, b, d, 0, c, d)
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(c)), nil
}
