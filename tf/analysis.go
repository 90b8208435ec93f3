package tf

import (
	"fmt"
	"math"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	G "gorgonia.org/gorgonia"
)

// Analysis is the parameter analysis of Appendix F (Figures 8 and 9) of a
// single-layer, single-head TF on the gd.OneStep tokens
// e = (x, w_{e,y} − w̄_e, f) of width D = d + 2d'.
//
// WQ, WK (D×DK), WV and P (D×D) are the head's matrices as stored, in
// gdattn's row convention (a head maps rows e_j to
// Σ_i κ(e_j W_Q, e_i W_K) e_i W_V P); they are the transposes of the paper's
// Figure 8 matrices. From them:
//
//	A = W_Q[0:d, :], B = W_K[0:d, :]        (d×DK: the rows acting on x)
//	D = W_V[d:d+d', :]                      (d'×D: the rows acting on the label block)
//	E = P[:, d+d':d+2d']                    (D×d': the columns writing the f block)
//
// and the two effective matrices the paper plots:
//
//	Q  = A·Bᵀ (d×d): the query/key inner product restricted to x is
//	     (x_j A)·(x_i B) = x_j Q x_iᵀ, with x_j the query and x_i the key (row
//	     vectors). This is the paper's Q = AᵀB of its column-convention A, B.
//	ED = (D·E)ᵀ (d'×d'): the paper's E·D, the map from the label block to the
//	     f block in column convention, f_j ← f_j + ED Σ_i κ_ij (w_{e,y_i} − w̄_e)
//	     (for the part of the value that reads the label block).
//
// The GD construction (Appendix C) has Q = I (its scale lives in the kernel
// parameter) and ED = (α/N) I: both exactly diagonal with equal diagonal
// entries. The paper reports that a trained TF comes close to this.
type Analysis struct {
	Q, ED layers.Matrix
	// QDiagonality and EDDiagonality are Diagonality(Q) and Diagonality(ED):
	// 0 for a diagonal matrix.
	QDiagonality, EDDiagonality float64
	// QSpread and EDSpread are DiagonalSpread(Q) and DiagonalSpread(ED):
	// 0 when the diagonal entries are equal.
	QSpread, EDSpread float64
	// A, B, D and E are the sub-matrices defined above (row convention).
	A, B, D, E layers.Matrix
	// WQ, WK, WV and P are the head's matrices (row convention).
	WQ, WK, WV, P layers.Matrix
}

// Analyze reads the current parameter values of m's attention head (holding
// the model's lock, graph.Scope.Lock) and returns its [Analysis]. m must have one layer, one head and no
// cross-attention (the single-step setting of Appendix F).
func Analyze(m *Model) (Analysis, error) {
	if m == nil {
		return Analysis{}, fmt.Errorf("tf: Analyze: model is nil")
	}
	cfg := m.Cfg
	if cfg.Layers != 1 || cfg.Heads != 1 || cfg.Cross {
		return Analysis{}, fmt.Errorf("tf: Analyze: needs Layers = 1, Heads = 1 and no Cross; model has Layers = %d, Heads = %d, Cross = %v",
			cfg.Layers, cfg.Heads, cfg.Cross)
	}
	wq, wk, wv, p := m.Blocks[0].Heads[0].Matrices()
	var mats [4]layers.Matrix
	// The parameters of one step, should another goroutine train m
	// (graph.Scope.Lock, which package train holds for every step).
	m.s.Lock()
	defer m.s.Unlock()
	for i, n := range []*G.Node{wq, wk, wv, p} {
		v, err := graph.Values(n)
		if err != nil {
			return Analysis{}, fmt.Errorf("tf: Analyze: %w", err)
		}
		mats[i] = layers.Matrix{Rows: n.Shape()[0], Cols: n.Shape()[1], Data: v}
	}
	return AnalyzeMatrices(cfg.D, cfg.DPrime, mats[0], mats[1], mats[2], mats[3])
}

