package data

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestNewQuadrantDefaults(t *testing.T) {
	tests := []struct {
		name string
		cfg  QuadrantConfig
		want QuadrantConfig
	}{
		{"zero value", QuadrantConfig{}, DefaultQuadrantConfig()},
		{"default", DefaultQuadrantConfig(), QuadrantConfig{C: 20, DPrime: 5, N: 100, Covariates: "uniform"}},
		{"partial", QuadrantConfig{N: 7, Rotate: true}, QuadrantConfig{C: 20, DPrime: 5, N: 7, Covariates: "uniform", Rotate: true}},
		{"gaussian", QuadrantConfig{C: 4, DPrime: 1, N: 1, Covariates: "gaussian"}, QuadrantConfig{C: 4, DPrime: 1, N: 1, Covariates: "gaussian"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := NewQuadrant(tt.cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, q.Config); diff != "" {
				t.Errorf("Config mismatch (-want +got):\n%s", diff)
			}
			if got, want := len(q.We), tt.want.DPrime*tt.want.C; got != want {
				t.Errorf("len(We): got %d, want %d", got, want)
			}
		})
	}
}

func TestNewQuadrantErrors(t *testing.T) {
	tests := []struct {
		name    string
		cfg     QuadrantConfig
		wantErr string
	}{
		{"negative C", QuadrantConfig{C: -1}, "QuadrantConfig.C = -1"},
		{"C below 4", QuadrantConfig{C: 3}, "QuadrantConfig.C = 3, want >= 4"},
		{"negative DPrime", QuadrantConfig{DPrime: -2}, "QuadrantConfig.DPrime = -2"},
		{"negative N", QuadrantConfig{N: -4}, "QuadrantConfig.N = -4"},
		{"unknown covariates", QuadrantConfig{Covariates: "cauchy"}, `QuadrantConfig.Covariates = "cauchy"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := NewQuadrant(tt.cfg, 1)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %v, want one containing %q", err, tt.wantErr)
			}
			if q != nil {
				t.Errorf("got a task with an error, want nil")
			}
		})
	}
}

// TestQuadrantDeterminism checks that W_e depends only on the task seed, a
// batch only on the sampler's generator state, and that Sample and
// SampleLatent draw the same batch.
func TestQuadrantDeterminism(t *testing.T) {
	sample := func(taskSeed, rngSeed uint64, cfg QuadrantConfig) (*Batch, *QuadrantLatent) {
		t.Helper()
		q, err := NewQuadrant(cfg, taskSeed)
		if err != nil {
			t.Fatal(err)
		}
		b, lat, err := q.SampleLatent(6, rand.New(rand.NewPCG(rngSeed, rngSeed)))
		if err != nil {
			t.Fatal(err)
		}
		b2, err := q.Sample(6, rand.New(rand.NewPCG(rngSeed, rngSeed)))
		if err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(b, b2) {
			t.Errorf("Sample and SampleLatent drew different batches from equal generators")
		}
		return b, lat
	}
	for _, cfg := range []QuadrantConfig{{N: 20}, {N: 20, Covariates: CovariatesGaussian, Rotate: true}} {
		ref, refLat := sample(1, 2, cfg)
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
			t.Run(cfg.Covariates+"/"+tt.name, func(t *testing.T) {
				got, lat := sample(tt.taskSeed, tt.rngSeed, cfg)
				if equal := cmp.Equal(ref, got); equal != tt.wantEqual {
					t.Errorf("batches equal: got %v, want %v", equal, tt.wantEqual)
				}
				// X and the latent structure do not depend on W_e.
				sameRng := tt.rngSeed == 2
				if equal := cmp.Equal(ref.X, got.X); equal != sameRng {
					t.Errorf("X equal: got %v, want %v", equal, sameRng)
				}
				if equal := cmp.Equal(refLat, lat); equal != sameRng {
					t.Errorf("latents equal: got %v, want %v", equal, sameRng)
				}
			})
		}
	}
}

// TestQuadrantSample checks shapes, ranges and the consistency of every
// label, probability row and covariate with the latent quadrant categories.
func TestQuadrantSample(t *testing.T) {
	tests := []struct {
		name string
		cfg  QuadrantConfig
		B    int
	}{
		{"paper", QuadrantConfig{}, 8},
		{"small", QuadrantConfig{C: 4, DPrime: 2, N: 1}, 5},
		{"gaussian", QuadrantConfig{N: 30, Covariates: CovariatesGaussian}, 7},
		{"gaussian rotated", QuadrantConfig{N: 30, Covariates: CovariatesGaussian, Rotate: true}, 7},
		{"uniform rotated", QuadrantConfig{N: 30, Rotate: true}, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := NewQuadrant(tt.cfg, 5)
			if err != nil {
				t.Fatal(err)
			}
			b, lat, err := q.SampleLatent(tt.B, rand.New(rand.NewPCG(6, 6)))
			if err != nil {
				t.Fatal(err)
			}
			cfg := q.Config
			T, C := cfg.N+1, cfg.C
			gotShape := []int{b.B, b.T, b.D, b.C, len(b.X), len(b.Y), len(b.P), len(lat.Cats), len(lat.Angles)}
			wantShape := []int{tt.B, T, 2, C, tt.B * T * 2, tt.B * T, tt.B * T * C, 4 * tt.B, tt.B}
			if !cmp.Equal(gotShape, wantShape) {
				t.Fatalf("B, T, D, C, len(X, Y, P, Cats, Angles): got %v, want %v", gotShape, wantShape)
			}
			if err := b.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			want := make([]float64, C)
			for bb := 0; bb < tt.B; bb++ {
				cats := lat.Cats[bb*4 : bb*4+4]
				seen := map[int]bool{}
				for _, c := range cats {
					if c < 0 || c >= C || seen[c] {
						t.Fatalf("context %d: categories %v, want 4 distinct values in 0..%d", bb, cats, C-1)
					}
					seen[c] = true
				}
				phi := lat.Angles[bb]
				if tt.cfg.Rotate != (phi != 0) || phi < 0 || phi >= 2*math.Pi {
					t.Errorf("context %d: angle %v with Rotate %v", bb, phi, tt.cfg.Rotate)
				}
				for tp := 0; tp < T; tp++ {
					i := bb*T + tp
					x1, x2 := b.X[2*i], b.X[2*i+1]
					if tt.cfg.Covariates != CovariatesGaussian && (x1 < -1 || x1 >= 1 || x2 < -1 || x2 >= 1) {
						t.Fatalf("x[%d] = (%v, %v), want in [-1, 1)²", i, x1, x2)
					}
					if err := q.Probs(cats, phi, x1, x2, want); err != nil {
						t.Fatal(err)
					}
					if !cmp.Equal(b.P[i*C:(i+1)*C], want, cmpopts.EquateApprox(0, 1e-15)) {
						t.Fatalf("P at context %d, position %d: got %v, want %v", bb, tp, b.P[i*C:(i+1)*C], want)
					}
					if y := b.Y[i]; y < 0 || y >= C || want[y] <= 0 {
						t.Fatalf("Y[%d] = %d has probability %v, want > 0", i, y, want[y])
					}
				}
			}
		})
	}
}

// TestQuadrantCovariateMoments checks the covariate laws: U(−1, 1) has mean 0
// and variance 1/3, N(0, 1) mean 0 and variance 1, each coordinate
// independent. 40,000 draws give standard errors of about 0.005 on the means
// and the covariance, and 0.003 (uniform) or 0.007 (Gaussian) on the
// variance; the test allows 5 of those.
func TestQuadrantCovariateMoments(t *testing.T) {
	tests := []struct {
		cov     string
		wantVar float64
	}{{CovariatesUniform, 1.0 / 3}, {CovariatesGaussian, 1}}
	for _, tt := range tests {
		t.Run(tt.cov, func(t *testing.T) {
			q, err := NewQuadrant(QuadrantConfig{N: 99, Covariates: tt.cov}, 1)
			if err != nil {
				t.Fatal(err)
			}
			b, err := q.Sample(200, rand.New(rand.NewPCG(2, 2))) // 200·100 points, 40,000 coordinates
			if err != nil {
				t.Fatal(err)
			}
			n := float64(len(b.X) / 2)
			var m [2]float64
			var s [3]float64 // x1², x2², x1·x2
			for i := 0; i < len(b.X); i += 2 {
				x1, x2 := b.X[i], b.X[i+1]
				m[0] += x1 / n
				m[1] += x2 / n
				s[0] += x1 * x1 / n
				s[1] += x2 * x2 / n
				s[2] += x1 * x2 / n
			}
			if math.Abs(m[0]) > 0.025 || math.Abs(m[1]) > 0.025 || math.Abs(s[2]) > 0.025 {
				t.Errorf("means %v, covariance %v: want 0", m, s[2])
			}
			tol := 0.035 * tt.wantVar
			if math.Abs(s[0]-tt.wantVar) > tol || math.Abs(s[1]-tt.wantVar) > tol {
				t.Errorf("variances %v, %v: want %v ± %v", s[0], s[1], tt.wantVar, tol)
			}
		})
	}
}

func TestQuadrantOf(t *testing.T) {
	tests := []struct {
		x1, x2, angle float64
		want          int
	}{
		{0.5, 0.5, 0, 1},
		{-0.5, 0.5, 0, 2},
		{-0.5, -0.5, 0, 3},
		{0.5, -0.5, 0, 4},
		// Boundaries belong to the quadrant on their non-negative side.
		{0, 0, 0, 1},
		{0, -0.5, 0, 4},
		{-0.5, 0, 0, 2},
		// Axes turned by π/2: u = (x2, −x1).
		{1, 1, math.Pi / 2, 4},
		{-1, 1, math.Pi / 2, 1},
		// Axes turned by π/4: (1, 0) lies at u = (0.707, −0.707).
		{1, 0, math.Pi / 4, 4},
		{0, 1, math.Pi / 4, 1},
		// A full turn changes nothing.
		{-0.3, -0.2, 2 * math.Pi, 3},
	}
	for _, tt := range tests {
		if got := QuadrantOf(tt.x1, tt.x2, tt.angle); got != tt.want {
			t.Errorf("QuadrantOf(%v, %v, %v) = %d, want %d", tt.x1, tt.x2, tt.angle, got, tt.want)
		}
	}
}

// TestQuadrantMostProbable uses a hand-made W_e (d' = 2, C = 5) whose column
// 4 = (3, 0) has a larger inner product with column 0 = (1, 0) than column 0
// itself: the most probable category in a quadrant of category 0 is 4.
func TestQuadrantMostProbable(t *testing.T) {
	q := &Quadrant{
		Config: QuadrantConfig{C: 5, DPrime: 2, N: 3},
		// Rows are the d' = 2 coordinates; columns are w_{e,0..4}:
		// (1,0), (0,1), (-1,0), (0,-1), (3,0).
		We: []float64{
			1, 0, -1, 0, 3,
			0, 1, 0, -1, 0,
		},
	}
	got, err := q.MostProbable([]int{0, 1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	// Quadrant of category 1 (0,1): logits (0, 1, 0, −1, 0), best 1; of
	// category 2 (−1,0): logits (−1, 0, 1, 0, −3), best 2; of category 3:
	// best 3.
	if want := [4]int{4, 1, 2, 3}; got != want {
		t.Errorf("MostProbable = %v, want %v", got, want)
	}
	p := make([]float64, 5)
	if err := q.Probs([]int{0, 1, 2, 3}, 0, 0.1, 0.1, p); err != nil {
		t.Fatal(err)
	}
	// Quadrant 1 has category 0: logits W_eᵀ(1, 0) = (1, 0, −1, 0, 3).
	z := math.E + 1 + 1/math.E + 1 + math.Exp(3)
	want := []float64{math.E / z, 1 / z, 1 / math.E / z, 1 / z, math.Exp(3) / z}
	if !cmp.Equal(p, want, cmpopts.EquateApprox(1e-14, 0)) {
		t.Errorf("Probs = %v, want %v", p, want)
	}
}

func TestQuadrantErrors(t *testing.T) {
	good, err := NewQuadrant(QuadrantConfig{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	nanWe := append([]float64(nil), good.We...)
	nanWe[7] = math.NaN()
	cats := []int{0, 1, 2, 3}
	p := make([]float64, 20)
	tests := []struct {
		name    string
		run     func() error
		wantErr string
	}{
		{"B zero", func() error { _, err := good.Sample(0, rng); return err }, "B = 0"},
		{"nil rng", func() error { _, err := good.Sample(2, nil); return err }, "rng is nil"},
		{"nil task", func() error { _, err := (*Quadrant)(nil).Sample(2, rng); return err }, "task is nil"},
		{"We short", func() error { _, err := (&Quadrant{We: good.We[:10]}).Sample(2, rng); return err }, "len(We) = 10"},
		{"We NaN", func() error { _, err := (&Quadrant{We: nanWe}).Sample(2, rng); return err }, "We[7] = NaN"},
		{"bad Config", func() error {
			_, err := (&Quadrant{Config: QuadrantConfig{C: 2}, We: good.We}).Sample(2, rng)
			return err
		}, "QuadrantConfig.C = 2"},
		{"Probs cats length", func() error { return good.Probs(cats[:3], 0, 0, 0, p) }, "len(cats) = 3"},
		{"Probs cat range", func() error { return good.Probs([]int{0, 1, 2, 20}, 0, 0, 0, p) }, "cats[3] = 20"},
		{"Probs p length", func() error { return good.Probs(cats, 0, 0, 0, p[:5]) }, "len(p) = 5"},
		{"MostProbable cat range", func() error { _, err := good.MostProbable([]int{-1, 1, 2, 3}); return err }, "cats[0] = -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	// Zero Config fields mean the defaults in Sample too.
	if _, err := (&Quadrant{We: good.We}).Sample(2, rng); err != nil {
		t.Errorf("zero Config: got error %v, want nil", err)
	}
}

// TestQuadrantOracle checks the paper's remark that the mean max probability
// of this task is low (below 0.6, Appendix F) because d' = 5 makes columns of
// W_e correlated, and that predicting the true argmax at the query is right
// about Oracle() of the time (standard deviation at most 0.5/sqrt(B); the
// test allows 4 of those).
func TestQuadrantOracle(t *testing.T) {
	const B = 4000
	q, err := NewQuadrant(QuadrantConfig{N: 9}, 1) // N does not change the query's law
	if err != nil {
		t.Fatal(err)
	}
	b, err := q.Sample(B, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	for i := 0; i < B; i++ {
		qi := i*b.T + b.T - 1
		p := b.P[qi*b.C : (qi+1)*b.C]
		best := 0
		for c := range p {
			if p[c] > p[best] {
				best = c
			}
		}
		if b.Y[qi] == best {
			hits++
		}
	}
	got, want := float64(hits)/B, b.Oracle()
	if tol := 4 * 0.5 / math.Sqrt(B); math.Abs(got-want) > tol {
		t.Errorf("empirical top-1: got %v, want %v ± %v", got, want, tol)
	}
	if !(want > 1.0/20 && want < 0.6) {
		t.Errorf("Oracle() = %v, want in (1/C, 0.6)", want)
	}
	t.Logf("oracle (mean max probability) for W_e seed 1: %.4f", want)
}
