package theorem2

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// layout flattens the model's parameters into one vector: parameter k
// (name names[k], shape rows[k]×cols[k], a scalar as 1×1) occupies
// [off[k], off[k]+rows[k]*cols[k]).
type layout struct {
	names      []string
	rows, cols []int
	off        []int
	total      int
}

func (l *layout) add(name string, r, c int) {
	l.names = append(l.names, name)
	l.rows, l.cols = append(l.rows, r), append(l.cols, c)
	l.off = append(l.off, l.total)
	l.total += r * c
}

// index returns the flat index of element (r, c) of parameter name, or -1.
func (l *layout) index(name string, r, c int) int {
	for k, n := range l.names {
		if n == name {
			return l.off[k] + r*l.cols[k] + c
		}
	}
	return -1
}

// direction is a unit vector of the parameter space, sparse.
type direction struct {
	label string
	idx   []int
	coef  []float64
}

func (d direction) dot(g []float64) float64 {
	s := 0.0
	for i, j := range d.idx {
		s += d.coef[i] * g[j]
	}
	return s
}

// category is a named orthonormal set of directions.
type category struct {
	Name string
	What string
	dirs []direction
}

// tokenBlocks are the coordinate ranges of the gd.OneStep token
// (x, w_{e,y} − w̄_e, f): x = [0, d), label = [d, d+d'), f = [d+d', d+2d').
type tokenBlocks struct{ d, dp int }

func (b tokenBlocks) isX(i int) bool { return i < b.d }

// categories splits the attention parameters of a single-head TF at the
// one-step GD construction (W_Q, W_K: D×DK, W_V: D×DV, P: DV×D, and the
// kernel's log g when present) into orthonormal groups of directions:
//
//   - "B traceless": the traceless part of the x×x blocks of W_Q and W_K
//     (d²−1 directions each). Theorem 2's proof shows that rotation
//     invariance makes the gradient with respect to B = (W_K W_Qᵀ)_xx a
//     multiple of I at B = bI: these must vanish.
//   - "x-mixing blocks of W_Q, W_K": the entries that couple x with the
//     label and f coordinates (Assumption 1 sets them to zero). The
//     reflection x → −x makes their gradient vanish.
//   - "x blocks of W_V, P": W_V reading x and P writing into x (Assumption 2
//     sets them to zero); they vanish by the same reflection.
//   - "GD scalars": log g and the traces of the x×x blocks of W_Q and W_K,
//     of W_V's label→label block and of P's label→f block: the directions
//     along the GD family (kernel scale b, step t), stationary only at the
//     optimal (α, g).
//   - "outside Assumptions 1-2": every other direction of the symmetric
//     subspace (e.g. T ≠ tI, W_V's label block not a multiple of I). The
//     theorem fixes these and says nothing about them.
//
// The first three groups span the complement of the subspace fixed by the
// rotations and reflections of x (acting on the rows and columns indexed
// by x, with the compensating rotation of the query/key features); the last
// two span the fixed subspace.
func categories(l *layout, d, dp int, hasGamma bool) []category {
	tb := tokenBlocks{d, dp}
	unit := func(label, name string, r, c int) direction {
		return direction{label: fmt.Sprintf("%s[%d,%d]", label, r, c), idx: []int{l.index(name, r, c)}, coef: []float64{1}}
	}
	var bTrace, xMix, vpX, scalars, rest []direction
	for _, name := range []string{"wq", "wk"} {
		k := indexOf(l.names, name)
		R, Cc := l.rows[k], l.cols[k]
		// x×x block: Helmert basis of the traceless diagonal, the
		// off-diagonal units, and the trace.
		for m := 1; m < d; m++ {
			dir := direction{label: fmt.Sprintf("%s diag-traceless %d", name, m)}
			norm := math.Sqrt(float64(m * (m + 1)))
			for i := 0; i <= m; i++ {
				c := 1 / norm
				if i == m {
					c = -float64(m) / norm
				}
				dir.idx, dir.coef = append(dir.idx, l.index(name, i, i)), append(dir.coef, c)
			}
			bTrace = append(bTrace, dir)
		}
		tr := direction{label: name + " x-trace"}
		for i := 0; i < d; i++ {
			tr.idx, tr.coef = append(tr.idx, l.index(name, i, i)), append(tr.coef, 1/math.Sqrt(float64(d)))
			for j := 0; j < d; j++ {
				if i != j {
					bTrace = append(bTrace, unit(name, name, i, j))
				}
			}
		}
		scalars = append(scalars, tr)
		for r := 0; r < R; r++ {
			for c := 0; c < Cc; c++ {
				switch {
				case tb.isX(r) && c < d: // the x×x block, done above
				case tb.isX(r) || c < d:
					xMix = append(xMix, unit(name, name, r, c))
				default:
					rest = append(rest, unit(name, name, r, c))
				}
			}
		}
	}
	// W_V (D×DV): rows are token coordinates, columns value features. P
	// (DV×D): rows are value features, columns token coordinates.
	kv, kp := indexOf(l.names, "wv"), indexOf(l.names, "wo")
	trV := direction{label: "wv label-trace"}
	trP := direction{label: "wo label→f trace"}
	for r := 0; r < dp; r++ {
		trV.idx, trV.coef = append(trV.idx, l.index("wv", d+r, d+r)), append(trV.coef, 1/math.Sqrt(float64(dp)))
		trP.idx, trP.coef = append(trP.idx, l.index("wo", d+r, d+dp+r)), append(trP.coef, 1/math.Sqrt(float64(dp)))
	}
	scalars = append(scalars, trV, trP)
	restFromBlock := func(name string, r, c int, onDiag func(r, c int) bool) {
		if !onDiag(r, c) {
			rest = append(rest, unit(name, name, r, c))
		}
	}
	// The label-block diagonals carry the trace; their traceless part goes
	// to rest through a Helmert basis.
	labelDiagV := func(r, c int) bool { return r >= d && r < d+dp && c == r }
	labelDiagP := func(r, c int) bool { return r >= d && r < d+dp && c == r+dp }
	for r := 0; r < l.rows[kv]; r++ {
		for c := 0; c < l.cols[kv]; c++ {
			if tb.isX(r) {
				vpX = append(vpX, unit("wv", "wv", r, c))
			} else {
				restFromBlock("wv", r, c, labelDiagV)
			}
		}
	}
	for r := 0; r < l.rows[kp]; r++ {
		for c := 0; c < l.cols[kp]; c++ {
			if tb.isX(c) {
				vpX = append(vpX, unit("wo", "wo", r, c))
			} else {
				restFromBlock("wo", r, c, labelDiagP)
			}
		}
	}
	for _, name := range []string{"wv", "wo"} {
		shift := 0
		if name == "wo" {
			shift = dp
		}
		for m := 1; m < dp; m++ {
			dir := direction{label: fmt.Sprintf("%s label diag-traceless %d", name, m)}
			norm := math.Sqrt(float64(m * (m + 1)))
			for i := 0; i <= m; i++ {
				c := 1 / norm
				if i == m {
					c = -float64(m) / norm
				}
				dir.idx, dir.coef = append(dir.idx, l.index(name, d+i, d+i+shift)), append(dir.coef, c)
			}
			rest = append(rest, dir)
		}
	}
	if hasGamma {
		scalars = append([]direction{unit("log_gamma", "log_gamma", 0, 0)}, scalars...)
	}
	return []category{
		{Name: "B traceless", What: "traceless x×x blocks of W_Q, W_K (Theorem 2: B ∝ I)", dirs: bTrace},
		{Name: "x-mixing W_Q, W_K", What: "W_Q, W_K entries coupling x with label/f coordinates (Assumption 1 zeros)", dirs: xMix},
		{Name: "x blocks W_V, P", What: "W_V reading x, P writing x (Assumption 2 zeros)", dirs: vpX},
		{Name: "GD scalars", What: "log g, traces of W_Q, W_K x-blocks, of W_V label block and P label→f block", dirs: scalars},
		{Name: "outside Assumptions 1-2", What: "the rest of the symmetric subspace (T ≠ tI etc.)", dirs: rest},
	}
}

