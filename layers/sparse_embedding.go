package layers

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"runtime"
	"sync"

	"github.com/chewxy/hm"
	"github.com/gdattn/gdattn/graph"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// SparseEmbedding is [Embedding] with gdattn's own lookup op in place of
// Gorgonia's ByIndices, for vocabularies of tens of thousands of tokens
// (the language models of Section 5.3, C = 50,258).
//
// ByIndices allocates a fresh zero (Vocab, Dim) gradient tensor at every
// backward pass and scatters into it. The gather op here scatters the output
// gradient into a (Vocab, Dim) buffer that it owns and reuses across runs,
// accumulating only the rows of the ids used (repeated ids add up); the
// buffer is cleared with one memclr per run rather than reallocated, so a
// training step makes no Vocab-sized allocation for the lookup.
//
// The buffer is cleared whole, not row by row: Gorgonia may reuse the op's
// output register for a later in-place op (the sum of the lookup gradient and
// a tied output layer's, say), which can leave any row dirty. The gradient
// Gorgonia hands the optimiser is still a dense (Vocab, Dim) tensor: the tape
// machine adds every gradient node into the parameter's dual value, and a
// softmax over the whole vocabulary (the tied output layer of both language
// models) touches every row anyway. A row-sparse optimiser update would
// therefore save nothing for these models, and it would change Adam's
// semantics (moments of untouched rows would not decay), so gdattn's trainer
// keeps the dense update.
type SparseEmbedding struct {
	cfg EmbeddingConfig
	s   *graph.Scope
	w   *G.Node
	we  *G.Node
}

var _ Layer = (*SparseEmbedding)(nil)

// NewSparseEmbedding validates cfg and creates the parameter "w" (Vocab,
// Dim) in s, exactly as [NewEmbedding] does (same name, shape and default
// initialiser), so the two are interchangeable in checkpoints.
func NewSparseEmbedding(s *graph.Scope, cfg EmbeddingConfig) (*SparseEmbedding, error) {
	e, err := NewEmbedding(s, cfg)
	if err != nil {
		return nil, err
	}
	return &SparseEmbedding{cfg: e.cfg, s: s, w: e.w}, nil
}

// Config returns the configuration with defaults filled in.
func (e *SparseEmbedding) Config() EmbeddingConfig { return e.cfg }

// Params returns [w].
func (e *SparseEmbedding) Params() G.Nodes { return G.Nodes{e.w} }

// Weight returns the table w (Vocab, Dim).
func (e *SparseEmbedding) Weight() *G.Node { return e.w }

// We returns W_e = wᵀ (Dim, Vocab), built once and shared; see
// [Embedding.We].
func (e *SparseEmbedding) We() (out *G.Node, err error) {
	defer graph.Recover(&err)
	if e.we == nil {
		e.we = G.Must(G.Transpose(e.w)) // (Dim, Vocab)
	}
	return e.we, nil
}

// Forward is [SparseEmbedding.Lookup].
func (e *SparseEmbedding) Forward(ids *G.Node) (*G.Node, error) { return e.Lookup(ids) }

// Lookup returns the rows of w for ids, an int node of any rank made by
// [NewIDs] ((N) or (B, T)): the result has shape ids.Shape() + (Dim). Ids
// are checked when the machine runs (an id outside [0, Vocab) fails the run
// with an error); [SparseEmbedding.SetIDs] checks them when they are written.
func (e *SparseEmbedding) Lookup(ids *G.Node) (out *G.Node, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("layers: sparse embedding %q: %w", e.s.Path(), err)
		}
	}()
	if ids == nil {
		return nil, fmt.Errorf("ids node is nil")
	}
	if ids.Dtype() != tensor.Int {
		return nil, fmt.Errorf("ids %q have dtype %v, want int", ids.Name(), ids.Dtype())
	}
	if ids.Graph() != e.s.Graph() {
		return nil, fmt.Errorf("ids %q belong to another graph", ids.Name())
	}
	if ids.Shape().Dims() == 0 {
		return nil, fmt.Errorf("ids %q are a scalar, want (N) or (B, T)", ids.Name())
	}
	return Gather(e.w, ids)
}

