package layers

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gdattn/gdattn/graph"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestTokenFormText(t *testing.T) {
	for _, tc := range []struct {
		f    TokenForm
		name string
		dim  int // TokenDim(2, 3)
	}{
		{FormInterleaved, "interleaved", 11},
		{FormOneStep, "one-step", 8},
	} {
		b, err := json.Marshal(tc.f)
		if err != nil || string(b) != `"`+tc.name+`"` {
			t.Errorf("json.Marshal(%v) = %s, %v, want %q", int(tc.f), b, err, tc.name)
		}
		var back TokenForm
		if err := json.Unmarshal(b, &back); err != nil || back != tc.f {
			t.Errorf("json.Unmarshal(%s) = %v, %v, want %v", b, back, err, tc.f)
		}
		if got := tc.f.TokenDim(2, 3); got != tc.dim {
			t.Errorf("%v.TokenDim(2, 3) = %d, want %d", tc.f, got, tc.dim)
		}
	}
	var f TokenForm
	errContains(t, json.Unmarshal([]byte(`"onestep"`), &f), `unknown token form "onestep"`, "one-step")
	if _, err := json.Marshal(TokenForm(7)); err == nil {
		t.Errorf("json.Marshal(TokenForm(7)): no error")
	}
}

func TestNewEncoderErrors(t *testing.T) {
	ok := EncoderConfig{D: 2, DPrime: 3, C: 4, N: 5}
	for _, tc := range []struct {
		name  string
		mod   func(*EncoderConfig)
		batch int
		want  string
	}{
		{"form", func(c *EncoderConfig) { c.Form = 3 }, 1, "Form"},
		{"D", func(c *EncoderConfig) { c.D = 0 }, 1, "D = 0"},
		{"DPrime", func(c *EncoderConfig) { c.DPrime = -1 }, 1, "DPrime = -1"},
		{"C", func(c *EncoderConfig) { c.C = 1 }, 1, "C = 1"},
		{"N", func(c *EncoderConfig) { c.N = 0 }, 1, "N = 0"},
		{"batch", func(c *EncoderConfig) {}, 0, "batch = 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.mod(&cfg)
			s := newTestScope(t, tensor.Float64)
			e, err := NewEncoder(s, cfg, tc.batch)
			if e != nil {
				t.Errorf("got an encoder with the error")
			}
			errContains(t, err, "layers: encoder: ", tc.want)
		})
	}
	if _, err := NewEncoder(nil, ok, 1); err == nil {
		t.Errorf("nil scope: no error")
	}
}

// TestEncoderShapes pins the token widths, the parameter and the inputs of
// both forms.
func TestEncoderShapes(t *testing.T) {
	for _, tc := range []struct {
		cfg    EncoderConfig
		tokens string
		we     string
	}{
		{EncoderConfig{Form: FormInterleaved, D: 2, DPrime: 3, C: 4, N: 5}, "(2, 6, 11)", "we (3, 4)"},
		{EncoderConfig{Form: FormOneStep, D: 2, DPrime: 3, C: 4, N: 5}, "(2, 6, 8)", "we (3, 4)"},
		{EncoderConfig{Form: FormOneStep, D: 2, DPrime: 3, C: 4, N: 5, ZeroColumn: true}, "(2, 6, 8)", "we (3, 3)"},
	} {
		s := newTestScope(t, tensor.Float64)
		e, err := NewEncoder(s, tc.cfg, 2)
		if err != nil {
			t.Fatal(err)
		}
		p := s.Params()[0]
		if got := fmt.Sprint(e.Tokens.Shape()); got != tc.tokens || e.TokenDim() != e.Tokens.Shape()[2] {
			t.Errorf("%v: tokens %s (TokenDim %d), want %s", tc.cfg.Form, got, e.TokenDim(), tc.tokens)
		}
		if got := fmt.Sprintf("%s %v", p.Name(), p.Shape()); got != tc.we {
			t.Errorf("%v: parameter %s, want %s", tc.cfg.Form, got, tc.we)
		}
	}
}