// AnalyzeMatrices is [Analyze] on explicit matrices in row convention for
// tokens of width D = d + 2d': wq and wk are D×DK, wv is D×DV and p is
// DV×D (DV = D in a [Model]). Use it on matrices from a checkpoint, or on
// gd.OneStepMatrices.
func AnalyzeMatrices(d, dPrime int, wq, wk, wv, p layers.Matrix) (Analysis, error) {
	if d <= 0 || dPrime <= 0 {
		return Analysis{}, fmt.Errorf("tf: AnalyzeMatrices: d = %d, dPrime = %d, want both > 0", d, dPrime)
	}
	D := d + 2*dPrime
	for _, c := range []struct {
		name string
		m    layers.Matrix
	}{{"wq", wq}, {"wk", wk}, {"wv", wv}, {"p", p}} {
		if c.m.Rows <= 0 || c.m.Cols <= 0 || !consistent(c.m) {
			return Analysis{}, fmt.Errorf("tf: AnalyzeMatrices: %s is %dx%d with %d values", c.name, c.m.Rows, c.m.Cols, len(c.m.Data))
		}
	}
	switch {
	case wq.Rows != D || wk.Rows != D || wq.Cols != wk.Cols:
		return Analysis{}, fmt.Errorf("tf: AnalyzeMatrices: wq is %dx%d and wk %dx%d, want both %dxDK (D = d + 2d' = %d)",
			wq.Rows, wq.Cols, wk.Rows, wk.Cols, D, D)
	case wv.Rows != D || p.Rows != wv.Cols || p.Cols != D:
		return Analysis{}, fmt.Errorf("tf: AnalyzeMatrices: wv is %dx%d and p %dx%d, want %dxDV and DVx%d",
			wv.Rows, wv.Cols, p.Rows, p.Cols, D, D)
	}
	a := Analysis{
		WQ: clone(wq), WK: clone(wk), WV: clone(wv), P: clone(p),
		A: sub(wq, 0, d, 0, wq.Cols),
		B: sub(wk, 0, d, 0, wk.Cols),
		D: sub(wv, d, d+dPrime, 0, wv.Cols),
		E: sub(p, 0, p.Rows, d+dPrime, d+2*dPrime),
	}
	a.Q = mul(a.A, transpose(a.B))
	a.ED = transpose(mul(a.D, a.E))
	a.QDiagonality, a.EDDiagonality = Diagonality(a.Q), Diagonality(a.ED)
	a.QSpread, a.EDSpread = DiagonalSpread(a.Q), DiagonalSpread(a.ED)
	return a, nil
}

// Diagonality is the share of m's energy off its diagonal,
//
//	Σ_{i≠j} m_ij² / Σ_ij m_ij²,
//
// 0 for a diagonal matrix and 1 for one with a zero diagonal; for a
// rectangular m the diagonal is the entries (i, i). It is NaN for an
// all-zero (or empty) m.
func Diagonality(m layers.Matrix) float64 {
	if !consistent(m) {
		return math.NaN()
	}
	var off, total float64
	for i := 0; i < m.Rows; i++ {
		for j := 0; j < m.Cols; j++ {
			v := m.At(i, j) * m.At(i, j)
			total += v
			if i != j {
				off += v
			}
		}
	}
	if total == 0 {
		return math.NaN()
	}
	return off / total
}

// DiagonalSpread measures how unequal m's diagonal entries are:
//
//	(max_i m_ii − min_i m_ii) / mean_i |m_ii|,
//
// over i < min(rows, cols): 0 when they are all equal (a multiple of the
// identity, if m is also diagonal). It is NaN when the diagonal is empty or
// all zero.
func DiagonalSpread(m layers.Matrix) float64 {
	n := min(m.Rows, m.Cols)
	if n <= 0 || !consistent(m) {
		return math.NaN()
	}
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	for i := 0; i < n; i++ {
		v := m.At(i, i)
		lo, hi, sum = math.Min(lo, v), math.Max(hi, v), sum+math.Abs(v)
	}
	if sum == 0 {
		return math.NaN()
	}
	return (hi - lo) / (sum / float64(n))
}

func clone(m layers.Matrix) layers.Matrix {
	return layers.Matrix{Rows: m.Rows, Cols: m.Cols, Data: append([]float64(nil), m.Data...)}
}

// sub is m[r0:r1, c0:c1].
func sub(m layers.Matrix, r0, r1, c0, c1 int) layers.Matrix {
	out := layers.Matrix{Rows: r1 - r0, Cols: c1 - c0, Data: make([]float64, 0, (r1-r0)*(c1-c0))}
	for i := r0; i < r1; i++ {
		out.Data = append(out.Data, m.Data[i*m.Cols+c0:i*m.Cols+c1]...)
	}
	return out
}

func transpose(m layers.Matrix) layers.Matrix {
	out := layers.Matrix{Rows: m.Cols, Cols: m.Rows, Data: make([]float64, len(m.Data))}
	for i := 0; i < m.Rows; i++ {
		for j := 0; j < m.Cols; j++ {
			out.Data[j*m.Rows+i] = m.At(i, j)
		}
	}
	return out
}

// mul is a·b; a.Cols must equal b.Rows (callers guarantee it).
func mul(a, b layers.Matrix) layers.Matrix {
	out := layers.Matrix{Rows: a.Rows, Cols: b.Cols, Data: make([]float64, a.Rows*b.Cols)}
	for i := 0; i < a.Rows; i++ {
		for k := 0; k < a.Cols; k++ {
			v := a.At(i, k)
			for j := 0; j < b.Cols; j++ {
				out.Data[i*b.Cols+j] += v * b.At(k, j)
			}
		}
	}
	return out
}

// consistent reports whether m's Data holds Rows·Cols values (the measures
// above are NaN for a matrix that does not).
func consistent(m layers.Matrix) bool {
	return m.Rows >= 0 && m.Cols >= 0 && (m.Rows == 0 || m.Cols <= math.MaxInt/m.Rows) && len(m.Data) == m.Rows*m.Cols
}
