package ops

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// SoftMax returns softmax over the last axis of x, computed stably (the
// maximum of each row is subtracted before exponentiating).
//
// gdattn uses it instead of G.SoftMax: in gorgonia.org/tensor v0.9.24 the
// softmax kernels start every row's running maximum at the first element of
// the whole tensor rather than of the row, so rows whose values lie far below
// that element underflow to 0/0 = NaN (measured: a softmax attention with
// scores of order 1e4 returns NaN).
func SoftMax(x *G.Node) (*G.Node, error) { return applySoftmax(x, false) }

// LogSoftMax returns log(softmax(x)) over the last axis, computed stably as
// x − max − log Σ exp(x − max). Use it for cross-entropies; never take the Log
// of a SoftMax node.
func LogSoftMax(x *G.Node) (*G.Node, error) { return applySoftmax(x, true) }

func applySoftmax(x *G.Node, log bool) (*G.Node, error) {
	if x == nil {
		return nil, fmt.Errorf("ops: softmax of a nil node")
	}
	if len(x.Shape()) == 0 {
		return nil, fmt.Errorf("ops: softmax of scalar node %q: need rank >= 1", x.Name())
	}
	if err := checkFloat(x.Dtype()); err != nil {
		return nil, fmt.Errorf("ops: softmax of %q: %w", x.Name(), err)
	}
	return G.ApplyOp(&SoftMaxOp{log: log}, x)
}

// SoftMaxOp is [SoftMax]'s op, or with Log [LogSoftMax]'s: softmax (or
// log-softmax) over the last axis.
type SoftMaxOp struct{ log bool }

// Log reports whether the op is log-softmax.
func (op *SoftMaxOp) Log() bool { return op.log }

func (op *SoftMaxOp) Arity() int { return 1 }
func (op *SoftMaxOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (op *SoftMaxOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("ops: softmax: cannot infer shape from %T", in[0])
	}
	return s.Clone(), nil
}
func (op *SoftMaxOp) ReturnsPtr() bool      { return false }
func (op *SoftMaxOp) CallsExtern() bool     { return false }
func (op *SoftMaxOp) OverwritesInput() int  { return -1 }
func (op *SoftMaxOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "gdattn.softmax{log=%v}", op.log) }
func (op *SoftMaxOp) Hashcode() uint32      { return hashOf(op) }
func (op *SoftMaxOp) String() string {
	if op.log {
		return "LogSoftMaxLast"
	}
	return "SoftMaxLast"
}

func (op *SoftMaxOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *SoftMaxOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) { return op.do(p, vals) }

func (op *SoftMaxOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 1 {
		return nil, fmt.Errorf("ops: softmax: %d inputs, want 1", len(vals))
	}
	shape := vals[0].Shape()
	n := shape[len(shape)-1]
	switch x := vals[0].Data().(type) {
	case []float64:
		out := outBuf[float64](p, len(x), false)
		softmaxRows(x, out, n, op.log)
		return wrapOut(p, shape, out), nil
	case []float32:
		out := outBuf[float32](p, len(x), false)
		softmaxRows(x, out, n, op.log)
		return wrapOut(p, shape, out), nil
	}
	return nil, fmt.Errorf("ops: softmax: unsupported data %T", vals[0].Data())
}

func (op *SoftMaxOp) DiffWRT(inputs int) []bool { return []bool{true} }

func (op *SoftMaxOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	dx, err := G.ApplyOp(&SoftMaxGradOp{log: op.log}, output, grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx}, nil
}

// SoftMaxGradOp maps (y, dy) to dx: y⊙(dy − Σ dy⊙y) for softmax, and
// dy − exp(y) Σ dy for log-softmax (rows along the last axis).
type SoftMaxGradOp struct{ log bool }

// Log reports whether the op is the gradient of log-softmax.
func (op *SoftMaxGradOp) Log() bool { return op.log }