// TestEncoderFeedOneHot feeds two minibatches in a row, in both dtypes: the
// label ids (−1 at the query) and the target one-hot must be those of the
// second (Feed writes them in place, so the first's ones must be cleared),
// and a refused minibatch must leave the fed values unchanged.
func TestEncoderFeedOneHot(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		t.Run(dt.String(), func(t *testing.T) {
			const B, N, D, C = 2, 3, 2, 4
			T := N + 1
			s := newTestScope(t, dt)
			e, err := NewEncoder(s, EncoderConfig{D: D, DPrime: 3, C: C, N: N}, B)
			if err != nil {
				t.Fatal(err)
			}
			x := make([]float64, B*T*D)
			for i := range x {
				x[i] = float64(i) / 8 // exact in float32
			}
			want := func(y []int) (labels []int, target []float64) {
				labels, target = make([]int, B*T), make([]float64, B*C)
				for b := 0; b < B; b++ {
					for t := 0; t < T; t++ {
						switch c := y[b*T+t]; {
						case t == T-1:
							labels[b*T+t] = -1
							if c >= 0 {
								target[b*C+c] = 1
							}
						default:
							labels[b*T+t] = c
						}
					}
				}
				return labels, target
			}
			check := func(y []int) {
				t.Helper()
				wl, wt := want(y)
				if got := ids(t, e.Labels); fmt.Sprint(got) != fmt.Sprint(wl) {
					t.Errorf("labels: got %v, want %v", got, wl)
				}
				for _, c := range []struct {
					name string
					got  []float64
					want []float64
				}{{"target", values(t, e.Target), wt}, {"x", values(t, e.X), x}} {
					if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
						t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
					}
				}
			}
			y1 := []int{0, 1, 2, 3, 3, 2, 1, 0}
			y2 := []int{1, 1, 1, -1, 2, 0, 3, 2}
			for _, y := range [][]int{y1, y2} {
				if err := e.Feed(x, y); err != nil {
					t.Fatal(err)
				}
				check(y)
			}
			bad := []int{0, 0, 4, 0, 0, 0, 0, 0}
			errContains(t, e.Feed(x, bad), "y[2]")
			check(y2)
			for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				xb := append([]float64(nil), x...)
				xb[3] = v
				errContains(t, e.Feed(xb, y1), "x[3]", fmt.Sprint(v))
				check(y2)
			}
		})
	}
}

// TestEncoderFeedContexts checks FeedContexts against Feed of the same
// contexts copied out (rows repeated, out of order), in both dtypes: the
// same input values; and that a bad row, length, value or label in a
// chosen context is refused with the inputs unchanged, while a NaN or bad
// label in a context not chosen does not matter.
func TestEncoderFeedContexts(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		t.Run(dt.String(), func(t *testing.T) {
			const B, N, D, C, n = 3, 3, 2, 4, 5
			T := N + 1
			s := newTestScope(t, dt)
			e, err := NewEncoder(s, EncoderConfig{D: D, DPrime: 3, C: C, N: N}, B)
			if err != nil {
				t.Fatal(err)
			}
			x, y := feedTestSet(n, T, D, C)
			x[4*T*D+1] = math.NaN()
			y[3*T+1] = C // contexts 3 and 4 are bad, and never chosen below
			snapshot := func() string { return inputsOf(t, e) }
			for _, rows := range [][]int{{0, 1, 2}, {2, 0, 2}, {1, 1, 1}} {
				want := fedCopies(t, e, x, y, rows)
				if err := e.FeedContexts(x, y, rows); err != nil {
					t.Fatalf("rows %v: %v", rows, err)
				}
				if got := snapshot(); got != want {
					t.Errorf("rows %v: FeedContexts gave %s, Feed of the copies %s", rows, got, want)
				}
			}
			before := snapshot()
			for _, tc := range []struct {
				rows []int
				x    []float64
				y    []int
				want string
			}{
				{[]int{0, 1}, x, y, "2 rows"},
				{[]int{0, 1, 5}, x, y, "rows[2] = 5"},
				{[]int{0, -1, 1}, x, y, "rows[1] = -1"},
				{[]int{0, 1, 2}, x[:len(x)-1], y, "x has"},
				{[]int{0, 4, 1}, x, y, "context 4 (rows[1]), position 0: x has NaN"},
				{[]int{3, 0, 1}, x, y, "context 3 (rows[0]), position 1: y = 4"},
			} {
				errContains(t, e.FeedContexts(tc.x, tc.y, tc.rows), tc.want)
				if got := snapshot(); got != before {
					t.Errorf("rows %v: a refused FeedContexts changed the inputs", tc.rows)
				}
			}
		})
	}
}

