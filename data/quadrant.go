package data

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Covariate laws of the quadrant task.
const (
	// CovariatesUniform draws x ~ U(−1, 1)², the paper's choice (Appendix F).
	CovariatesUniform = "uniform"
	// CovariatesGaussian draws x ~ N(0, I₂), a rotation-invariant law
	// (Assumption 3 of Theorem 2).
	CovariatesGaussian = "gaussian"
)

// QuadrantD is the covariate dimension of the quadrant task.
const QuadrantD = 2

// QuadrantConfig describes the lower-dimensional quadrant task of the
// paper's Appendix F. A zero field means its default, given by
// DefaultQuadrantConfig; negative values and unknown names are errors.
type QuadrantConfig struct {
	// C is the number of categories (default 20); at least 4, since every
	// context gives each quadrant its own category.
	C int
	// DPrime is the embedding dimension d' (default 5).
	DPrime int
	// N is the number of context pairs; T = N+1 with the query (default 100).
	N int
	// Covariates is the law of x: CovariatesUniform (default) or
	// CovariatesGaussian.
	Covariates string
	// Rotate turns each context's pair of quadrant axes by its own angle
	// φ ~ U(0, 2π). With Gaussian covariates the law of the whole task is
	// then invariant under every rotation and reflection of x (Theorem 2's
	// Assumptions 3 and 4); without it the task is invariant under the eight
	// symmetries of the square only.
	Rotate bool
}

// DefaultQuadrantConfig returns the configuration of Appendix F: C = 20,
// DPrime = 5, N = 100, uniform covariates, axis-aligned quadrants.
func DefaultQuadrantConfig() QuadrantConfig {
	return QuadrantConfig{C: 20, DPrime: 5, N: 100, Covariates: CovariatesUniform}
}