// LookupCentered returns w[ids] − w̄ with w̄ = (1/Vocab) Σ_c w_c, the mean
// row of the table: the values w_{e,t} − E(w_e|f=0) of the GD language
// model. It is Lookup minus the mean computed in the same op, and its
// gradient w.r.t. w is the gather's scatter-add with −(1/Vocab) Σ_i g_i
// added to every row in the same pass that clears the buffer, instead of a
// separate (1, Vocab) × (Vocab, Dim) product, its (Vocab, Dim) gradient and
// the sum of the two gradients.
func (e *SparseEmbedding) LookupCentered(ids *G.Node) (out *G.Node, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("layers: sparse embedding %q: %w", e.s.Path(), err)
		}
	}()
	if ids == nil || ids.Dtype() != tensor.Int || ids.Shape().Dims() == 0 {
		return nil, fmt.Errorf("ids must be an int node of rank >= 1")
	}
	if ids.Graph() != e.s.Graph() {
		return nil, fmt.Errorf("ids %q belong to another graph", ids.Name())
	}
	return G.ApplyOp(&gatherOp{v: e.cfg.Vocab, d: e.cfg.Dim, ids: ids.Shape().Clone(), center: true}, e.w, ids)
}

// SetIDs writes vals into the int node ids after checking their range; see
// [Embedding.SetIDs].
func (e *SparseEmbedding) SetIDs(ids *G.Node, vals []int) error {
	return (&Embedding{cfg: e.cfg, s: e.s, w: e.w}).SetIDs(ids, vals)
}

// Gather returns w[ids]: for a (V, D) matrix w and an int node ids of any
// shape S, the (S..., D) tensor of the rows of w, with the row-sparse
// gradient of [SparseEmbedding]. An id outside [0, V) fails the run with an
// error naming it.
func Gather(w, ids *G.Node) (*G.Node, error) {
	if w == nil || ids == nil {
		return nil, fmt.Errorf("layers: gather: nil input")
	}
	if w.Shape().Dims() != 2 {
		return nil, fmt.Errorf("layers: gather: table %q has shape %v, want (V, D)", w.Name(), w.Shape())
	}
	if ids.Dtype() != tensor.Int || ids.Shape().Dims() == 0 {
		return nil, fmt.Errorf("layers: gather: ids %q must be an int tensor of rank >= 1", ids.Name())
	}
	return G.ApplyOp(&gatherOp{v: w.Shape()[0], d: w.Shape()[1], ids: ids.Shape().Clone()}, w, ids)
}

// gatherOp is (w (V, D), ids S) -> (S..., D): the rows w[ids], minus the
// mean row of w with center.
type gatherOp struct {
	v, d   int
	ids    tensor.Shape
	center bool
}

func (op *gatherOp) Arity() int { return 2 }
func (op *gatherOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(&G.TensorType{Dims: 2, Of: a}, &G.TensorType{Dims: op.ids.Dims(), Of: tensor.Int}, &G.TensorType{Dims: op.ids.Dims() + 1, Of: a})
}
func (op *gatherOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return append(op.ids.Clone(), op.d), nil
}
func (op *gatherOp) ReturnsPtr() bool     { return false }
func (op *gatherOp) CallsExtern() bool    { return false }
func (op *gatherOp) OverwritesInput() int { return -1 }
func (op *gatherOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.gather (%d,%d) ids %v center %v", op.v, op.d, op.ids, op.center)
}
func (op *gatherOp) Hashcode() uint32 { return hash32(op) }
func (op *gatherOp) String() string   { return fmt.Sprintf("Gather(%d,%d)", op.v, op.d) }
func (op *gatherOp) DiffWRT(int) []bool {
	return []bool{true, false}
}
func (op *gatherOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	g, err := G.ApplyOp(&scatterOp{v: op.v, d: op.d, ids: op.ids.Clone(), center: op.center}, inputs[1], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{g, nil}, nil
}

func (op *gatherOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("layers: gather: %d inputs, want 2", len(vals))
	}
	ids, err := intData(vals[1], op.v)
	if err != nil {
		return nil, fmt.Errorf("layers: gather: %w", err)
	}
	shape := append(op.ids.Clone(), op.d)
	switch w := denseData(vals[0]).(type) {
	case []float64:
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(gatherRows(w, ids, op.d, op.center))), nil
	case []float32:
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(gatherRows(w, ids, op.d, op.center))), nil
	}
	return nil, fmt.Errorf("layers: gather: unsupported table data %T", vals[0].Data())
}