func indexOf(names []string, n string) int {
	for i, m := range names {
		if m == n {
			return i
		}
	}
	panic(fmt.Sprintf("theorem2: no parameter %q", n)) // the layout is built by this package
}

// symmetric projects g (flat, attention parameters of layout l) onto the
// subspace fixed by the rotations and reflections of x: the x×x blocks of
// W_Q and W_K become (trace/d)·I, every other entry in a row or column
// indexed by x (W_Q, W_K rows and columns, W_V rows, P columns) becomes 0,
// the rest is unchanged. It is the Haar average over O(d) of the action
// (W_Q, W_K, W_V, P) → (Uᵀ W_Q U', Uᵀ W_K U', Uᵀ W_V, P U) with U acting on
// the x coordinates and U' = U on the first d query/key features; it is
// also the average over the eight symmetries of the square for d = 2.
func symmetric(l *layout, d int, g []float64) []float64 {
	out := append([]float64(nil), g...)
	for k, name := range l.names {
		R, Cc, off := l.rows[k], l.cols[k], l.off[k]
		switch name {
		case "wq", "wk":
			tr := 0.0
			for i := 0; i < d; i++ {
				tr += g[off+i*Cc+i]
			}
			for r := 0; r < R; r++ {
				for c := 0; c < Cc; c++ {
					switch {
					case r < d && c < d && r == c:
						out[off+r*Cc+c] = tr / float64(d)
					case r < d || c < d:
						out[off+r*Cc+c] = 0
					}
				}
			}
		case "wv":
			for r := 0; r < d; r++ {
				for c := 0; c < Cc; c++ {
					out[off+r*Cc+c] = 0
				}
			}
		case "wo":
			for r := 0; r < R; r++ {
				for c := 0; c < d; c++ {
					out[off+r*Cc+c] = 0
				}
			}
		}
	}
	return out
}

