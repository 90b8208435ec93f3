package kvcache

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/gdattn/gdattn/gemm"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
)

// Decoder decodes a language model incrementally over a snapshot of its
// parameters (see the package documentation).
type Decoder interface {
	// ContextLen is the window T: a row holds at most T ids.
	ContextLen() int
	// VocabSize is the number V of token ids.
	VocabSize() int
	// NewRow returns an empty row.
	NewRow() Row
	// Append appends chunks[b] (not empty, ids in [0, V)) to rows[b]
	// (every row at most once) and, where logits[b] is not nil, writes into it (len V) the
	// logits of the token after the row's new last id. A row that would
	// hold more than T ids keeps its last T. On error the rows are left
	// in an unspecified state: drop them.
	Append(rows []Row, chunks [][]int, logits [][]float64) error
}

// Row is one sequence's cached state.
type Row interface {
	// IDs are the ids of the row's window (at most T, oldest first); the
	// slice must not be modified.
	IDs() []int
	// Clone returns an independent copy.
	Clone() Row
}

// Float is the element type of a decoder's snapshot.
type Float interface{ float32 | float64 }

// Values returns a copy of n's value as []F; call it with the model's
// scope locked (graph.Scope.Lock) so that no run writes the value meanwhile.
func Values[F Float](n *G.Node) ([]F, error) {
	if n == nil {
		return nil, fmt.Errorf("kvcache: parameter is nil")
	}
	v := n.Value()
	if v == nil {
		return nil, fmt.Errorf("kvcache: parameter %q has no value", n.Name())
	}
	src, ok := v.Data().([]F)
	if !ok {
		var zero F
		return nil, fmt.Errorf("kvcache: parameter %q holds %T, want []%T", n.Name(), v.Data(), zero)
	}
	return append([]F(nil), src...), nil
}

// CheckChunks checks the arguments of Decoder.Append: as many chunks and
// logits as rows, every chunk's ids in [0, vocab), distinct rows, and a
// chunk not empty unless the row already has ids.
func CheckChunks(rows []Row, chunks [][]int, logits [][]float64, vocab int) error {
	if len(chunks) != len(rows) || len(logits) != len(rows) {
		return fmt.Errorf("kvcache: %d rows, %d chunks, %d logits", len(rows), len(chunks), len(logits))
	}
	seen := make(map[Row]bool, len(rows))
	for b, r := range rows {
		if r == nil {
			return fmt.Errorf("kvcache: row %d is nil", b)
		}
		if seen[r] {
			return fmt.Errorf("kvcache: row %d appears twice", b)
		}
		seen[r] = true
		if len(chunks[b]) == 0 {
			return fmt.Errorf("kvcache: chunk %d is empty", b)
		}
		for _, id := range chunks[b] {
			if id < 0 || id >= vocab {
				return fmt.Errorf("kvcache: id %d of row %d is outside [0, %d)", id, b, vocab)
			}
		}
		if logits[b] != nil && len(logits[b]) != vocab {
			return fmt.Errorf("kvcache: logits %d have %d entries, want %d", b, len(logits[b]), vocab)
		}
	}
	return nil
}

// Window returns the ids a row holds after appending chunk to ids with a
// window of t: the last t of them, and how many of ids are dropped.
func Window(ids, chunk []int, t int) (kept []int, dropped int) {
	all := append(append(make([]int, 0, len(ids)+len(chunk)), ids...), chunk...)
	if len(all) <= t {
		return all, 0
	}
	return all[len(all)-t:], len(all) - t
}

// LayerNorm writes the layer norm of the n rows of x (n, d) into out:
// (x − mean)/sqrt(var + eps)·scale + bias with the biased variance, as
// ops.LayerNorm computes it (the same sums in the same order). bias may be
// nil.
func LayerNorm[F Float](x []F, n, d int, scale, bias []F, eps F, out []F) {
	df := F(d)
	for r := 0; r < n; r++ {
		row, o := x[r*d:(r+1)*d], out[r*d:(r+1)*d]
		var s F
		for _, v := range row {
			s += v
		}
		negMean := -(s / df)
		var q F
		for _, v := range row {
			c := negMean + v
			q += F(c * c)
		}
		sd := F(math.Sqrt(float64(F(q/df) + eps)))
		rstd := 1 / sd
		for j, v := range row {
			y := F(F((negMean+v)*rstd) * scale[j])
			if bias != nil {
				y += bias[j]
			}
			o[j] = y
		}
	}
}

// GELU applies the tanh approximation of GELU in place, x σ(k(x + c x³)),
// as ops.GELU computes it.
func GELU[F Float](x []F) {
	c, k := F(0.044715), F(1.5957691216057308)
	for i, v := range x {
		z := F(k * F(v+F(c*F(F(v*v)*v))))
		x[i] = F(v * sigmoid(z))
	}
}

func sigmoid[F Float](z F) F {
	var lo, hi F = -709, 19
	if _, ok := any(z).(float32); ok {
		lo, hi = -88, 15
	}
	switch {
	case z < lo:
		return 0
	case z > hi:
		return 1
	}
	return F(1 / (1 + exp[F](-float64(z))))
}