func (op *SoftMaxGradOp) Arity() int { return 2 }
func (op *SoftMaxGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a)
}
func (op *SoftMaxGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("ops: softmax gradient: cannot infer shape from %T", in[0])
	}
	return s.Clone(), nil
}
func (op *SoftMaxGradOp) ReturnsPtr() bool      { return false }
func (op *SoftMaxGradOp) CallsExtern() bool     { return false }
func (op *SoftMaxGradOp) OverwritesInput() int  { return -1 }
func (op *SoftMaxGradOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "gdattn.softmaxgrad{log=%v}", op.log) }
func (op *SoftMaxGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *SoftMaxGradOp) String() string        { return "SoftMaxLastGrad" }

func (op *SoftMaxGradOp) Do(vals ...G.Value) (G.Value, error) { return op.do(nil, vals) }

// DoInto is Do writing into p (see outBuf).
func (op *SoftMaxGradOp) DoInto(p G.Value, vals ...G.Value) (G.Value, error) {
	return op.do(p, vals)
}

func (op *SoftMaxGradOp) do(p G.Value, vals []G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("ops: softmax gradient: %d inputs, want 2", len(vals))
	}
	shape := vals[0].Shape()
	n := shape[len(shape)-1]
	switch y := vals[0].Data().(type) {
	case []float64:
		dy, ok := vals[1].Data().([]float64)
		if !ok || len(dy) != len(y) {
			return nil, fmt.Errorf("ops: softmax gradient: mismatched gradient %T", vals[1].Data())
		}
		out := outBuf[float64](p, len(y), false)
		softmaxGradRows(y, dy, out, n, op.log)
		return wrapOut(p, shape, out), nil
	case []float32:
		dy, ok := vals[1].Data().([]float32)
		if !ok || len(dy) != len(y) {
			return nil, fmt.Errorf("ops: softmax gradient: mismatched gradient %T", vals[1].Data())
		}
		out := outBuf[float32](p, len(y), false)
		softmaxGradRows(y, dy, out, n, op.log)
		return wrapOut(p, shape, out), nil
	}
	return nil, fmt.Errorf("ops: softmax gradient: unsupported data %T", vals[0].Data())
}

func softmaxRows[F float32 | float64](x, out []F, n int, log bool) {
	r := 0
	if x32, ok := any(x).([]float32); ok && n >= 1 && len(x) >= 4*n && expectLanes(1, 1) {
		r = softmaxRowsLanes(x32, any(out).([]float32), n, log)
	}
	for ; r+n <= len(x); r += n {
		softmaxRow(x[r:r+n], out[r:r+n], log)
	}
}

// softmaxRowsLanes is softmaxRows' float32 rows four at a time, one row per
// lane (lanes4ExpSum: each row's exponentials and their float64 sum in
// index order, as expRowSumF32 computes them), then each row's outputs as
// softmaxRow computes them from the maximum and the sum: the same bits. A
// group with an entry outside the fused exponential's range goes through
// softmaxRow. It returns the offset of the rows left (fewer than four).
func softmaxRowsLanes(x, out []float32, n int, log bool) int {
	ls := make([]float32, 4*n)
	var sums [4]float64
	r := 0
	for ; r+4*n <= len(x); r += 4 * n {
		transpose4(ls, x[r:], n, n)
		if !lanes4ExpSum(&ls[0], n, &sums) {
			for k := 0; k < 4; k++ {
				softmaxRow(x[r+k*n:r+(k+1)*n], out[r+k*n:r+(k+1)*n], log)
			}
			continue
		}
		for k := 0; k < 4; k++ {
			row, o := x[r+k*n:r+(k+1)*n], out[r+k*n:r+(k+1)*n]
			if log {
				mx := row[0]
				for _, v := range row[1:] {
					if v > mx {
						mx = v
					}
				}
				lsum := math.Log(sums[k])
				for i, v := range row {
					o[i] = float32(float64(v-mx) - lsum)
				}
				continue
			}
			inv := 1 / sums[k]
			for i := range o {
				o[i] = float32(float64(ls[i*4+k]) * inv)
			}
		}
	}
	return r
}