// resolve returns c with zero fields replaced by their defaults, or an error
// naming the first invalid field.
func (c QuadrantConfig) resolve() (QuadrantConfig, error) {
	def := DefaultQuadrantConfig()
	ints := []struct {
		name string
		v    *int
		def  int
	}{
		{"C", &c.C, def.C},
		{"DPrime", &c.DPrime, def.DPrime},
		{"N", &c.N, def.N},
	}
	for _, f := range ints {
		if *f.v < 0 {
			return c, fmt.Errorf("QuadrantConfig.%s = %d, want >= 0 (0 means %d)", f.name, *f.v, f.def)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if c.C < 4 {
		return c, fmt.Errorf("QuadrantConfig.C = %d, want >= 4 (one category per quadrant)", c.C)
	}
	switch c.Covariates {
	case "":
		c.Covariates = def.Covariates
	case CovariatesUniform, CovariatesGaussian:
	default:
		return c, fmt.Errorf("QuadrantConfig.Covariates = %q, want %q or %q", c.Covariates, CovariatesUniform, CovariatesGaussian)
	}
	for _, f := range ints {
		if err := checkedSize("QuadrantConfig."+f.name, *f.v); err != nil {
			return c, err
		}
	}
	if _, err := checkedProduct("QuadrantConfig.DPrime*C (W_e)", c.DPrime, c.C); err != nil {
		return c, err
	}
	if _, err := checkedSum("QuadrantConfig.N+1 (T)", c.N, 1); err != nil {
		return c, err
	}
	return c, nil
}

// Quadrant is the quadrant task of Appendix F with its embedding matrix W_e
// drawn once. Each context draws four distinct categories c_1..c_4 uniformly
// without replacement, one per quadrant, and sets the latent function to the
// embedding of the category of x's quadrant,
//
//	f(x) = w_{e,c_q(x)},
//
// with quadrants numbered as in the paper: 1 at the top right (x₁ ≥ 0,
// x₂ ≥ 0), then counter-clockwise: 2 top left, 3 bottom left, 4 bottom right
// (see QuadrantOf). Labels are drawn from p(c | x) = softmax_c(W_eᵀ f(x))
// (eq. (1)) at every position, the query included.
type Quadrant struct {
	// Config is the configuration with every default filled in.
	Config QuadrantConfig
	// We is W_e, shape (DPrime, C) row-major (element (r, c) at r*C+c),
	// entries i.i.d. N(0, 1).
	We []float64
}

// QuadrantLatent is the hidden structure of a batch of quadrant contexts.
type QuadrantLatent struct {
	// Cats holds the categories of the quadrants, shape (B, 4): context b
	// gives quadrant q (1..4) the category Cats[b*4+q-1].
	Cats []int
	// Angles holds each context's axis rotation φ, shape (B); all zero
	// unless Config.Rotate.
	Angles []float64
}

// NewQuadrant validates cfg, fills in its defaults, and draws W_e from a PCG
// generator seeded with (seed, seed). It returns an error naming the first
// invalid field of cfg, including sizes whose products exceed MaxElements.
func NewQuadrant(cfg QuadrantConfig, seed uint64) (*Quadrant, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, fmt.Errorf("data: NewQuadrant: %w", err)
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	we := make([]float64, cfg.DPrime*cfg.C) // (d', C)
	for i := range we {
		we[i] = rng.NormFloat64()
	}
	return &Quadrant{Config: cfg, We: we}, nil
}

// Sample draws B independent contexts of T = N+1 positions each, using rng
// only, so equal generator states give equal batches; it is SampleLatent
// without the latent structure. P holds the true probabilities, so
// Batch.Oracle is the paper's "mean max probability".
func (q *Quadrant) Sample(B int, rng *rand.Rand) (*Batch, error) {
	b, _, err := q.SampleLatent(B, rng)
	return b, err
}

// SampleLatent draws B contexts like Sample (the same batch for the same
// generator state) and also returns their quadrant categories and axis
// angles. It returns an error if q or rng is nil, B <= 0, B*T*2 or B*T*C
// exceeds MaxElements, q.Config is invalid, or q.We does not have DPrime*C
// finite entries.
func (q *Quadrant) SampleLatent(B int, rng *rand.Rand) (*Batch, *QuadrantLatent, error) {
	cfg, err := q.check("SampleLatent")
	if err != nil {
		return nil, nil, err
	}
	switch {
	case B <= 0:
		return nil, nil, fmt.Errorf("data: Quadrant.SampleLatent: B = %d, want > 0", B)
	case rng == nil:
		return nil, nil, fmt.Errorf("data: Quadrant.SampleLatent: rng is nil")
	}
	C, T, D := cfg.C, cfg.N+1, QuadrantD
	if err := checkBatchSize(B, T, D, C); err != nil {
		return nil, nil, fmt.Errorf("data: Quadrant.SampleLatent: %w", err)
	}
	bt := &Batch{
		B: B, T: T, D: D, C: C,
		X: make([]float64, B*T*D), // (B, T, 2)
		Y: make([]int, B*T),       // (B, T)
		P: make([]float64, B*T*C), // (B, T, C)
	}
	lat := &QuadrantLatent{Cats: make([]int, 4*B), Angles: make([]float64, B)}
	perm := make([]int, C)
	// probs[q] = softmax(W_eᵀ w_{e,c_q}), the label law in quadrant q+1.
	probs := make([][]float64, 4)
	for i := range probs {
		probs[i] = make([]float64, C)
	}
	for b := 0; b < B; b++ {
		// Four categories without replacement: a partial Fisher-Yates
		// shuffle of 0..C-1.
		for i := range perm {
			perm[i] = i
		}
		cats := lat.Cats[b*4 : (b+1)*4]
		for m := 0; m < 4; m++ {
			k := m + rng.IntN(C-m)
			perm[m], perm[k] = perm[k], perm[m]
			cats[m] = perm[m]
			q.condProbs(cfg, cats[m], probs[m])
		}
		if cfg.Rotate {
			lat.Angles[b] = 2 * math.Pi * rng.Float64()
		}
		for t := 0; t < T; t++ {
			x := bt.X[(b*T+t)*D : (b*T+t+1)*D]
			for i := range x {
				if cfg.Covariates == CovariatesGaussian {
					x[i] = rng.NormFloat64()
				} else {
					x[i] = 2*rng.Float64() - 1 // U(−1, 1)
				}
			}
			p := bt.P[(b*T+t)*C : (b*T+t+1)*C]
			copy(p, probs[QuadrantOf(x[0], x[1], lat.Angles[b])-1])
			bt.Y[b*T+t] = sampleCategorical(p, rng.Float64())
		}
	}
	return bt, lat, nil
}

// QuadrantOf returns the quadrant (1..4) of the point (x1, x2) for axes
// turned by angle φ (radians; 0 for the paper's axis-aligned quadrants):
// the point's coordinates in the turned frame are u₁ = cos φ·x1 + sin φ·x2,
// u₂ = −sin φ·x1 + cos φ·x2, and the quadrant is 1 for u₁ ≥ 0, u₂ ≥ 0, 2 for
// u₁ < 0 ≤ u₂, 3 for u₁ < 0, u₂ < 0, and 4 for u₂ < 0 ≤ u₁.
func QuadrantOf(x1, x2, angle float64) int {
	u1, u2 := x1, x2
	if angle != 0 {
		s, c := math.Sincos(angle)
		u1, u2 = c*x1+s*x2, -s*x1+c*x2
	}
	switch {
	case u1 >= 0 && u2 >= 0:
		return 1
	case u2 >= 0:
		return 2
	case u1 < 0:
		return 3
	}
	return 4
}

// Probs writes into p (length C) the true p(c | x) of a context whose
// quadrants have categories cats (length 4, quadrant q at cats[q-1]) and
// whose axes are turned by angle, at the point (x1, x2). It returns an error
// on a malformed task, a wrong length or a category out of range.
func (q *Quadrant) Probs(cats []int, angle, x1, x2 float64, p []float64) error {
	cfg, err := q.check("Probs")
	if err != nil {
		return err
	}
	if err := checkCats("Probs", cats, cfg.C); err != nil {
		return err
	}
	if len(p) != cfg.C {
		return fmt.Errorf("data: Quadrant.Probs: len(p) = %d, want C = %d", len(p), cfg.C)
	}
	q.condProbs(cfg, cats[QuadrantOf(x1, x2, angle)-1], p)
	return nil
}

// MostProbable returns, for each quadrant q = 1..4 of a context with
// categories cats, the category that is most probable there under the true
// process, argmax_c softmax_c(W_eᵀ w_{e,c_q}) (the lowest index on a tie).
// This is how the paper picks the categories it maps in Figure 7; it need not
// be c_q itself, since another column of W_e may have a larger inner product
// with w_{e,c_q}.
func (q *Quadrant) MostProbable(cats []int) ([4]int, error) {
	var out [4]int
	cfg, err := q.check("MostProbable")
	if err != nil {
		return out, err
	}
	if err := checkCats("MostProbable", cats, cfg.C); err != nil {
		return out, err
	}
	p := make([]float64, cfg.C)
	for i, c := range cats {
		q.condProbs(cfg, c, p)
		best := 0
		for k := range p {
			if p[k] > p[best] {
				best = k
			}
		}
		out[i] = best
	}
	return out, nil
}

// condProbs writes softmax(W_eᵀ w_{e,c}) into p (length C) for the resolved
// configuration cfg.
func (q *Quadrant) condProbs(cfg QuadrantConfig, c int, p []float64) {
	C, dP := cfg.C, cfg.DPrime
	f := make([]float64, dP)
	for r := range f {
		f[r] = q.We[r*C+c]
	}
	softmaxLogits(q.We, dP, C, f, p)
}

// check validates the task and returns its resolved configuration.
func (q *Quadrant) check(fn string) (QuadrantConfig, error) {
	if q == nil {
		return QuadrantConfig{}, fmt.Errorf("data: Quadrant.%s: task is nil", fn)
	}
	cfg, err := q.Config.resolve()
	if err != nil {
		return cfg, fmt.Errorf("data: Quadrant.%s: %w", fn, err)
	}
	if len(q.We) != cfg.DPrime*cfg.C {
		return cfg, fmt.Errorf("data: Quadrant.%s: len(We) = %d, want DPrime*C = %d", fn, len(q.We), cfg.DPrime*cfg.C)
	}
	for i, v := range q.We {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return cfg, fmt.Errorf("data: Quadrant.%s: We[%d] = %v, want a finite value", fn, i, v)
		}
	}
	return cfg, nil
}

func checkCats(fn string, cats []int, C int) error {
	if len(cats) != 4 {
		return fmt.Errorf("data: Quadrant.%s: len(cats) = %d, want 4 (one per quadrant)", fn, len(cats))
	}
	for i, c := range cats {
		if c < 0 || c >= C {
			return fmt.Errorf("data: Quadrant.%s: cats[%d] = %d, want 0..%d", fn, i, c, C-1)
		}
	}
	return nil
}
