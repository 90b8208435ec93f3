package data

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestNewSyntheticDefaults(t *testing.T) {
	tests := []struct {
		name string
		cfg  SyntheticConfig
		want SyntheticConfig
	}{
		{"zero value", SyntheticConfig{}, DefaultSyntheticConfig()},
		{"default", DefaultSyntheticConfig(), SyntheticConfig{C: 25, DPrime: 5, D: 10, N: 10, Active: 5, Scale: 10}},
		{"partial", SyntheticConfig{N: 3, Scale: 2}, SyntheticConfig{C: 25, DPrime: 5, D: 10, N: 3, Active: 5, Scale: 2}},
		{"small", SyntheticConfig{C: 2, DPrime: 1, D: 1, N: 1, Active: 2, Scale: 0.5}, SyntheticConfig{C: 2, DPrime: 1, D: 1, N: 1, Active: 2, Scale: 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSynthetic(tt.cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, s.Config); diff != "" {
				t.Errorf("Config mismatch (-want +got):\n%s", diff)
			}
			if got, want := len(s.We), tt.want.DPrime*tt.want.C; got != want {
				t.Errorf("len(We): got %d, want %d", got, want)
			}
		})
	}
}

func TestNewSyntheticErrors(t *testing.T) {
	tests := []struct {
		name    string
		cfg     SyntheticConfig
		wantErr string
	}{
		{"negative C", SyntheticConfig{C: -1}, "SyntheticConfig.C = -1"},
		{"negative DPrime", SyntheticConfig{DPrime: -2}, "SyntheticConfig.DPrime = -2"},
		{"negative D", SyntheticConfig{D: -3}, "SyntheticConfig.D = -3"},
		{"negative N", SyntheticConfig{N: -4}, "SyntheticConfig.N = -4"},
		{"negative Active", SyntheticConfig{Active: -5}, "SyntheticConfig.Active = -5"},
		{"Active above C", SyntheticConfig{C: 4}, "SyntheticConfig.Active = 5, want 2..C = 2..4"},
		{"Active one", SyntheticConfig{Active: 1}, "SyntheticConfig.Active = 1"},
		{"negative Scale", SyntheticConfig{Scale: -1}, "SyntheticConfig.Scale = -1"},
		{"NaN Scale", SyntheticConfig{Scale: math.NaN()}, "SyntheticConfig.Scale = NaN"},
		{"Inf Scale", SyntheticConfig{Scale: math.Inf(1)}, "SyntheticConfig.Scale = +Inf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSynthetic(tt.cfg, 1)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %v, want one containing %q", err, tt.wantErr)
			}
			if s != nil {
				t.Errorf("got a task with an error, want nil")
			}
		})
	}
}

// TestSyntheticDeterminism checks that W_e depends only on the task seed and
// a batch only on the sampler's generator state.
func TestSyntheticDeterminism(t *testing.T) {
	sample := func(taskSeed, rngSeed uint64) *Batch {
		t.Helper()
		s, err := NewSynthetic(SyntheticConfig{}, taskSeed)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.Sample(8, rand.New(rand.NewPCG(rngSeed, rngSeed)))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ref := sample(1, 2)
	tests := []struct {
		name      string
		taskSeed  uint64
		rngSeed   uint64
		wantEqual bool
	}{
		{"same seeds", 1, 2, true},
		{"other task seed", 3, 2, false},
		{"other sample seed", 1, 4, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sample(tt.taskSeed, tt.rngSeed)
			if equal := cmp.Equal(ref, got); equal != tt.wantEqual {
				t.Errorf("batches equal: got %v, want %v", equal, tt.wantEqual)
			}
			// X does not depend on W_e, only on the sampler.
			if equal := cmp.Equal(ref.X, got.X); equal != (tt.rngSeed == 2) {
				t.Errorf("X equal: got %v, want %v", equal, tt.rngSeed == 2)
			}
		})
	}
}