// softmaxRow sets o to softmax(row), or log-softmax with log.
func softmaxRow[F float32 | float64](row, o []F, log bool) {
	mx := row[0]
	for _, v := range row[1:] {
		if v > mx {
			mx = v
		}
	}
	var sum float64
	if r32, ok := any(row).([]float32); ok {
		// float32 results: e_i = Exp32(float64(x_i − mx)) summed in
		// index order, on the fused exponential (the same bits; with
		// log, o only holds the exponentials until overwritten below).
		sum = expRowSumF32(any(o).([]float32), r32, 1, any(mx).(float32))
	} else {
		for i, v := range row {
			e := math.Exp(float64(v - mx))
			sum += e
			if !log {
				o[i] = F(e)
			}
		}
	}
	if log {
		ls := math.Log(sum)
		for i, v := range row {
			o[i] = F(float64(v-mx) - ls)
		}
		return
	}
	inv := 1 / sum
	for i := range o {
		o[i] = F(float64(o[i]) * inv)
	}
}

func softmaxGradRows[F float32 | float64](y, dy, out []F, n int, log bool) {
	r := 0
	if y32, ok := any(y).([]float32); ok && log && n >= 1 && len(y) >= 4*n && expectLanes(1, 1) {
		r = logSoftmaxGradRows32(y32, any(dy).([]float32), any(out).([]float32), n)
	}
	for ; r+n <= len(y); r += n {
		yr, dr, o := y[r:r+n], dy[r:r+n], out[r:r+n]
		var s float64
		if log {
			for _, g := range dr {
				s += float64(g)
			}
			if y32, ok := any(yr).([]float32); ok {
				logSoftmaxGrad32(any(o).([]float32), y32, any(dr).([]float32), s)
				continue
			}
			exp := math.Exp
			if is32[F]() {
				exp = Exp32 // float32 results
			}
			for i := range o {
				o[i] = F(float64(dr[i]) - exp(float64(yr[i]))*s)
			}
			continue
		}
		for i := range yr {
			s += float64(dr[i]) * float64(yr[i])
		}
		for i := range o {
			o[i] = F(float64(yr[i]) * (float64(dr[i]) - s))
		}
	}
}

// logSoftmaxGradRows32 is softmaxGradRows' float32 log-softmax rows four at
// a time, one row per lane (lanes4LogSoftmaxGrad: logSoftmaxGrad32's
// operations on each element, each row's sum of dy in index order as
// softmaxGradRows adds it), so the same bits; a group with a y outside the
// fused exponential's range goes a row at a time. It returns the offset of
// the rows left (fewer than four).
func logSoftmaxGradRows32(y, dy, out []float32, n int) int {
	yl, dl, ol := make([]float32, 4*n), make([]float32, 4*n), make([]float32, 4*n)
	var sums [4]float64
	r := 0
	for ; r+4*n <= len(y); r += 4 * n {
		for k := 0; k < 4; k++ {
			var s float64
			for _, g := range dy[r+k*n : r+(k+1)*n] {
				s += float64(g)
			}
			sums[k] = s
		}
		transpose4(yl, y[r:], n, n)
		transpose4(dl, dy[r:], n, n)
		if lanes4LogSoftmaxGrad(&ol[0], &yl[0], &dl[0], n, &sums) {
			for k := 0; k < 4; k++ {
				o := out[r+k*n : r+(k+1)*n]
				for i := range o {
					o[i] = ol[i*4+k]
				}
			}
			continue
		}
		for k := 0; k < 4; k++ {
			logSoftmaxGrad32(out[r+k*n:r+(k+1)*n], y[r+k*n:r+(k+1)*n], dy[r+k*n:r+(k+1)*n], sums[k])
		}
	}
	return r
}
