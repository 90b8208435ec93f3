package layers

import (
	"fmt"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/bounds"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TokenForm selects the token layout of the GD constructions (package gd)
// and of the unconstrained models on the same tokens (package tf).
type TokenForm int

const (
	// FormInterleaved is the layout of the K-block model of Section 3 /
	// Appendix D: e = (x, w_{e,y}, E(w_e|f), f), D = d + 3d'.
	FormInterleaved TokenForm = iota
	// FormOneStep is the layout of the single-step model of Appendix C:
	// e = (x, w_{e,y} − w̄_e, f), D = d + 2d'.
	FormOneStep
)

// String is the form's name in configs: "interleaved" or "one-step".
func (f TokenForm) String() string {
	switch f {
	case FormInterleaved:
		return "interleaved"
	case FormOneStep:
		return "one-step"
	}
	return fmt.Sprintf("TokenForm(%d)", int(f))
}

// ParseTokenForm reads a form's name: "interleaved" or "one-step".
func ParseTokenForm(s string) (TokenForm, error) {
	for _, f := range []TokenForm{FormInterleaved, FormOneStep} {
		if s == f.String() {
			return f, nil
		}
	}
	return 0, fmt.Errorf("layers: unknown token form %q (want \"interleaved\" or \"one-step\")", s)
}

// MarshalText writes the form's name; an unknown form is an error.
func (f TokenForm) MarshalText() ([]byte, error) {
	if _, err := ParseTokenForm(f.String()); err != nil {
		return nil, err
	}
	return []byte(f.String()), nil
}

// UnmarshalText reads a name written by MarshalText.
func (f *TokenForm) UnmarshalText(b []byte) error {
	v, err := ParseTokenForm(string(b))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// TokenDim is the token width D of the form: d + 3d' (interleaved) or
// d + 2d' (one-step).
func (f TokenForm) TokenDim(d, dPrime int) int {
	if f == FormOneStep {
		return d + 2*dPrime
	}
	return d + 3*dPrime
}

// EncoderConfig configures the token [Encoder].
type EncoderConfig struct {
	Form      TokenForm
	D, DPrime int // covariate dimension d and embedding dimension d' (required)
	C         int // number of categories, at least 2 (required)
	N         int // context size: sequences have T = N+1 positions (required)
	// ZeroColumn fixes the first column of W_e at zero ("we" then holds
	// the C−1 free columns).
	ZeroColumn bool
	// WeInit initialises W_e; nil means N(0, 1).
	WeInit graph.Initializer
}

// Encoder builds the input tokens of the GD constructions from a minibatch
// of contexts, and owns the embedding matrix W_e ("we") they share with the
// softmax head:
//
//	FormInterleaved: e_{i,0} = (x_i, w_{e,y_i}, w̄_e, 0)    D = d + 3d'
//	FormOneStep:     e_{i,0} = (x_i, w_{e,y_i} − w̄_e, 0)   D = d + 2d'
//
// with w_{e,y} = 0 at the query (its label is never shown) and
// w̄_e = E(w_e | f = 0) the mean column of W_e; the one-step query token is
// (x, 0, 0) as in Appendix C. The GD models (package gd) and the
// unconstrained models (package tf) use the same encoder, so that GD and
// Trained TF see the same tokens.
type Encoder struct {
	Form            TokenForm
	D, DPrime, C, N int
	Batch           int
	// X (B, T, d), Labels (B·T, an int node) the context labels as class
	// ids, −1 at the query (no label: its w_{e,y} row is zero), and Target
	// (B, C) one-hot of the query label are inputs.
	X, Labels, Target *G.Node
	// We is W_e (d', C), with its first column fixed at zero if
	// ZeroColumn.
	We *G.Node
	// WY (B·T, d') is w_{e,y_i} at every position, 0 at the query.
	WY *G.Node
	// Tokens is the initial token tensor (B, T, D).
	Tokens *G.Node
}

// NewEncoder creates the inputs "x", "labels" and "target", the parameter
// "we" and the token tensor in s, for minibatches of batch contexts.
func NewEncoder(s *graph.Scope, cfg EncoderConfig, batch int) (e *Encoder, err error) {
	fail := func(format string, a ...any) (*Encoder, error) {
		return nil, fmt.Errorf("layers: encoder: %s", fmt.Sprintf(format, a...))
	}
	switch {
	case s == nil:
		return fail("scope is nil")
	case cfg.Form != FormInterleaved && cfg.Form != FormOneStep:
		return fail("unknown Form %d", int(cfg.Form))
	case cfg.D <= 0:
		return fail("D = %d, want > 0", cfg.D)
	case cfg.DPrime <= 0:
		return fail("DPrime = %d, want > 0", cfg.DPrime)
	case cfg.C < 2:
		return fail("C = %d, want at least 2 categories", cfg.C)
	case cfg.N <= 0:
		return fail("N = %d, want at least one context example", cfg.N)
	case batch <= 0:
		return fail("batch = %d, want > 0", batch)
	}
	if err := bounds.Elements(
		bounds.Term{What: "batch·C (target)", Dims: []int{batch, cfg.C}},
		bounds.Term{What: "batch·(N+1)·(D+3·DPrime) (tokens)", Dims: []int{batch, cfg.N + 1, cfg.D + 3*cfg.DPrime}},
		bounds.Term{What: "DPrime·C (we)", Dims: []int{cfg.DPrime, cfg.C}},
	); err != nil {
		return fail("%v", err)
	}
	if cfg.WeInit == nil {
		cfg.WeInit = graph.Normal(1)
	}
	defer graph.Recover(&err)
	B, T, d, dp, C := batch, cfg.N+1, cfg.D, cfg.DPrime, cfg.C
	e = &Encoder{Form: cfg.Form, D: d, DPrime: dp, C: C, N: cfg.N, Batch: batch}
	if e.X, err = s.Input("x", tensor.Shape{B, T, d}); err != nil {
		return nil, err
	}
	if e.Labels, err = NewIDs(s, "labels", B*T); err != nil {
		return nil, err
	}
	if e.Target, err = s.Input("target", tensor.Shape{B, C}); err != nil {
		return nil, err
	}
	ops.MarkData(e.X, e.Labels, e.Target)
	// W_e, optionally with a zero first column.
	if cfg.ZeroColumn {
		free, err := s.Param("we", tensor.Shape{dp, C - 1}, cfg.WeInit)
		if err != nil {
			return nil, err
		}
		zc, err := s.Const("we_zero_column", tensor.Shape{dp, 1}, make([]float64, dp))
		if err != nil {
			return nil, err
		}
		ops.MarkData(zc)
		e.We = G.Must(G.Concat(1, zc, free))
	} else if e.We, err = s.Param("we", tensor.Shape{dp, C}, cfg.WeInit); err != nil {
		return nil, err
	}
	// Initial tokens.
	wy := G.Must(ops.GatherCols(e.We, e.Labels)) // (B*T, d'): w_{e,y_i}, 0 at the query
	e.WY = wy
	meanCol, err := s.Const("mean_weights", tensor.Shape{C, 1}, filled(C, 1/float64(C)))
	if err != nil {
		return nil, err
	}
	ops.MarkData(meanCol)
	wbar := G.Must(ops.MatMul(e.We, meanCol, false, false)) // (d', 1): w̄_e = E(w_e | f = 0)
	rows := filled(B*T, 1)
	if cfg.Form == FormOneStep {
		for b := 0; b < B; b++ {
			rows[b*T+T-1] = 0 // the query token is (x, 0, 0)
		}
	}
	rowCol, err := s.Const("token_rows", tensor.Shape{B * T, 1}, rows)
	if err != nil {
		return nil, err
	}
	ops.MarkData(rowCol)
	wbarRows := G.Must(ops.MatMul(rowCol, wbar, false, true)) // (B*T, d')
	f0, err := s.Const("f0", tensor.Shape{B * T, dp}, make([]float64, B*T*dp))
	if err != nil {
		return nil, err
	}
	ops.MarkData(f0)
	var z0 *G.Node
	if cfg.Form == FormOneStep {
		z0 = G.Must(ops.ConcatLast(e.X, G.Must(G.Sub(wy, wbarRows)), f0)) // (B, T, d+2d')
	} else {
		z0 = G.Must(ops.ConcatLast(e.X, wy, wbarRows, f0)) // (B, T, d+3d')
	}
	e.Tokens = z0 // (B, T, D)
	return e, nil
}

// TokenDim is the width D of a token.
func (e *Encoder) TokenDim() int { return e.Form.TokenDim(e.D, e.DPrime) }

// Feed copies one minibatch into the model's inputs: x is (B, T, d) and y is
// (B, T) with context labels in 0..C-1; the query label y[b*T+N] is the
// training target and may be -1 when unknown (that context then adds 0 to
// the loss). The model never sees the query label in its tokens.
//
// Feed returns an error naming the argument on a length mismatch, a NaN or
// ±Inf in x, or a label out of range; the inputs are left unchanged then.
func (e *Encoder) Feed(x []float64, y []int) error {
	B, T, d := e.Batch, e.N+1, e.D
	if len(x) != B*T*d {
		return fmt.Errorf("layers: encoder: Feed: x has %d values, want B*T*d = %d*%d*%d = %d", len(x), B, T, d, B*T*d)
	}
	if len(y) != B*T {
		return fmt.Errorf("layers: encoder: Feed: y has %d labels, want B*T = %d*%d = %d", len(y), B, T, B*T)
	}
	return e.feed("Feed", x, y, nil)
}

// FeedContexts loads the minibatch of the contexts rows[k], k < B, of a set
// of n contexts, x (n, T, d) and y (n, T) row-major as in Feed: the same as
// Feed of those contexts copied out one after another (the same values in
// the inputs, the same checks), without the copy. A loop that feeds many
// minibatches of one set (train.Runner.Fit) does better with a set
// prepared once ([Encoder.PrepareContexts], [Encoder.FeedPrepared]), which
// is neither checked nor converted again at every feed.
//
// FeedContexts returns an error on a length mismatch, a row outside
// 0..n-1, a NaN or ±Inf in a chosen context, or a label of a chosen
// context out of range; the inputs are left unchanged then.
func (e *Encoder) FeedContexts(x []float64, y []int, rows []int) error {
	B, T, d := e.Batch, e.N+1, e.D
	if len(rows) != B {
		return fmt.Errorf("layers: encoder: FeedContexts: %d rows, want B = %d", len(rows), B)
	}
	if len(y)%T != 0 || len(x) != len(y)/T*T*d {
		return fmt.Errorf("layers: encoder: FeedContexts: x has %d values and y %d labels, want n*T*d and n*T for T = %d, d = %d", len(x), len(y), T, d)
	}
	for k, c := range rows {
		if c < 0 || c >= len(y)/T {
			return fmt.Errorf("layers: encoder: FeedContexts: rows[%d] = %d, want 0..%d", k, c, len(y)/T-1)
		}
	}
	return e.feed("FeedContexts", x, y, rows)
}

// feed checks and loads the minibatch of contexts rows[k] of x and y (the
// first B contexts when rows is nil), whose lengths the caller checked.
// Every check runs before anything is written.
func (e *Encoder) feed(what string, x []float64, y []int, rows []int) error {
	B, T, d, C := e.Batch, e.N+1, e.D, e.C
	row := func(k int) int {
		if rows == nil {
			return k
		}
		return rows[k]
	}
	if err := e.checkContexts(what, x, y, B, rows); err != nil {
		return err
	}
	// The inputs are valid: write them straight into the node values.
	xv, labels, target, err := e.inputs()
	if err != nil {
		return err
	}
	for k := 0; k < B; k++ {
		c := row(k)
		src := x[c*T*d : (c+1)*T*d]
		if xv.f32 != nil {
			if err := graph.ToFloat32(xv.f32[k*T*d:(k+1)*T*d], src); err != nil {
				return err // not reached: oneHotData checked the sizes
			}
		} else {
			copy(xv.f64[k*T*d:(k+1)*T*d], src)
		}
	}
	target.clear()
	for k := 0; k < B; k++ {
		src := y[row(k)*T : (row(k)+1)*T]
		copy(labels[k*T:(k+1)*T-1], src[:T-1])
		labels[(k+1)*T-1] = -1     // the query's token carries no label
		if l := src[T-1]; l >= 0 { // else an unknown query label
			target.set(k*C + l)
		}
	}
	return nil
}

// checkContexts checks the contexts rows[k], k < n, of x and y (the first
// n when rows is nil) in Feed's order: every value finite, then every
// label in 0..C-1 (−1 allowed at the query). Its errors name the value or
// label: by its index in x or y and its context and position when rows is
// nil, by its context, row and position otherwise.
func (e *Encoder) checkContexts(what string, x []float64, y []int, n int, rows []int) error {
	T, d, C := e.N+1, e.D, e.C
	row := func(k int) int {
		if rows == nil {
			return k
		}
		return rows[k]
	}
	if !finiteContexts(x, T*d, n, row) {
		for k := 0; k < n; k++ { // the first value that is not finite
			c := row(k)
			for i, v := range x[c*T*d : (c+1)*T*d] {
				if v-v == 0 {
					continue
				}
				if rows == nil {
					i += k * T * d
					return fmt.Errorf("layers: encoder: %s: x[%d] (context %d, position %d) is %v", what, i, i/(T*d), (i/d)%T, v)
				}
				return fmt.Errorf("layers: encoder: %s: context %d (rows[%d]), position %d: x has %v", what, c, k, i/d, v)
			}
		}
	}
	for k := 0; k < n; k++ {
		c := row(k)
		for t, l := range y[c*T : (c+1)*T] {
			query := t == T-1
			if (l < 0 || l >= C) && !(query && l == -1) {
				at := fmt.Sprintf("y[%d] (context %d, position %d)", k*T+t, k, t)
				if rows != nil {
					at = fmt.Sprintf("context %d (rows[%d]), position %d: y", c, k, t)
				}
				return fmt.Errorf("layers: encoder: %s: %s = %d, want 0..%d%s",
					what, at, l, C-1, map[bool]string{true: " or -1 at the query"}[query])
			}
		}
	}
	return nil
}

// finiteContexts reports whether the values of the contexts row(k), k < B,
// of x (size values each) are all finite, with one subtraction per value
// (v−v is 0 for a finite v, NaN otherwise). It reads eight contexts side by
// side: in a shuffled minibatch each context is a separate stretch of a
// large set, mostly not in cache, and eight streams overlap their misses
// where one context at a time waits on each.
func finiteContexts(x []float64, size, B int, row func(int) int) bool {
	k := 0
	for ; k+8 <= B; k += 8 {
		x0 := x[row(k)*size : (row(k)+1)*size]
		x1 := x[row(k+1)*size:][:len(x0)]
		x2 := x[row(k+2)*size:][:len(x0)]
		x3 := x[row(k+3)*size:][:len(x0)]
		x4 := x[row(k+4)*size:][:len(x0)]
		x5 := x[row(k+5)*size:][:len(x0)]
		x6 := x[row(k+6)*size:][:len(x0)]
		x7 := x[row(k+7)*size:][:len(x0)]
		for i, v := range x0 {
			if v-v != 0 || x1[i]-x1[i] != 0 || x2[i]-x2[i] != 0 || x3[i]-x3[i] != 0 ||
				x4[i]-x4[i] != 0 || x5[i]-x5[i] != 0 || x6[i]-x6[i] != 0 || x7[i]-x7[i] != 0 {
				return false
			}
		}
	}
	for ; k < B; k++ {
		for _, v := range x[row(k)*size : (row(k)+1)*size] {
			if v-v != 0 {
				return false
			}
		}
	}
	return true
}

// oneHot is the backing array of a float32 or float64 node value that Feed
// writes into (the input X, and the one-hot rows of Target).
type oneHot struct {
	f32 []float32
	f64 []float64
}

func (o oneHot) clear() { clear(o.f32); clear(o.f64) }

func (o oneHot) set(i int) {
	if o.f32 != nil {
		o.f32[i] = 1
	} else {
		o.f64[i] = 1
	}
}

// oneHotData returns n's value's backing array, which must hold size
// elements (the inputs X and Target).
func oneHotData(n *G.Node, size int) (oneHot, error) {
	v := n.Value()
	if v == nil {
		return oneHot{}, fmt.Errorf("layers: encoder: Feed: node %q has no value to overwrite", n.Name())
	}
	var o oneHot
	switch d := v.Data().(type) {
	case []float32:
		o.f32 = d
	case []float64:
		o.f64 = d
	default:
		return oneHot{}, fmt.Errorf("layers: encoder: Feed: node %q holds %T, want []float32 or []float64", n.Name(), d)
	}
	if len(o.f32)+len(o.f64) != size {
		return oneHot{}, fmt.Errorf("layers: encoder: Feed: node %q has %d elements, want %d", n.Name(), len(o.f32)+len(o.f64), size)
	}
	return o, nil
}

// inputs returns the backing arrays of the encoder's inputs X, Labels and
// Target, checking their sizes.
func (e *Encoder) inputs() (x oneHot, labels []int, target oneHot, err error) {
	B, T := e.Batch, e.N+1
	if x, err = oneHotData(e.X, B*T*e.D); err != nil {
		return oneHot{}, nil, oneHot{}, err
	}
	if labels, err = idData(e.Labels, B*T); err != nil {
		return oneHot{}, nil, oneHot{}, err
	}
	if target, err = oneHotData(e.Target, B*e.C); err != nil {
		return oneHot{}, nil, oneHot{}, err
	}
	return x, labels, target, nil
}

// idData returns the backing array of the int node n, which must hold
// size ids (the labels).
func idData(n *G.Node, size int) ([]int, error) {
	v := n.Value()
	if v == nil {
		return nil, fmt.Errorf("layers: encoder: Feed: node %q has no value to overwrite", n.Name())
	}
	ids, ok := v.Data().([]int)
	if !ok {
		return nil, fmt.Errorf("layers: encoder: Feed: node %q holds %T, want []int", n.Name(), v.Data())
	}
	if len(ids) != size {
		return nil, fmt.Errorf("layers: encoder: Feed: node %q has %d ids, want %d", n.Name(), len(ids), size)
	}
	return ids, nil
}

// filled returns n copies of v.
func filled(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