func TestSampleShapesAndRanges(t *testing.T) {
	tests := []struct {
		name string
		cfg  SyntheticConfig
		B    int
	}{
		{"default", SyntheticConfig{}, 16},
		{"small", SyntheticConfig{C: 3, DPrime: 2, D: 1, N: 1, Active: 2, Scale: 1}, 5},
		{"all categories active", SyntheticConfig{C: 6, Active: 6, N: 20}, 3},
		{"large scale", SyntheticConfig{Scale: 1000}, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSynthetic(tt.cfg, 5)
			if err != nil {
				t.Fatal(err)
			}
			b, err := s.Sample(tt.B, rand.New(rand.NewPCG(6, 6)))
			if err != nil {
				t.Fatal(err)
			}
			cfg := s.Config
			T := cfg.N + 1
			gotShape := []int{b.B, b.T, b.D, b.C, len(b.X), len(b.Y), len(b.P)}
			wantShape := []int{tt.B, T, cfg.D, cfg.C, tt.B * T * cfg.D, tt.B * T, tt.B * T * cfg.C}
			if !cmp.Equal(gotShape, wantShape) {
				t.Errorf("B, T, D, C, len(X), len(Y), len(P): got %v, want %v", gotShape, wantShape)
			}
			if err := b.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			for i, x := range b.X {
				if x < -1 || x >= 1 {
					t.Fatalf("X[%d] = %v, want in [-1, 1)", i, x)
				}
			}
			for i, y := range b.Y {
				if y < 0 || y >= cfg.C {
					t.Fatalf("Y[%d] = %d, want in 0..%d (query labels are drawn too)", i, y, cfg.C-1)
				}
				if p := b.P[i*cfg.C+y]; p <= 0 {
					t.Errorf("Y[%d] = %d has probability %v, want > 0", i, y, p)
				}
			}
			sums := make([]float64, tt.B*T)
			ones := make([]float64, tt.B*T)
			for i := range sums {
				ones[i] = 1
				for _, p := range b.P[i*cfg.C : (i+1)*cfg.C] {
					sums[i] += p
				}
			}
			if !cmp.Equal(sums, ones, cmpopts.EquateApprox(0, 1e-12)) {
				t.Errorf("probability sums: got %v, want all 1", sums)
			}
		})
	}
}

func TestSampleErrors(t *testing.T) {
	good, err := NewSynthetic(SyntheticConfig{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	nanWe := append([]float64(nil), good.We...)
	nanWe[7] = math.NaN()
	tests := []struct {
		name    string
		s       *Synthetic
		B       int
		rng     *rand.Rand
		wantErr string
	}{
		{"B zero", good, 0, rng, "B = 0"},
		{"B negative", good, -3, rng, "B = -3"},
		{"nil rng", good, 2, nil, "rng is nil"},
		{"We short", &Synthetic{Config: good.Config, We: good.We[:10]}, 2, rng, "len(We) = 10"},
		{"We NaN", &Synthetic{Config: good.Config, We: nanWe}, 2, rng, "We[7] = NaN"},
		{"nil task", nil, 2, rng, "task is nil"},
		{"bad Config", &Synthetic{Config: SyntheticConfig{Active: 30}, We: good.We}, 2, rng, "SyntheticConfig.Active = 30"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.s.Sample(tt.B, tt.rng)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %v, want one containing %q", err, tt.wantErr)
			}
			if b != nil {
				t.Errorf("got a batch with an error, want nil")
			}
		})
	}
	// Zero Config fields mean the defaults in Sample too.
	if _, err := (&Synthetic{We: good.We}).Sample(2, rng); err != nil {
		t.Errorf("zero Config: got error %v, want nil", err)
	}
}

// TestBumpWidths checks that each bump equals BumpLevel at its nearest other
// anchor and is at most BumpLevel at every other anchor.
func TestBumpWidths(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	tests := []struct {
		name    string
		M, D    int
		anchors []float64 // nil: drawn from N(0, I)
	}{
		// Anchors 0, 1, 3 on a line: nearest squared distances 1, 1, 4, so
		// s = ln 10 · (1, 1, 1/4).
		{"line", 3, 1, []float64{0, 1, 3}},
		{"two", 2, 10, nil},
		{"paper", 5, 10, nil},
		{"many", 12, 3, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.anchors
			if a == nil {
				a = make([]float64, tt.M*tt.D)
				for i := range a {
					a[i] = rng.NormFloat64()
				}
			}
			w := make([]float64, tt.M)
			if !bumpWidths(a, tt.M, tt.D, w) {
				t.Fatal("bumpWidths reported coincident anchors")
			}
			if tt.name == "line" {
				want := []float64{math.Ln10, math.Ln10, math.Ln10 / 4}
				if !cmp.Equal(w, want, cmpopts.EquateApprox(1e-15, 0)) {
					t.Errorf("widths: got %v, want %v", w, want)
				}
			}
			for m := 0; m < tt.M; m++ {
				atNearest := 0.0
				for o := 0; o < tt.M; o++ {
					if o == m {
						continue
					}
					v := math.Exp(-w[m] * sqDist(a[m*tt.D:(m+1)*tt.D], a[o*tt.D:(o+1)*tt.D]))
					if v > BumpLevel*(1+1e-12) {
						t.Errorf("bump %d at anchor %d: got %v, want <= %v", m, o, v, BumpLevel)
					}
					atNearest = math.Max(atNearest, v)
				}
				if !cmp.Equal(atNearest, BumpLevel, cmpopts.EquateApprox(1e-12, 0)) {
					t.Errorf("bump %d at its nearest other anchor: got %v, want %v", m, atNearest, BumpLevel)
				}
			}
		})
	}
	if bumpWidths([]float64{1, 2, 1, 2, 0, 0}, 3, 2, make([]float64, 3)) {
		t.Error("coincident anchors: got true, want false")
	}
}