// values reads a node's value as float64s.
// feedTestSet returns n contexts of T positions, d values and labels in
// 0..C-1 (context 2's query label −1, unknown) for the feed tests: values
// not exact in float32, so that the conversion must match.
func feedTestSet(n, T, d, C int) ([]float64, []int) {
	x := make([]float64, n*T*d)
	for i := range x {
		x[i] = math.Sin(float64(i)) * 3
	}
	y := make([]int, n*T)
	for i := range y {
		y[i] = (i * 7) % C
	}
	y[2*T+T-1] = -1
	return x, y
}

// inputsOf prints the encoder's inputs X, Labels and Target.
func inputsOf(t *testing.T, e *Encoder) string {
	t.Helper()
	return fmt.Sprint(values(t, e.X), ids(t, e.Labels), values(t, e.Target))
}

// fedCopies feeds e the contexts rows of the set x, y copied out one after
// another and returns the inputs that gives (inputsOf); then it feeds
// zeros, so that the feed under test must write every input.
func fedCopies(t *testing.T, e *Encoder, x []float64, y []int, rows []int) string {
	t.Helper()
	T, d := e.N+1, e.D
	xc, yc := make([]float64, 0, len(rows)*T*d), make([]int, 0, len(rows)*T)
	for _, c := range rows {
		xc = append(xc, x[c*T*d:(c+1)*T*d]...)
		yc = append(yc, y[c*T:(c+1)*T]...)
	}
	if err := e.Feed(xc, yc); err != nil {
		t.Fatal(err)
	}
	want := inputsOf(t, e)
	if err := e.Feed(make([]float64, len(xc)), make([]int, len(yc))); err != nil {
		t.Fatal(err)
	}
	return want
}

// ids is the int node n's values (the encoder's labels).
func ids(t *testing.T, n *G.Node) []int {
	t.Helper()
	v, ok := n.Value().Data().([]int)
	if !ok {
		t.Fatalf("node %q holds %T, want []int", n.Name(), n.Value().Data())
	}
	return append([]int(nil), v...)
}

func values(t *testing.T, n *G.Node) []float64 {
	t.Helper()
	v, err := graph.Values(n)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestFiniteContexts checks the side-by-side finite check against a plain
// loop: every position of every context of minibatches of 1..19 contexts
// (the 8-wide groups and the rest), NaN and ±Inf.
func TestFiniteContexts(t *testing.T) {
	const n, size = 23, 7
	x := make([]float64, n*size)
	for i := range x {
		x[i] = float64(i) - 50
	}
	for B := 1; B <= 19; B++ {
		rows := make([]int, B)
		for k := range rows {
			rows[k] = (k*5 + 3) % n
		}
		row := func(k int) int { return rows[k] }
		if !finiteContexts(x, size, B, row) {
			t.Fatalf("B %d: finite values refused", B)
		}
		for k := 0; k < B; k++ {
			for i := 0; i < size; i++ {
				for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
					j := rows[k]*size + i
					old := x[j]
					x[j] = v
					if finiteContexts(x, size, B, row) {
						t.Fatalf("B %d: %v in context %d (row %d), position %d not found", B, v, k, rows[k], i)
					}
					x[j] = old
				}
			}
		}
	}
}

// sinkBool keeps benchmark results alive.
var sinkBool bool

// BenchmarkFiniteContexts times the finiteness check of a shuffled
// minibatch of 512 contexts (11 positions × 40 values, as a synthetic task's
// tokens) drawn from a set of 1024 (3.6 MB, mostly out of cache), where its
// eight side-by-side streams overlap their cache misses:
//
//	go test ./layers -run '^$' -bench FiniteContexts
func BenchmarkFiniteContexts(b *testing.B) {
	const L, B, size = 1024, 512, 11 * 40
	x := make([]float64, L*size)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	perm := rng.Perm(L)[:B]
	row := func(k int) int { return perm[k] }
	b.ResetTimer()
	for range b.N {
		sinkBool = finiteContexts(x, size, B, row)
	}
}