func gatherRows[F float32 | float64](w []F, ids []int, d int, center bool) []F {
	out := make([]F, len(ids)*d)
	for i, id := range ids {
		copy(out[i*d:(i+1)*d], w[id*d:(id+1)*d])
	}
	if center {
		mean := colMean(w, d)
		for i := range ids {
			row := out[i*d : (i+1)*d]
			for j, m := range mean {
				row[j] -= F(m)
			}
		}
	}
	return out
}

// colMean returns the mean row of the row-major (·, d) matrix w, summed in
// float64.
func colMean[F float32 | float64](w []F, d int) []float64 {
	sum := make([]float64, d)
	rows := len(w) / d
	if rows == 0 {
		return sum
	}
	for r := 0; r < rows; r++ {
		for j, x := range w[r*d : (r+1)*d] {
			sum[j] += float64(x)
		}
	}
	for j := range sum {
		sum[j] /= float64(rows)
	}
	return sum
}

// scatterOp is (ids S, grad (S..., D)) -> (V, D): the gradient of gatherOp
// w.r.t. the table, accumulated into a buffer the op reuses; with center,
// −(1/V) Σ_i grad_i is added to every row (the gradient through the mean).
type scatterOp struct {
	v, d   int
	ids    tensor.Shape
	center bool
	buf    *tensor.Dense
}

func (op *scatterOp) Arity() int { return 2 }
func (op *scatterOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(&G.TensorType{Dims: op.ids.Dims(), Of: tensor.Int}, &G.TensorType{Dims: op.ids.Dims() + 1, Of: a}, &G.TensorType{Dims: 2, Of: a})
}
func (op *scatterOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.v, op.d}, nil
}
func (op *scatterOp) ReturnsPtr() bool     { return false }
func (op *scatterOp) CallsExtern() bool    { return false }
func (op *scatterOp) OverwritesInput() int { return -1 }
func (op *scatterOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.scatter (%d,%d) ids %v center %v", op.v, op.d, op.ids, op.center)
}
func (op *scatterOp) Hashcode() uint32   { return hash32(op) }
func (op *scatterOp) String() string     { return fmt.Sprintf("ScatterAdd(%d,%d)", op.v, op.d) }
func (op *scatterOp) DiffWRT(int) []bool { return []bool{false, false} }
func (op *scatterOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("layers: a gather's gradient has no gradient of its own (second derivatives are unsupported)")
}

func (op *scatterOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("layers: scatter: %d inputs, want 2", len(vals))
	}
	ids, err := intData(vals[0], op.v)
	if err != nil {
		return nil, fmt.Errorf("layers: scatter: %w", err)
	}
	g := denseData(vals[1])
	if op.buf == nil || op.buf.Dtype() != vals[1].Dtype() {
		op.buf = tensor.New(tensor.Of(vals[1].Dtype()), tensor.WithShape(op.v, op.d))
	}
	switch b := op.buf.Data().(type) {
	case []float64:
		gg, ok := g.([]float64)
		if !ok || len(gg) != len(ids)*op.d {
			return nil, fmt.Errorf("layers: scatter: gradient %T of %d values for %d ids", g, len(gg), len(ids))
		}
		scatterRows(b, gg, ids, op.d, op.center)
	case []float32:
		gg, ok := g.([]float32)
		if !ok || len(gg) != len(ids)*op.d {
			return nil, fmt.Errorf("layers: scatter: gradient %T of %d values for %d ids", g, len(gg), len(ids))
		}
		scatterRows(b, gg, ids, op.d, op.center)
	default:
		return nil, fmt.Errorf("layers: scatter: unsupported dtype %v", vals[1].Dtype())
	}
	return op.buf, nil
}

func scatterRows[F float32 | float64](buf, g []F, ids []int, d int, center bool) {
	if center {
		// Every row starts at −(1/V) Σ_i g_i: the gradient through the mean.
		fill := colMean(g, d) // (1/n) Σ_i g_i
		scale := float64(len(ids)) / float64(len(buf)/d)
		row0 := make([]F, d)
		for j, m := range fill {
			row0[j] = F(-m * scale)
		}
		for r := 0; r < len(buf); r += d {
			copy(buf[r:r+d], row0)
		}
	} else {
		clear(buf)
	}
	for i, id := range ids {
		row, gr := buf[id*d:(id+1)*d], g[i*d:(i+1)*d]
		for j := range row {
			row[j] += gr[j]
		}
	}
}