func TestSampleCategorical(t *testing.T) {
	p := []float64{0.2, 0, 0.5, 0.3, 0}
	tests := []struct {
		u    float64
		want int
	}{
		{0, 0},
		{0.19, 0},
		{0.2, 2}, // category 1 has probability 0 and is never drawn
		{0.69, 2},
		{0.7, 3},
		{0.999999, 3},
		{1, 3}, // beyond the total: the last category with positive probability
	}
	for _, tt := range tests {
		if got := sampleCategorical(p, tt.u); got != tt.want {
			t.Errorf("sampleCategorical(%v, %v): got %d, want %d", p, tt.u, got, tt.want)
		}
	}
}

// TestOracle checks Oracle on a hand-made batch and its range (1/C, 1] on
// sampled ones.
func TestOracle(t *testing.T) {
	// Two contexts of T = 2, C = 3: the query rows are (0.5, 0.3, 0.2) and
	// (0.1, 0.1, 0.8), so the oracle is (0.5 + 0.8)/2 = 0.65. The context
	// rows (maxima 0.9 and 0.4) must be ignored.
	hand := &Batch{
		B: 2, T: 2, D: 1, C: 3,
		X: []float64{0, 0, 0, 0},
		Y: []int{0, -1, 2, -1},
		P: []float64{
			0.9, 0.05, 0.05, 0.5, 0.3, 0.2,
			0.3, 0.3, 0.4, 0.1, 0.1, 0.8,
		},
	}
	if err := hand.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := hand.Oracle(); !cmp.Equal(got, 0.65, cmpopts.EquateApprox(1e-15, 0)) {
		t.Errorf("hand batch: got %v, want 0.65", got)
	}
	if got := (&Batch{B: 1, T: 2, D: 1, C: 2, X: []float64{0, 0}, Y: []int{0, 1}}).Oracle(); !math.IsNaN(got) {
		t.Errorf("nil P: got %v, want NaN", got)
	}
	for _, scale := range []float64{0.1, 1, 10, 100} {
		s, err := NewSynthetic(SyntheticConfig{Scale: scale}, 2)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.Sample(64, rand.New(rand.NewPCG(3, 3)))
		if err != nil {
			t.Fatal(err)
		}
		if o := b.Oracle(); !(o > 1/float64(b.C) && o <= 1) {
			t.Errorf("Scale %v: Oracle() = %v, want in (1/C, 1] = (%v, 1]", scale, o, 1/float64(b.C))
		}
	}
}

