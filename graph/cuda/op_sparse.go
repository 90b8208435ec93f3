package cuda

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/gdattn/gdattn/ops"
	"gorgonia.org/tensor"
)

// hostInts returns the current host data of an int input node (ids and
// labels are fed from the host every run), checking each is in [lo, hi).
func hostInts(v *value, lo, hi int) ([]int, error) {
	if v.kind != kindInput {
		return nil, errors.New("ids are not an input node")
	}
	hv := v.n.Value()
	if hv == nil {
		return nil, fmt.Errorf("ids %q have no value", v.n.Name())
	}
	ids, ok := hv.Data().([]int)
	if !ok {
		return nil, fmt.Errorf("ids %q hold %T, want []int", v.n.Name(), hv.Data())
	}
	for i, id := range ids {
		if id < lo || id >= hi {
			return nil, fmt.Errorf("id %d at position %d is outside [%d, %d)", id, i, lo, hi)
		}
	}
	return ids, nil
}

// intInput reports whether v is an int input node stored as 64-bit ints.
func intInput(v *value) bool {
	return v.kind == kindInput && v.dt == tensor.Int && v.dt.Size() == 8
}

// meanChunks is the number of partial column sums of the centered lookup's
// mean row (colMean): each of the d·meanChunks work items sums every
// meanChunks-th row of its column.
var meanChunks = 256

// colMean returns a device function that writes into mean (d doubles) the
// mean row of the row-major (rows, d) matrix at src(), in double: a warp
// per column (col_mean_warp) up to warpSumMax rows, else partial sums in
// part (d·chunks doubles, allocated here) then joined.
func colMean(x *Exec, rows, d int) (func(x *Exec, v *value, src, mean Ptr) error, error) {
	if int64(rows) <= warpSumMax {
		return func(x *Exec, v *value, src, mean Ptr) error {
			return x.launch(v, "col_mean_warp", int64(d), int64(rows), src, mean)
		}, nil
	}
	chunks := max(1, min(meanChunks, rows))
	part, err := x.alloc(int64(chunks) * int64(d) * 8)
	if err != nil {
		return nil, err
	}
	return func(x *Exec, v *value, src, mean Ptr) error {
		if err := x.launch(v, "col_sum_part", int64(chunks)*int64(d), int64(rows), int32(d), int32(chunks), src, part); err != nil {
			return err
		}
		return x.b.Launch("col_mean_join", int64(d), int64(d), int32(chunks), int64(rows), part, mean)
	}, nil
}

// lowerGather maps the gather op (ops.GatherOp: w (V, D), ids) -> rows of
// w, and with center (ops.GatherCentered) the rows minus w's mean row.
func lowerGather(x *Exec, v *value, V, D int, center bool) (devOp, error) {
	if V <= 0 || D <= 0 || len(v.ins) != 2 || !intInput(v.ins[1]) || v.ins[0].size != V*D || v.size != v.ins[1].size*D {
		return nil, nil
	}
	if !center {
		return &idsChecked{ids: v.ins[1], lo: 0, hi: V, launch: func(x *Exec, v *value) error {
			return x.launch(v, "gather_rows", int64(v.size), v.ins[0].ptr, v.ins[1].ptr, int32(D), v.ptr)
		}}, nil
	}
	mean, err := x.alloc(int64(D) * 8)
	if err != nil {
		return nil, err
	}
	colMeanOf, err := colMean(x, V, D)
	if err != nil {
		return nil, err
	}
	return &idsChecked{ids: v.ins[1], lo: 0, hi: V, launch: func(x *Exec, v *value) error {
		if err := colMeanOf(x, v, v.ins[0].ptr, mean); err != nil {
			return err
		}
		return x.launch(v, "gather_rows_centered", int64(v.size), v.ins[0].ptr, v.ins[1].ptr, int32(D), mean, v.ptr)
	}}, nil
}

// idsChecked is the device op of a gather: its ids are checked on the host
// before every run's launches (preparer), a captured step's replay too, so
// that no kernel reads outside the table.
type idsChecked struct {
	ids    *value
	lo, hi int // the ids' range
	launch devFunc
}

func (o *idsChecked) run(x *Exec, v *value) error { return o.launch(x, v) }

func (o *idsChecked) prepare(*Exec) error {
	_, err := hostInts(o.ids, o.lo, o.hi)
	return err
}