// intData returns the ids of an int tensor value, checking each is in [0, v).
func intData(val G.Value, v int) ([]int, error) {
	ids, ok := denseData(val).([]int)
	if !ok {
		return nil, fmt.Errorf("ids have data %T, want []int", val.Data())
	}
	for i, id := range ids {
		if id < 0 || id >= v {
			return nil, fmt.Errorf("id %d at position %d is outside [0, %d)", id, i, v)
		}
	}
	return ids, nil
}

// denseData returns the flat data of a tensor value, materialising views.
func denseData(v G.Value) any {
	if d, ok := v.(*tensor.Dense); ok && d.IsView() {
		return d.Materialize().Data()
	}
	return v.Data()
}

func hash32(op interface{ WriteHash(hash.Hash) }) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

// SparseSoftmaxCrossEntropy returns the mean negative log-likelihood
//
//	L = −(1/n) Σ_{i: labels[i] ≥ 0} log softmax(logits[i, :])_{labels[i]}
//
// of integer labels under logits (N, C), where n counts the labels that are
// not −1 (−1 marks a position not scored, such as padding; with none scored
// L = 0). It is losses.CrossEntropy with the one-hot targets left implicit
// (TensorFlow's sparse_softmax_cross_entropy_with_logits): for a language
// model's N = B·T positions and C = 50,258 tokens the dense (N, C) targets
// would cost as much as the logits. labels is an int node of shape (N),
// made by [NewIDs] and written with [SetLabels]; a label outside [−1, C)
// fails the run with an error. The gradient w.r.t. the logits is
// (softmax − onehot)/n, computed stably (each row's maximum is subtracted).
func SparseSoftmaxCrossEntropy(logits, labels *G.Node) (*G.Node, error) {
	if logits == nil || labels == nil {
		return nil, fmt.Errorf("layers: sparse cross-entropy: nil input")
	}
	if err := graph.CheckDtype(logits.Dtype()); err != nil || logits.Shape().Dims() != 2 {
		return nil, fmt.Errorf("layers: sparse cross-entropy: logits %q (%v %v) must be a float (N, C) matrix", logits.Name(), logits.Dtype(), logits.Shape())
	}
	if labels.Dtype() != tensor.Int || !labels.Shape().Eq(tensor.Shape{logits.Shape()[0]}) {
		return nil, fmt.Errorf("layers: sparse cross-entropy: labels %q (%v %v) must be int of shape (%d)", labels.Name(), labels.Dtype(), labels.Shape(), logits.Shape()[0])
	}
	if labels.Graph() != logits.Graph() {
		return nil, fmt.Errorf("layers: sparse cross-entropy: logits and labels belong to different graphs")
	}
	return G.ApplyOp(&sparseXentOp{n: logits.Shape()[0], c: logits.Shape()[1]}, logits, labels)
}

// SetLabels writes labels (each in [−1, c), −1 meaning "not scored") into
// the int node made for [SparseSoftmaxCrossEntropy], checking them.
func SetLabels(node *G.Node, labels []int, c int) error {
	var dst []int
	if node != nil && node.Value() != nil {
		dst, _ = node.Value().Data().([]int)
	}
	if dst == nil {
		return fmt.Errorf("layers: labels: not an int tensor node with a value (make it with NewIDs)")
	}
	if len(dst) != len(labels) {
		return fmt.Errorf("layers: labels %q: %d labels for %d positions", node.Name(), len(labels), len(dst))
	}
	for i, l := range labels {
		if l < -1 || l >= c {
			return fmt.Errorf("layers: labels %q: label %d at position %d is outside [-1, %d)", node.Name(), l, i, c)
		}
	}
	copy(dst, labels)
	return nil
}