// exp is math.Exp, or ops.Exp32 (relative error below 1e-9, three times
// as fast) for results stored as float32.
func exp[F Float](x float64) float64 {
	var z F
	if _, ok := any(z).(float32); ok {
		return ops.Exp32(x)
	}
	return math.Exp(x)
}

// MatMul is c (m, n) = a (m, k) · b (k, n), or · bᵀ with b stored (n, k)
// when transB; with acc it adds to c.
func MatMul[F Float](transB bool, m, n, k int, a, b []F, acc bool, c []F) {
	if m == 0 || n == 0 {
		return
	}
	ldb := n
	if transB {
		ldb = k
	}
	var beta F
	if acc {
		beta = 1
	}
	if k == 0 {
		if !acc {
			clear(c[:m*n])
		}
		return
	}
	if err := gemm.Gemm(false, transB, m, n, k, 1, a, k, b, ldb, beta, c, n); err != nil {
		panic(err) // the decoders size every operand: a failure is a bug
	}
}

// WideMatMul is [MatMul] (without transB or acc) for a product with many
// columns, such as the logits over the vocabulary. On GOMAXPROCS > 1 the
// columns are split over goroutines (package gemm splits only the products
// it packs, and a product of a few rows runs on its row kernels instead).
// With 2 to 6 rows the columns go by blocks of 128, every row of a block on
// gemm's row kernels while the block is in cache: b is read from memory
// once, where gemm would read it once per row (row kernels) or copy it
// (packing). Each element is computed as by MatMul (gemm gives the row and
// packed paths the same bits), so the result does not depend on the split.
func WideMatMul[F Float](m, n, k int, a, b []F, c []F) {
	cols := func(lo, hi int) {
		if m < 2 || m > 6 {
			if err := gemm.Gemm(false, false, m, hi-lo, k, 1, a, k, b[lo:], n, 0, c[lo:], n); err != nil {
				panic(err) // sized by the callers: a failure is a bug
			}
			return
		}
		for j := lo; j < hi; j += 128 {
			w := min(128, hi-j)
			for i := 0; i < m; i++ {
				if err := gemm.Gemm(false, false, 1, w, k, 1, a[i*k:], k, b[j:], n, 0, c[i*n+j:], n); err != nil {
					panic(err)
				}
			}
		}
	}
	parts := runtime.GOMAXPROCS(0)
	if work := 2 * m * n * k; work < 8<<20 || parts < 2 || n < 64*parts {
		cols(0, n)
		return
	}
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		lo, hi := p*n/parts/32*32, (p+1)*n/parts/32*32
		if p == parts-1 {
			hi = n
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cols(lo, hi)
		}()
	}
	wg.Wait()
}

// AddBias adds bias (d) to every row of x (n, d).
func AddBias[F Float](x []F, bias []F) {
	d := len(bias)
	for r := 0; r+d <= len(x); r += d {
		row := x[r : r+d]
		for j, b := range bias {
			row[j] += b
		}
	}
}

// SoftmaxRow replaces x by softmax(x), subtracting the maximum first.
func SoftmaxRow[F Float](x []F) {
	if len(x) == 0 {
		return
	}
	mx := x[0]
	for _, v := range x[1:] {
		if v > mx {
			mx = v
		}
	}
	var s float64
	for i, v := range x {
		e := exp[F](float64(v - mx))
		x[i] = F(e)
		s += e
	}
	inv := 1 / s
	for i := range x {
		x[i] = F(float64(x[i]) * inv)
	}
}

// Head is the output layer both families share: the final layer norm
// ln_f and the logits tied to the token embedding.
type Head[F Float] struct {
	Scale, Bias []F // ln_f (d)
	// WteT is the token embedding transposed, (d, V): the product's rows
	// are read in order (a transposed right factor would be copied by
	// every product).
	WteT []F
	V, D int
}

// Transpose returns the transpose (cols, rows) of the row-major
// (rows, cols) matrix w.
func Transpose[F Float](w []F, rows, cols int) []F {
	out := make([]F, len(w))
	const blk = 64
	for r0 := 0; r0 < rows; r0 += blk {
		for c0 := 0; c0 < cols; c0 += blk {
			for r := r0; r < min(r0+blk, rows); r++ {
				for c := c0; c < min(c0+blk, cols); c++ {
					out[c*rows+r] = w[r*cols+c]
				}
			}
		}
	}
	return out
}

// Logits writes the logits of the n rows h (n, d) into out[r] (len V):
// ln_f(h) wteᵀ.
func (h *Head[F]) Logits(x []F, n int, out [][]float64) {
	d, V := h.D, h.V
	y := make([]F, n*d)
	LayerNorm(x, n, d, h.Scale, h.Bias, 1e-5, y)
	l := make([]F, n*V)
	WideMatMul(n, V, d, y, h.WteT, l)
	for r := 0; r < n; r++ {
		o := out[r]
		for j, v := range l[r*V : (r+1)*V] {
			o[j] = float64(v)
		}
	}
}