// lowerScatter maps the gather's gradient (ids, g) -> (V, D): every row the
// sum of the rows of g whose id it is, in position order (scatterOrder);
// with center every row starts at −(1/V) Σ_i g_i (the gradient through the
// mean row) instead of zero.
func lowerScatter(x *Exec, v *value, V, D int, center bool) (devOp, error) {
	if V <= 0 || D <= 0 || len(v.ins) != 2 || !intInput(v.ins[0]) || v.size != V*D || v.ins[1].size != v.ins[0].size*D {
		return nil, nil
	}
	n := v.ins[0].size
	var mean Ptr
	var colMeanOf func(x *Exec, v *value, src, mean Ptr) error
	if center && n > 0 {
		var err error
		if mean, err = x.alloc(int64(D) * 8); err != nil {
			return nil, err
		}
		if colMeanOf, err = colMean(x, n, D); err != nil {
			return nil, err
		}
	}
	ord, err := newScatterOrder(x, v.ins[0], 0, V)
	if err != nil {
		return nil, err
	}
	ord.launch = func(x *Exec, v *value) error {
		if colMeanOf != nil {
			if err := colMeanOf(x, v, v.ins[1].ptr, mean); err != nil {
				return err
			}
			if err := x.launch(v, "fill_rows_scaled", int64(v.size), int32(D), mean, float64(n)/float64(V), v.ptr); err != nil {
				return err
			}
		} else if err := x.b.Zero(v.ptr, v.bytes); err != nil {
			return err
		}
		return x.launch(v, "scatter_rows", int64(v.ins[1].size), ord.dev, v.ins[0].ptr, v.ins[1].ptr, int32(D), v.ptr)
	}
	return ord, nil
}

// scatterOrder is the device op of a scatter (scatter_rows, scatter_cols)
// with its host half: before every run's launches (preparer: Exec.Run and
// RunStep call it with the uploads, also before a captured step's replay)
// it checks the ids, sorts their positions by (id, position) and uploads
// that order into ord's device buffer (layout in kernels/sparse.cu), so
// that each kernel work item sums the rows of one id, one column, in
// position order: no atomics, the same bits every run, the host op's
// order. The buffer holds 2·|ids| + 2 long longs (scratch).
type scatterOrder struct {
	ids    *value
	lo, hi int     // the ids' range; ids < 0 are left out of the order
	host   []int64 // the order's host copy
	keys   []int64 // id·|ids| + position, sorted
	dev    Ptr     // the order on the device
	launch devFunc // the op's launches
}

func newScatterOrder(x *Exec, ids *value, lo, hi int) (*scatterOrder, error) {
	n := ids.size
	if hi > 0 && int64(n) > math.MaxInt64/int64(hi) {
		return nil, fmt.Errorf("%d ids of %d values overflow the sort keys", n, hi)
	}
	dev, err := x.alloc(int64(2*n+2) * 8)
	if err != nil {
		return nil, err
	}
	return &scatterOrder{ids: ids, lo: lo, hi: hi, host: make([]int64, 2*n+2), keys: make([]int64, 0, n), dev: dev}, nil
}

func (o *scatterOrder) run(x *Exec, v *value) error { return o.launch(x, v) }

// prepare checks the ids and uploads their order.
func (o *scatterOrder) prepare(x *Exec) error {
	ids, err := hostInts(o.ids, o.lo, o.hi)
	if err != nil {
		return err
	}
	used := sortScatter(o.host, o.keys, ids)
	return x.b.CopyHtoD(o.dev, unsafe.Pointer(&o.host[0]), int64(used)*8)
}

// sortScatter writes into ord (2·len(ids) + 2 long longs, keys a scratch
// slice of capacity len(ids)) the order of kernels/sparse.cu: the positions
// of the ids >= 0 sorted by id, then by position; at len(ids) the number m
// of distinct ids; from len(ids) + 1 the m + 1 starts of their segments. It
// returns the number of long longs written, len(ids) + m + 2.
func sortScatter(ord, keys []int64, ids []int) int {
	n := int64(len(ids))
	keys = keys[:0]
	for p, id := range ids {
		if id >= 0 {
			keys = append(keys, int64(id)*n+int64(p))
		}
	}
	slices.Sort(keys)
	seg := ord[n+1:]
	m, prev := 0, int64(-1)
	for k, key := range keys {
		id := key / n
		ord[k] = key % n
		if id != prev {
			seg[m], m, prev = int64(k), m+1, id
		}
	}
	seg[m] = int64(len(keys))
	ord[n] = int64(m)
	return int(n) + m + 2
}

// lowerGatherCols maps the encoder's label embeddings (ops.GatherColsOp: w
// (D, V), ids (R) in [−1, V)) -> (R, D): row r is column ids[r] of w, zero
// for −1.
func lowerGatherCols(v *value, D, V, R int) devOp {
	if D <= 0 || V <= 0 || R <= 0 || len(v.ins) != 2 || !intInput(v.ins[1]) || v.ins[0].size != D*V || v.ins[1].size != R || v.size != R*D {
		return nil
	}
	return &idsChecked{ids: v.ins[1], lo: -1, hi: V, launch: func(x *Exec, v *value) error {
		return x.launch(v, "gather_cols", int64(v.size), v.ins[0].ptr, v.ins[1].ptr, int32(D), int32(V), v.ptr)
	}}
}