// sparseXentOp is (logits (N, C), labels (N)) -> mean NLL (scalar); with
// back set it is (logits, labels, dL) -> dlogits (N, C).
//
// The forward op computes each row's softmax once and keeps it in a buffer
// it owns (reused from run to run): the exponentials exp(x − max) in prob
// and each row's 1/Σ in inv. The backward op of the same run turns that
// buffer into the gradient in place, (softmax − onehot)·dL/n, so a training
// step computes one exponential per logit and allocates nothing of size
// (N, C). The gradient value therefore aliases the forward buffer: it is
// valid until the op runs again, which is all a tape machine needs (the
// gradient is consumed within the run that makes it). When the forward
// buffer does not hold this run's logits (a backward op run on its own), the
// backward op recomputes the softmax.
type sparseXentOp struct {
	n, c int
	back bool
	fwd  *sparseXentOp // the forward op, for a backward op

	// Forward op state, from its last Do.
	prob  any       // []float32 or []float64 (N·C): exp(x − row max)
	inv   []float64 // 1/Σ_j exp(x_j − row max) of each row
	ready bool      // prob holds the softmax of the last forward run, not yet consumed
	src   any       // the logits slice prob was computed from
}

func (op *sparseXentOp) Arity() int {
	if op.back {
		return 3
	}
	return 2
}
func (op *sparseXentOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	m := &G.TensorType{Dims: 2, Of: a}
	l := &G.TensorType{Dims: 1, Of: tensor.Int}
	if op.back {
		return hm.NewFnType(m, l, a, m)
	}
	return hm.NewFnType(m, l, a)
}
func (op *sparseXentOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if op.back {
		return tensor.Shape{op.n, op.c}, nil
	}
	return tensor.ScalarShape(), nil
}
func (op *sparseXentOp) ReturnsPtr() bool     { return false }
func (op *sparseXentOp) CallsExtern() bool    { return false }
func (op *sparseXentOp) OverwritesInput() int { return -1 }
func (op *sparseXentOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.sparsexent (%d,%d) back %v", op.n, op.c, op.back)
}
func (op *sparseXentOp) Hashcode() uint32 { return hash32(op) }
func (op *sparseXentOp) String() string {
	if op.back {
		return "SparseXentGrad"
	}
	return "SparseXent"
}
func (op *sparseXentOp) DiffWRT(int) []bool {
	if op.back {
		return []bool{false, false, false}
	}
	return []bool{true, false}
}
func (op *sparseXentOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if op.back {
		return nil, fmt.Errorf("layers: the sparse cross-entropy has no second derivative (unsupported)")
	}
	g, err := G.ApplyOp(&sparseXentOp{n: op.n, c: op.c, back: true, fwd: op}, inputs[0], inputs[1], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{g, nil}, nil
}

func (op *sparseXentOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != op.Arity() {
		return nil, fmt.Errorf("layers: sparse cross-entropy: %d inputs, want %d", len(vals), op.Arity())
	}
	labels, ok := denseData(vals[1]).([]int)
	if !ok || len(labels) != op.n {
		return nil, fmt.Errorf("layers: sparse cross-entropy: labels %T, want %d ints", vals[1].Data(), op.n)
	}
	scored := 0
	for i, l := range labels {
		if l < -1 || l >= op.c {
			return nil, fmt.Errorf("layers: sparse cross-entropy: label %d at position %d is outside [-1, %d)", l, i, op.c)
		}
		if l >= 0 {
			scored++
		}
	}
	var g float64
	if op.back {
		var err error
		if g, err = scalarOf(vals[2]); err != nil {
			return nil, err
		}
	}
	switch x := denseData(vals[0]).(type) {
	case []float64:
		if !op.back {
			return G.NewF64(xentLoss(op, x, labels, scored)), nil
		}
		return tensor.New(tensor.WithShape(op.n, op.c), tensor.WithBacking(xentGrad(op, x, labels, scored, g))), nil
	case []float32:
		if !op.back {
			return G.NewF32(float32(xentLoss(op, x, labels, scored))), nil
		}
		return tensor.New(tensor.WithShape(op.n, op.c), tensor.WithBacking(xentGrad(op, x, labels, scored, g))), nil
	}
	return nil, fmt.Errorf("layers: sparse cross-entropy: unsupported logits %T", vals[0].Data())
}

func scalarOf(v G.Value) (float64, error) {
	switch x := v.Data().(type) {
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	case []float64:
		if len(x) == 1 {
			return x[0], nil
		}
	case []float32:
		if len(x) == 1 {
			return float64(x[0]), nil
		}
	}
	return 0, fmt.Errorf("layers: sparse cross-entropy: gradient %T is not a scalar", v.Data())
}

// parallelRows calls f on two halves of [0, n) concurrently (the rows of a
// (N, C) softmax are independent) when more than one thread may run Go
// code, or once for small n or GOMAXPROCS = 1.
func parallelRows(n, c int, f func(lo, hi int)) {
	if n < 2 || n*c < 1<<16 || runtime.GOMAXPROCS(0) < 2 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	mid := n / 2
	wg.Add(1)
	go func() { defer wg.Done(); f(mid, n) }()
	f(0, mid)
	wg.Wait()
}

// rowExp writes e[j] = exp(row[j] − max(row)) and returns max(row) and
// Σ_j e[j]. float32 rows use graph.Exp32 (exact to 1e-9, for results
// stored as float32), float64 rows math.Exp.
func rowExp[F float32 | float64](row, e []F) (float64, float64) {
	m := row[0]
	for _, v := range row[1:] {
		if v > m {
			m = v
		}
	}
	e = e[:len(row)]
	s := 0.0
	switch r := any(row).(type) {
	case []float32:
		e32 := any(e).([]float32)
		m64 := float64(m)
		var s0, s1 float64 // two sums: independent additions
		j := 0
		for ; j+1 < len(r); j += 2 {
			a, b := graph.Exp32(float64(r[j])-m64), graph.Exp32(float64(r[j+1])-m64)
			e32[j], e32[j+1] = float32(a), float32(b)
			s0 += a
			s1 += b
		}
		if j < len(r) {
			a := graph.Exp32(float64(r[j]) - m64)
			e32[j] = float32(a)
			s0 += a
		}
		s = s0 + s1
	case []float64:
		e64 := any(e).([]float64)
		m64 := float64(m)
		for j, v := range r {
			a := math.Exp(v - m64)
			e64[j] = a
			s += a
		}
	}
	return float64(m), s
}

// xentLoss computes every row's softmax into op.prob and op.inv and
// returns the mean NLL of the scored rows.
func xentLoss[F float32 | float64](op *sparseXentOp, x []F, labels []int, scored int) float64 {
	c := op.c
	prob, ok := op.prob.([]F)
	if !ok || len(prob) != len(x) {
		prob = make([]F, len(x))
		op.prob = prob
	}
	if len(op.inv) != op.n {
		op.inv = make([]float64, op.n)
	}
	lse := make([]float64, op.n)
	parallelRows(op.n, c, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			m, s := rowExp(x[i*c:(i+1)*c], prob[i*c:(i+1)*c])
			op.inv[i] = 1 / s
			lse[i] = m + math.Log(s)
		}
	})
	op.ready, op.src = true, x
	if scored == 0 {
		return 0
	}
	total := 0.0
	for i, l := range labels {
		if l >= 0 {
			total += lse[i] - float64(x[i*c+l])
		}
	}
	return total / float64(scored)
}