// TestOracleMatchesEmpiricalTop1 checks, for the paper's configuration, that
// predicting the true argmax at the query is right about Oracle() of the
// time. The query labels are drawn from P, so the hit rate has mean Oracle()
// and standard deviation at most 0.5/sqrt(B); the test allows 4 of those.
func TestOracleMatchesEmpiricalTop1(t *testing.T) {
	const B = 4000
	s, err := NewSynthetic(DefaultSyntheticConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Sample(B, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	for i := 0; i < B; i++ {
		q := i*b.T + b.T - 1
		p := b.P[q*b.C : (q+1)*b.C]
		best := 0
		for c := range p {
			if p[c] > p[best] {
				best = c
			}
		}
		if b.Y[q] == best {
			hits++
		}
	}
	got, want := float64(hits)/B, b.Oracle()
	if tol := 4 * 0.5 / math.Sqrt(B); math.Abs(got-want) > tol {
		t.Errorf("empirical top-1: got %v, want %v ± %v", got, want, tol)
	}
	// With λ = 10 the true category is clearly favoured: the measured oracle
	// for this configuration is about 0.79 (0.789 over 20,000 contexts).
	if want < 0.7 || want > 0.88 {
		t.Errorf("Oracle() = %v, want about 0.79", want)
	}
}

func TestBatchValidateErrors(t *testing.T) {
	valid := func() *Batch {
		return &Batch{
			B: 2, T: 2, D: 1, C: 2,
			X: []float64{0.1, 0.2, 0.3, 0.4},
			Y: []int{0, 1, 1, -1},
			P: []float64{0.5, 0.5, 0.2, 0.8, 1, 0, 0.3, 0.7},
		}
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("valid batch: %v", err)
	}
	if err := (&Batch{B: 1, T: 2, D: 1, C: 2, X: []float64{0, 0}, Y: []int{0, 1}}).Validate(); err != nil {
		t.Errorf("nil P: got error %v, want nil", err)
	}
	tests := []struct {
		name    string
		edit    func(b *Batch)
		wantErr string
	}{
		{"B zero", func(b *Batch) { b.B = 0 }, "B = 0"},
		{"T one", func(b *Batch) { b.T = 1 }, "T = 1"},
		{"D zero", func(b *Batch) { b.D = 0 }, "D = 0"},
		{"C negative", func(b *Batch) { b.C = -1 }, "C = -1"},
		{"X short", func(b *Batch) { b.X = b.X[:3] }, "len(X) = 3"},
		{"Y long", func(b *Batch) { b.Y = append(b.Y, 0) }, "len(Y) = 5"},
		{"P short", func(b *Batch) { b.P = b.P[:7] }, "len(P) = 7"},
		{"X NaN", func(b *Batch) { b.X[2] = math.NaN() }, "X[2] = NaN"},
		{"X Inf", func(b *Batch) { b.X[0] = math.Inf(-1) }, "X[0] = -Inf"},
		{"context label -1", func(b *Batch) { b.Y[2] = -1 }, "Y[2] = -1"},
		{"context label C", func(b *Batch) { b.Y[0] = 2 }, "Y[0] = 2"},
		{"query label C", func(b *Batch) { b.Y[1] = 2 }, "Y[1] = 2"},
		{"query label -2", func(b *Batch) { b.Y[3] = -2 }, "Y[3] = -2"},
		{"P negative", func(b *Batch) { b.P[4], b.P[5] = 1.5, -0.5 }, "P[5] = -0.5"},
		{"P NaN", func(b *Batch) { b.P[1] = math.NaN() }, "P[1] = NaN"},
		{"P sum", func(b *Batch) { b.P[6] = 0.4 }, "context 1, position 1 sums to"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := valid()
			tt.edit(b)
			err := b.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	var nilBatch *Batch
	if err := nilBatch.Validate(); err == nil {
		t.Error("nil batch: got nil error")
	}
}

func TestBatchSlice(t *testing.T) {
	s, err := NewSynthetic(SyntheticConfig{C: 4, DPrime: 2, D: 3, N: 2, Active: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Sample(5, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	const T, D, C = 3, 3, 4
	tests := []struct {
		lo, hi int
	}{{0, 5}, {0, 1}, {2, 4}, {4, 5}}
	for _, tt := range tests {
		got, err := b.Slice(tt.lo, tt.hi)
		if err != nil {
			t.Fatalf("Slice(%d, %d): %v", tt.lo, tt.hi, err)
		}
		want := &Batch{
			B: tt.hi - tt.lo, T: T, D: D, C: C,
			X: b.X[tt.lo*T*D : tt.hi*T*D],
			Y: b.Y[tt.lo*T : tt.hi*T],
			P: b.P[tt.lo*T*C : tt.hi*T*C],
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Slice(%d, %d) mismatch (-want +got):\n%s", tt.lo, tt.hi, diff)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("Slice(%d, %d).Validate(): %v", tt.lo, tt.hi, err)
		}
	}

	// The slice is a view: writes are shared, appends are not.
	sub, err := b.Slice(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	sub.X[0] = 0.5
	if b.X[T*D] != 0.5 {
		t.Errorf("write through the slice: parent X[%d] = %v, want 0.5", T*D, b.X[T*D])
	}
	before := b.Y[2*T]
	sub.Y = append(sub.Y, 99)
	if b.Y[2*T] != before {
		t.Errorf("append to the slice overwrote parent Y[%d]", 2*T)
	}

	errTests := []struct {
		lo, hi int
	}{{-1, 2}, {0, 6}, {3, 3}, {4, 2}}
	for _, tt := range errTests {
		got, err := b.Slice(tt.lo, tt.hi)
		if err == nil || !strings.Contains(err.Error(), "want 0 <= lo < hi <= B = 5") || got != nil {
			t.Errorf("Slice(%d, %d): got %v, %v, want nil and a range error", tt.lo, tt.hi, got, err)
		}
	}
	broken := &Batch{B: 2, T: 2, D: 1, C: 2, X: []float64{0}, Y: []int{0, 0, 0, 0}}
	if _, err := broken.Slice(0, 1); err == nil || !strings.Contains(err.Error(), "len(X) = 1") {
		t.Errorf("inconsistent batch: got error %v, want one naming len(X)", err)
	}
}