// lowerScatterCols maps its gradient (ids (R), g (R, D)) -> (D, V): column
// c the sum of the rows of g whose id is c, in row order (scatterOrder).
func lowerScatterCols(x *Exec, v *value, D, V, R int) (devOp, error) {
	if D <= 0 || V <= 0 || R <= 0 || len(v.ins) != 2 || !intInput(v.ins[0]) || v.ins[0].size != R || v.ins[1].size != R*D || v.size != D*V {
		return nil, nil
	}
	ord, err := newScatterOrder(x, v.ins[0], -1, V)
	if err != nil {
		return nil, err
	}
	ord.launch = func(x *Exec, v *value) error {
		if err := x.b.Zero(v.ptr, v.bytes); err != nil {
			return err
		}
		return x.launch(v, "scatter_cols", int64(v.ins[1].size), ord.dev, v.ins[0].ptr, v.ins[1].ptr, int32(D), int32(V), v.ptr)
	}
	return ord, nil
}

// lowerXent maps the sparse cross-entropy (ops.SparseCrossEntropyOp:
// logits (N, C), labels (N)) -> the mean over scored rows, and its gradient
// op (logits, labels, dloss) -> (N, C). Its Float32 option (the softmax
// of float32 logits in float32 arithmetic, ops.SparseCrossEntropyOptions)
// has no device kernels: such an op is refused when the graph is compiled
// rather than computed with other rounding.
func lowerXent(x *Exec, v *value, op *ops.SparseCrossEntropyOp) (devOp, error) {
	if op.Float32() {
		return nil, fmt.Errorf("cuda: the sparse cross-entropy's Float32 option (ops.SparseCrossEntropyOptions, train.LMConfig.Float32CrossEntropy) has no device kernels; build the loss without it for this executor")
	}
	N, C := op.Dims()
	back := op.Backward()
	want := 2
	if back {
		want = 3
	}
	if N <= 0 || C <= 0 || len(v.ins) != want || !intInput(v.ins[1]) || v.ins[0].size != N*C || v.ins[1].size != N {
		return nil, nil
	}
	if back && (v.ins[2].size != 1 || v.ins[2].dt != v.dt || v.size != N*C) {
		return nil, nil
	}
	lse, err := x.alloc(int64(N) * 8)
	if err != nil {
		return nil, err
	}
	// The rows' log-sum-exp (or, for the loss, their loss terms): one warp
	// per row (xent_lse_warp), one launch.
	rowLSE := func(x *Exec, v *value, wantLoss int32) error {
		return x.launch(v, "xent_lse_warp", int64(N), int32(C), v.ins[0].ptr, v.ins[1].ptr, lse, wantLoss)
	}
	if !back {
		// The loss: the scored rows' terms summed in row order and the
		// scored rows counted on the device (xent_loss).
		return &idsChecked{ids: v.ins[1], lo: -1, hi: C, launch: func(x *Exec, v *value) error {
			if err := rowLSE(x, v, 1); err != nil {
				return err
			}
			return x.launch(v, "xent_loss", 1, int64(N), v.ins[1].ptr, lse, v.ptr)
		}}, nil
	}
	inv, err := x.alloc(8)
	if err != nil {
		return nil, err
	}
	// The gradient reads the logits whole (the log-sum-exp) before
	// xent_grad reads and writes them element by element: it may overwrite
	// them (one vocabulary-sized buffer less at the language models' peak).
	v.inPlace = v.ins[:1]
	return &xentScale{labels: v.ins[1], classes: C, host: make([]float64, 1), dev: inv, launch: func(x *Exec, v *value) error {
		if err := rowLSE(x, v, 0); err != nil {
			return err
		}
		return x.launch(v, "xent_grad", int64(N*C), int32(C), v.ins[0].ptr, v.ins[1].ptr, lse, v.ins[2].ptr, inv, v.ptr)
	}}, nil
}

// xentScale is the device op of the cross-entropy's gradient: before every
// run's launches (preparer, a captured step's replay too) it checks the
// labels and uploads 1/s, s the number of scored rows (0 when none), which
// xent_grad reads from device memory.
type xentScale struct {
	labels  *value
	classes int
	host    []float64 // 1/s
	dev     Ptr
	launch  devFunc
}

func (o *xentScale) run(x *Exec, v *value) error { return o.launch(x, v) }

func (o *xentScale) prepare(x *Exec) error {
	labels, err := hostInts(o.labels, -1, o.classes)
	if err != nil {
		return err
	}
	s := 0
	for _, l := range labels {
		if l >= 0 {
			s++
		}
	}
	o.host[0] = 0
	if s > 0 {
		o.host[0] = 1 / float64(s)
	}
	return x.b.CopyHtoD(o.dev, unsafe.Pointer(&o.host[0]), 8)
}