// xentGrad is (softmax(x) − onehot(labels))·g/scored for the scored rows
// (0 for the others), written in place into the forward op's softmax
// buffer when that holds the softmax of x (see sparseXentOp).
func xentGrad[F float32 | float64](op *sparseXentOp, x []F, labels []int, scored int, g float64) []F {
	c, f := op.c, op.fwd
	prob, ok := f.prob.([]F)
	if !ok || !f.ready || len(prob) != len(x) || len(f.inv) != op.n || !sameSlice(f.src, x) {
		// No softmax of these logits at hand: compute it.
		if !ok || len(prob) != len(x) {
			prob = make([]F, len(x))
			f.prob = prob
		}
		if len(f.inv) != op.n {
			f.inv = make([]float64, op.n)
		}
		parallelRows(op.n, c, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				_, s := rowExp(x[i*c:(i+1)*c], prob[i*c:(i+1)*c])
				f.inv[i] = 1 / s
			}
		})
	}
	f.ready, f.src = false, nil // the buffer now becomes the gradient
	if scored == 0 {
		clear(prob)
		return prob
	}
	scale := g / float64(scored)
	parallelRows(op.n, c, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			o := prob[i*c : (i+1)*c]
			l := labels[i]
			if l < 0 {
				clear(o)
				continue
			}
			k := F(f.inv[i] * scale)
			for j := range o {
				o[j] *= k
			}
			o[l] -= F(scale)
		}
	})
	return prob
}

// sameSlice reports whether a (a []float32 or []float64) starts at the same
// element as b and has its length.
func sameSlice[F float32 | float64](a any, b []F) bool {
	s, ok := a.([]F)
	return ok && len(s) == len(b) && len(s) > 0 && &s[0] == &b[0]
}

