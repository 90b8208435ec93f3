package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// TestEncoderFeedPrepared checks FeedPrepared of a prepared set against
// Feed of the same contexts copied out (rows repeated, out of order, an
// unknown query label), in both dtypes: the same input values bit for bit
// (float32 rounded as Feed rounds); that the set is a copy (a later change
// to the slices does not reach it); and that every bad set, row or encoder
// is refused with the inputs unchanged.
func TestEncoderFeedPrepared(t *testing.T) {
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
			set, err := e.PrepareContexts(x, y)
			if err != nil {
				t.Fatal(err)
			}
			if set.Len() != n {
				t.Errorf("Len = %d, want %d", set.Len(), n)
			}
			xOrig, yOrig := append([]float64(nil), x...), append([]int(nil), y...)
			x[0], y[1] = math.NaN(), C+3 // after preparing: must not reach the set
			snapshot := func() string { return inputsOf(t, e) }
			for _, rows := range [][]int{{0, 1, 2}, {2, 0, 2}, {4, 4, 3}} {
				want := fedCopies(t, e, xOrig, yOrig, rows)
				if err := e.FeedPrepared(set, rows); err != nil {
					t.Fatalf("rows %v: %v", rows, err)
				}
				if got := snapshot(); got != want {
					t.Errorf("rows %v: FeedPrepared gave %s, Feed of the copies %s", rows, got, want)
				}
			}
			before := snapshot()
			other := newTestScope(t, dt)
			eC, err := NewEncoder(other.Sub("c"), EncoderConfig{D: D, DPrime: 3, C: C + 1, N: N}, B)
			if err != nil {
				t.Fatal(err)
			}
			setC, err := eC.PrepareContexts(xOrig, yOrig)
			if err != nil {
				t.Fatal(err)
			}
			odt := tensor.Float64
			if dt == tensor.Float64 {
				odt = tensor.Float32
			}
			eT, err := NewEncoder(newTestScope(t, odt), EncoderConfig{D: D, DPrime: 3, C: C, N: N}, B)
			if err != nil {
				t.Fatal(err)
			}
			setT, err := eT.PrepareContexts(xOrig, yOrig)
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				set  *Contexts
				rows []int
				want string
			}{
				{nil, []int{0, 1, 2}, "nil"},
				{set, []int{0, 1}, "2 rows"},
				{set, []int{0, 1, 5}, "rows[2] = 5"},
				{set, []int{0, -1, 1}, "rows[1] = -1"},
				{setC, []int{0, 1, 2}, "C = 5"},
				{setT, []int{0, 1, 2}, odt.String()},
			} {
				errContains(t, e.FeedPrepared(tc.set, tc.rows), tc.want)
				if got := snapshot(); got != before {
					t.Errorf("rows %v: a refused FeedPrepared changed the inputs", tc.rows)
				}
			}
		})
	}
}

// TestPrepareContextsRefuses: a set whose lengths do not fit, an empty set,
// a value that is not finite or a label out of range (−1 anywhere but at a
// query) is refused, naming the context and position.
func TestPrepareContextsRefuses(t *testing.T) {
	const N, D, C = 2, 2, 3
	T := N + 1
	e, err := NewEncoder(newTestScope(t, tensor.Float32), EncoderConfig{D: D, DPrime: 2, C: C, N: N}, 2)
	if err != nil {
		t.Fatal(err)
	}
	good := func() ([]float64, []int) { return make([]float64, 2*T*D), make([]int, 2*T) }
	for _, tc := range []struct {
		name string
		edit func(x []float64, y []int) ([]float64, []int)
		want string
	}{
		{"short x", func(x []float64, y []int) ([]float64, []int) { return x[1:], y }, "x has 11 values"},
		{"ragged y", func(x []float64, y []int) ([]float64, []int) { return x, y[1:] }, "y 5 labels"},
		{"empty", func([]float64, []int) ([]float64, []int) { return nil, nil }, "no contexts"},
		{"NaN", func(x []float64, y []int) ([]float64, []int) { x[T*D+3] = math.NaN(); return x, y }, "context 1, position 1) is NaN"},
		{"Inf", func(x []float64, y []int) ([]float64, []int) { x[1] = math.Inf(-1); return x, y }, "is -Inf"},
		{"label", func(x []float64, y []int) ([]float64, []int) { y[T+1] = C; return x, y }, "(context 1, position 1) = 3, want 0..2"},
		{"-1 in context", func(x []float64, y []int) ([]float64, []int) { y[0] = -1; return x, y }, "(context 0, position 0) = -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, y := tc.edit(good())
			set, err := e.PrepareContexts(x, y)
			if set != nil {
				t.Errorf("a refused set was returned")
			}
			errContains(t, err, tc.want)
		})
	}
	x, y := good()
	y[T-1] = -1 // an unknown query label is allowed
	if _, err := e.PrepareContexts(x, y); err != nil {
		t.Errorf("unknown query label: %v", err)
	}
}

// BenchmarkFeed times one shuffled minibatch of the synthetic workloads'
// size (B = 512 contexts of N = 10, d = 10, C = 25, from a set of 4096)
// fed three ways: Feed of the contexts copied out first ("copy"),
// FeedContexts ("contexts") and FeedPrepared of a prepared set
// ("prepared"), float32 and float64. Each op feeds the next of 8
// minibatches of one shuffle, as train.Runner.Fit does.
func BenchmarkFeed(b *testing.B) {
	const B, N, D, C, n = 512, 10, 10, 25, 4096
	T := N + 1
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, n*T*D)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	y := make([]int, n*T)
	for i := range y {
		y[i] = rng.IntN(C)
	}
	perm := rng.Perm(n)
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		e, err := NewEncoder(newTestScope(b, dt), EncoderConfig{D: D, DPrime: 5, C: C, N: N}, B)
		if err != nil {
			b.Fatal(err)
		}
		set, err := e.PrepareContexts(x, y)
		if err != nil {
			b.Fatal(err)
		}
		xc, yc := make([]float64, B*T*D), make([]int, B*T)
		for _, how := range []string{"copy", "contexts", "prepared"} {
			b.Run(fmt.Sprintf("%v/%s", dt, how), func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					rows := perm[(i%(n/B))*B:][:B]
					var err error
					switch how {
					case "copy":
						for k, c := range rows {
							copy(xc[k*T*D:(k+1)*T*D], x[c*T*D:(c+1)*T*D])
							copy(yc[k*T:(k+1)*T], y[c*T:(c+1)*T])
						}
						err = e.Feed(xc, yc)
					case "contexts":
						err = e.FeedContexts(x, y, rows)
					default:
						err = e.FeedPrepared(set, rows)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestPreparedNilEncoder: a nil encoder refuses instead of panicking.
func TestPreparedNilEncoder(t *testing.T) {
	var e *Encoder
	set, err := e.PrepareContexts(nil, nil)
	if set != nil {
		t.Errorf("a set from a nil encoder")
	}
	errContains(t, err, "encoder is nil")
	errContains(t, e.FeedPrepared(nil, nil), "encoder is nil")
	var s *Contexts
	if s.Len() != 0 {
		t.Errorf("nil set: Len = %d, want 0", s.Len())
	}
}