// catStats are the Monte Carlo statistics of one category of directions,
// from n i.i.d. minibatch gradients.
type catStats struct {
	Name string `json:"name"`
	What string `json:"what"`
	// Dims is the number of directions; Structural of them had an exactly
	// zero gradient in every minibatch (zero by the model's structure,
	// whatever the data), and Active = Dims − Structural.
	Dims, Structural, Active int
	// Norm is ‖ḡ‖ over the category; Noise = sqrt(tr Cov/n) is its
	// Monte Carlo noise floor (E‖ḡ‖² = ‖g‖² + Noise²), and Debiased =
	// sqrt(max(0, Norm² − Noise²)) estimates ‖g‖.
	Norm, Noise, Debiased float64
	// MaxZ is the largest |ḡ_i|/SE_i over the active directions, at MaxZDir.
	MaxZ    float64 `json:"max_z"`
	MaxZDir string  `json:"max_z_dir"`
	// Rank, T2, F and P are Hotelling's test of "the mean gradient is 0 in
	// this category": T² = n ḡᵀ S⁺ ḡ on the Rank non-null directions of the
	// sample covariance S, F = (n−p)/(p(n−1))·T² ~ F(p, n−p) under the
	// null, P its upper tail.
	Rank int     `json:"rank"`
	T2   float64 `json:"t2"`
	F    float64 `json:"f"`
	P    float64 `json:"p_value"`
	// Components lists ḡ and its standard error along each active
	// direction (only for categories of at most 12 active directions).
	Components []component `json:"components,omitempty"`
}

type component struct {
	Dir  string  `json:"dir"`
	Mean float64 `json:"mean"`
	SE   float64 `json:"se"`
}

// stats computes catStats for cat from the minibatch gradients gs (each a
// flat attention-parameter vector); withTest adds Hotelling's test.
func stats(cat category, gs [][]float64, withTest bool) catStats {
	n := len(gs)
	st := catStats{Name: cat.Name, What: cat.What, Dims: len(cat.dirs)}
	// Projections: proj[k][i] = <dir_i, g_k>.
	proj := make([][]float64, n)
	for k, g := range gs {
		proj[k] = make([]float64, len(cat.dirs))
		for i, dir := range cat.dirs {
			proj[k][i] = dir.dot(g)
		}
	}
	var active []int
	mean := make([]float64, len(cat.dirs))
	for i := range cat.dirs {
		zero := true
		for k := 0; k < n; k++ {
			mean[i] += proj[k][i] / float64(n)
			zero = zero && proj[k][i] == 0
		}
		if zero {
			st.Structural++
		} else {
			active = append(active, i)
		}
	}
	st.Active = len(active)
	p := len(active)
	if p == 0 {
		return st
	}
	cov := mat.NewSymDense(p, nil)
	for a, i := range active {
		for b := a; b < p; b++ {
			j := active[b]
			s := 0.0
			for k := 0; k < n; k++ {
				s += (proj[k][i] - mean[i]) * (proj[k][j] - mean[j])
			}
			cov.SetSym(a, b, s/float64(n-1))
		}
	}
	trace := 0.0
	for a, i := range active {
		st.Norm += mean[i] * mean[i]
		v := cov.At(a, a)
		trace += v
		se := math.Sqrt(v / float64(n))
		if z := math.Abs(mean[i]) / se; se > 0 && z > st.MaxZ {
			st.MaxZ, st.MaxZDir = z, cat.dirs[i].label
		}
		if p <= 12 {
			st.Components = append(st.Components, component{Dir: cat.dirs[i].label, Mean: mean[i], SE: se})
		}
	}
	st.Noise = math.Sqrt(trace / float64(n))
	st.Debiased = math.Sqrt(math.Max(0, st.Norm-st.Noise*st.Noise))
	st.Norm = math.Sqrt(st.Norm)
	if !withTest || n <= p+1 {
		return st
	}
	var eig mat.EigenSym
	if !eig.Factorize(cov, true) {
		return st
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	top := 0.0
	for _, v := range vals {
		top = math.Max(top, v)
	}
	for e, v := range vals {
		if v <= 1e-10*top {
			continue
		}
		st.Rank++
		s := 0.0
		for a, i := range active {
			s += vecs.At(a, e) * mean[i]
		}
		st.T2 += float64(n) * s * s / v
	}
	r := float64(st.Rank)
	st.F = (float64(n) - r) / (r * float64(n-1)) * st.T2
	st.P = distuv.F{D1: r, D2: float64(n) - r}.Survival(st.F)
	return st
}