// Logits returns the tied output layer h wᵀ for h (N, Dim): the logits
// (N, Vocab) of a language model whose output matrix W_e = wᵀ is the token
// embedding table (see [TiedLogits]).
func (e *SparseEmbedding) Logits(h *G.Node) (*G.Node, error) {
	out, err := TiedLogits(h, e.w)
	if err != nil {
		return nil, fmt.Errorf("layers: sparse embedding %q: %w", e.s.Path(), err)
	}
	return out, nil
}

// TiedLogits returns h wᵀ for h (N, D) and a table w (V, D): the product
// graph.MatMul(h, w, false, true) computes, with its gradients dh = dY w and
// dw = dYᵀ h, through graph.Gemm. Unlike graph.MatMul, the three ops keep
// their (N, V), (N, D) and (V, D) outputs in buffers they own and reuse from
// run to run (as the gather's gradient does), so a training step of a
// language model allocates (and the runtime zeroes) no vocabulary-sized
// tensor for its output layer. A value read from the output is valid until
// the machine runs again.
func TiedLogits(h, w *G.Node) (*G.Node, error) {
	if h == nil || w == nil {
		return nil, fmt.Errorf("layers: tied logits: nil input")
	}
	hs, ws := h.Shape(), w.Shape()
	if hs.Dims() != 2 || ws.Dims() != 2 || hs[1] != ws[1] {
		return nil, fmt.Errorf("layers: tied logits: h %v and table %v, want (N, D) and (V, D)", hs, ws)
	}
	if h.Dtype() != w.Dtype() {
		return nil, fmt.Errorf("layers: tied logits: dtypes %v and %v differ", h.Dtype(), w.Dtype())
	}
	if err := graph.CheckDtype(h.Dtype()); err != nil {
		return nil, fmt.Errorf("layers: tied logits: %w", err)
	}
	return G.ApplyOp(&tiedOp{n: hs[0], v: ws[0], d: ws[1]}, h, w)
}

// tiedOp is one of the three products of the tied output layer, for h
// (n, d), w (v, d) and the logits' gradient dY (n, v).
type tiedOp struct {
	n, v, d int
	mode    tiedMode
	buf     any // []float32 or []float64: the output, reused
	wt      any // forward: wᵀ (d, v), reused
}

type tiedMode int

const (
	tiedForward tiedMode = iota // (h, w) -> h wᵀ (n, v)
	tiedGradH                   // (dY, w) -> dY w (n, d)
	tiedGradW                   // (dY, h) -> dYᵀ h (v, d)
)

func (op *tiedOp) outShape() tensor.Shape {
	switch op.mode {
	case tiedGradH:
		return tensor.Shape{op.n, op.d}
	case tiedGradW:
		return tensor.Shape{op.v, op.d}
	}
	return tensor.Shape{op.n, op.v}
}

func (op *tiedOp) Arity() int { return 2 }
func (op *tiedOp) Type() hm.Type {
	t := &G.TensorType{Dims: 2, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t, t)
}
func (op *tiedOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.outShape(), nil }
func (op *tiedOp) ReturnsPtr() bool                               { return false }
func (op *tiedOp) CallsExtern() bool                              { return false }
func (op *tiedOp) OverwritesInput() int                           { return -1 }
func (op *tiedOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "gdattn.tied (%d,%d,%d) mode %d", op.n, op.v, op.d, op.mode)
}
func (op *tiedOp) Hashcode() uint32 { return hash32(op) }
func (op *tiedOp) String() string {
	return [...]string{"TiedLogits", "TiedLogitsGradH", "TiedLogitsGradW"}[op.mode] + fmt.Sprintf("(%d,%d,%d)", op.n, op.v, op.d)
}
func (op *tiedOp) DiffWRT(int) []bool {
	if op.mode != tiedForward {
		return []bool{false, false}
	}
	return []bool{true, true}
}
func (op *tiedOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if op.mode != tiedForward {
		return nil, fmt.Errorf("layers: the tied logits' gradients have no gradient of their own (second derivatives are unsupported)")
	}
	dh, err := G.ApplyOp(&tiedOp{n: op.n, v: op.v, d: op.d, mode: tiedGradH}, grad, inputs[1])
	if err != nil {
		return nil, err
	}
	dw, err := G.ApplyOp(&tiedOp{n: op.n, v: op.v, d: op.d, mode: tiedGradW}, grad, inputs[0])
	if err != nil {
		return nil, err
	}
	return G.Nodes{dh, dw}, nil
}

func (op *tiedOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("layers: %v: %d inputs, want 2", op, len(vals))
	}
	switch a := denseData(vals[0]).(type) {
	case []float64:
		b, ok := denseData(vals[1]).([]float64)
		if !ok {
			return nil, fmt.Errorf("layers: %v: mixed dtypes", op)
		}
		return tiedDo(op, a, b)
	case []float32:
		b, ok := denseData(vals[1]).([]float32)
		if !ok {
			return nil, fmt.Errorf("layers: %v: mixed dtypes", op)
		}
		return tiedDo(op, a, b)
	}
	return nil, fmt.Errorf("layers: %v: unsupported data %T", op, vals[0].Data())
}

// chunkLen is the number of rows of width d (a panel of wᵀ's columns or of
// w's rows) that fill 256 KiB of float32s, a multiple of 16, at least 16.
func chunkLen(d int) int {
	return max(16, (65536/d)&^15)
}

// transposeTable writes the (d, v) transpose of the row-major (v, d) matrix w
// into wt, in 64×64 tiles.
func transposeTable[F float32 | float64](wt, w []F, v, d int) {
	const tile = 64
	for i0 := 0; i0 < v; i0 += tile {
		i1 := min(i0+tile, v)
		for j0 := 0; j0 < d; j0 += tile {
			j1 := min(j0+tile, d)
			for i := i0; i < i1; i++ {
				row := w[i*d : i*d+d]
				for j := j0; j < j1; j++ {
					wt[j*v+i] = row[j]
				}
			}
		}
	}
}

func tiedDo[F float32 | float64](op *tiedOp, a, b []F) (G.Value, error) {
	n, v, d := op.n, op.v, op.d
	// Input sizes: (h or dY) and (w or h).
	wantA, wantB := n*d, v*d
	if op.mode != tiedForward {
		wantA = n * v
		if op.mode == tiedGradW {
			wantB = n * d
		}
	}
	if len(a) != wantA || len(b) != wantB {
		return nil, fmt.Errorf("layers: %v: inputs of %d and %d values, want %d and %d", op, len(a), len(b), wantA, wantB)
	}
	shape := op.outShape()
	c, ok := op.buf.([]F)
	if !ok || len(c) != shape.TotalSize() {
		c = make([]F, shape.TotalSize())
		op.buf = c
	}
	// Each product runs through graph.Gemm (its AVX2 row kernel where
	// available) in panels of 256 KiB that stay in the L2 cache while every
	// row of the result passes over them: the row kernel alone would stream
	// the whole table (13 MB for the small preset, 103 MB for the paper's)
	// once per row, and gonum's kernels for h wᵀ are inner products of length
	// d. Per product (BenchmarkTiedLogits, one core) this is 2–4× gonum.
	switch op.mode {
	case tiedForward: // (n, v) = h (n, d) · wᵀ: wᵀ (d, v) copied once, in column panels
		wt, ok := op.wt.([]F)
		if !ok || len(wt) != d*v {
			wt = make([]F, d*v)
			op.wt = wt
		}
		transposeTable(wt, b, v, d)
		cols := chunkLen(d)
		for c0 := 0; c0 < v; c0 += cols {
			graph.Gemm(false, false, n, min(cols, v-c0), d, 1, a, d, wt[c0:], v, 0, c[c0:], v)
		}
	case tiedGradH: // (n, d) = dY (n, v) · w (v, d), accumulated over panels of w's rows
		rows := chunkLen(d)
		for r0 := 0; r0 < v; r0 += rows {
			var beta F
			if r0 > 0 {
				beta = 1
			}
			graph.Gemm(false, false, n, d, min(rows, v-r0), 1, a[r0:], v, b[r0*d:], d, beta, c, d)
		}
	case tiedGradW: // (v, d) = dYᵀ (v, n) · h (n, d), accumulated over panels of h's rows
		rows := chunkLen(d)
		for r0 := 0; r0 < n; r0 += rows {
			var beta F
			if r0 > 0 {
				beta = 1
			}
			graph.Gemm(true, false, v, d, min(rows, n-r0), 1, a[r0*v:], v, b[r0*d:], d, beta, c, d)
		}
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(c)), nil
}
