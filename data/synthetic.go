package data

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gdattn/gdattn/internal/numeric"
)

// BumpLevel is the value that each RBF bump of the synthetic task takes at
// the nearest other anchor (Appendix E): 0.1.
const BumpLevel = 0.1

// SyntheticConfig describes the synthetic task of Appendix E. A zero field
// means its default, given by DefaultSyntheticConfig; negative values are
// errors.
type SyntheticConfig struct {
	// C is the number of categories (default 25).
	C int
	// DPrime is the embedding dimension d' (default 5).
	DPrime int
	// D is the covariate dimension d (default 10).
	D int
	// N is the number of context pairs; T = N+1 with the query (default 10).
	N int
	// Active is the number of categories, and of anchors, per context
	// (default 5). It must satisfy 2 <= Active <= C: each bump's width is
	// set from its nearest other anchor.
	Active int
	// Scale is λ in f(x) = λ Σ_m w_{e,c(m)} bump_m(x) (default 10).
	Scale float64
}

// DefaultSyntheticConfig returns the configuration of the paper's synthetic
// maxScale bounds SyntheticConfig.Scale: f sums Active terms of Scale·bump·w_e
// (bump <= 1, |w_e| a few units), far from overflow at 1e6; at 1e308 f is
// ±Inf and the true probabilities NaN.
const maxScale = 1e6

// experiments: C = 25, DPrime = 5, D = 10, N = 10, Active = 5, Scale = 10.
func DefaultSyntheticConfig() SyntheticConfig {
	return SyntheticConfig{C: 25, DPrime: 5, D: 10, N: 10, Active: 5, Scale: 10}
}

// resolve returns c with zero fields replaced by their defaults, or an error
// naming the first invalid field.
func (c SyntheticConfig) resolve() (SyntheticConfig, error) {
	def := DefaultSyntheticConfig()
	ints := []struct {
		name string
		v    *int
		def  int
	}{
		{"C", &c.C, def.C},
		{"DPrime", &c.DPrime, def.DPrime},
		{"D", &c.D, def.D},
		{"N", &c.N, def.N},
		{"Active", &c.Active, def.Active},
	}
	for _, f := range ints {
		if *f.v < 0 {
			return c, fmt.Errorf("SyntheticConfig.%s = %d, want >= 0 (0 means %d)", f.name, *f.v, f.def)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if math.IsNaN(c.Scale) || c.Scale < 0 || c.Scale > maxScale {
		return c, fmt.Errorf("SyntheticConfig.Scale = %v, want a value in [0, %g] (0 means %v; a larger one overflows f and the probabilities)", c.Scale, maxScale, def.Scale)
	}
	if c.Scale == 0 {
		c.Scale = def.Scale
	}
	if c.Active < 2 || c.Active > c.C {
		return c, fmt.Errorf("SyntheticConfig.Active = %d, want 2..C = 2..%d", c.Active, c.C)
	}
	for _, f := range ints {
		if err := checkedSize("SyntheticConfig."+f.name, *f.v); err != nil {
			return c, err
		}
	}
	if _, err := checkedProduct("SyntheticConfig.DPrime*C (W_e)", c.DPrime, c.C); err != nil {
		return c, err
	}
	if _, err := checkedProduct("SyntheticConfig.Active*D (anchors)", c.Active, c.D); err != nil {
		return c, err
	}
	if _, err := checkedSum("SyntheticConfig.N+1 (T)", c.N, 1); err != nil {
		return c, err
	}
	return c, nil
}

// Synthetic is the synthetic categorical task of Appendix E with its
// embedding matrix W_e drawn once. Each call to Sample draws fresh contexts,
// each with its own latent function
//
//	f(x) = λ Σ_{m=1..Active} w_{e,c(m)} exp(−s_m ‖x − x̃_m‖²),
//
// where the categories c(1..Active) are drawn uniformly without replacement
// from 0..C-1, the anchors x̃_m ~ N(0, I_d), and the width
//
//	s_m = ln(1/BumpLevel) / min_{m'≠m} ‖x̃_m − x̃_{m'}‖²
//
// makes bump m equal BumpLevel = 0.1 at the nearest other anchor. The paper
// prints exp(−σ_m² ‖x − x̃_m‖) with an unsquared norm; this package uses the
// squared distance, the usual RBF form, with the width fixed by the same 0.1
// rule. Covariates are x ~ U(−1, 1)^d and labels are drawn from
// p(c | x) = softmax_c(W_eᵀ f(x)) (eq. (1)) at every position, the query
// included.
type Synthetic struct {
	// Config is the configuration with every default filled in.
	Config SyntheticConfig
	// We is W_e, shape (DPrime, C) row-major (element (r, c) at r*C+c),
	// entries i.i.d. N(0, 1).
	We []float64
}

// NewSynthetic validates cfg, fills in its defaults, and draws W_e from a
// PCG generator seeded with (seed, seed). It returns an error naming the
// first invalid field of cfg, including sizes whose products exceed
// MaxElements.
func NewSynthetic(cfg SyntheticConfig, seed uint64) (*Synthetic, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, fmt.Errorf("data: NewSynthetic: %w", err)
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	we := make([]float64, cfg.DPrime*cfg.C) // (d', C)
	for i := range we {
		we[i] = rng.NormFloat64()
	}
	return &Synthetic{Config: cfg, We: we}, nil
}

// Sample draws B independent contexts of T = N+1 positions each, using rng
// only, so equal generator states give equal batches. The query label is
// drawn too (it is known when training). Zero fields of s.Config mean their
// defaults, as in NewSynthetic. It returns an error if s or rng is nil,
// B <= 0, B*T*D or B*T*C exceeds MaxElements, s.Config is invalid, or s.We
// does not have DPrime*C finite entries.
func (s *Synthetic) Sample(B int, rng *rand.Rand) (*Batch, error) {
	switch {
	case s == nil:
		return nil, fmt.Errorf("data: Synthetic.Sample: task is nil")
	case B <= 0:
		return nil, fmt.Errorf("data: Synthetic.Sample: B = %d, want > 0", B)
	case rng == nil:
		return nil, fmt.Errorf("data: Synthetic.Sample: rng is nil")
	}
	cfg, err := s.Config.resolve()
	if err != nil {
		return nil, fmt.Errorf("data: Synthetic.Sample: %w", err)
	}
	if len(s.We) != cfg.DPrime*cfg.C {
		return nil, fmt.Errorf("data: Synthetic.Sample: len(We) = %d, want DPrime*C = %d", len(s.We), cfg.DPrime*cfg.C)
	}
	for i, v := range s.We {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("data: Synthetic.Sample: We[%d] = %v, want a finite value", i, v)
		}
	}

	C, dP, D, M := cfg.C, cfg.DPrime, cfg.D, cfg.Active
	T := cfg.N + 1
	if err := checkBatchSize(B, T, D, C); err != nil {
		return nil, fmt.Errorf("data: Synthetic.Sample: %w", err)
	}
	bt := &Batch{
		B: B, T: T, D: D, C: C,
		X: make([]float64, B*T*D), // (B, T, D)
		Y: make([]int, B*T),       // (B, T)
		P: make([]float64, B*T*C), // (B, T, C)
	}
	perm := make([]int, C)
	cats := make([]int, M)
	anchors := make([]float64, M*D) // (M, D)
	widths := make([]float64, M)
	f := make([]float64, dP)
	for b := 0; b < B; b++ {
		// Active categories without replacement: a partial Fisher-Yates
		// shuffle of 0..C-1.
		for i := range perm {
			perm[i] = i
		}
		for m := 0; m < M; m++ {
			k := m + rng.IntN(C-m)
			perm[m], perm[k] = perm[k], perm[m]
			cats[m] = perm[m]
		}
		// Anchors x̃_m ~ N(0, I_d); redraw in the probability-zero event
		// that two coincide, which would leave a width undefined.
		for {
			for i := range anchors {
				anchors[i] = rng.NormFloat64()
			}
			if bumpWidths(anchors, M, D, widths) {
				break
			}
		}
		for t := 0; t < T; t++ {
			x := bt.X[(b*T+t)*D : (b*T+t+1)*D]
			for i := range x {
				x[i] = 2*rng.Float64() - 1 // U(−1, 1)
			}
			// f(x) = λ Σ_m w_{e,c(m)} exp(−s_m ‖x − x̃_m‖²), shape (d').
			clear(f)
			for m := 0; m < M; m++ {
				bump := math.Exp(-widths[m] * sqDist(x, anchors[m*D:(m+1)*D]))
				for r := range f {
					f[r] += cfg.Scale * bump * s.We[r*C+cats[m]]
				}
			}
			p := bt.P[(b*T+t)*C : (b*T+t+1)*C]
			softmaxLogits(s.We, dP, C, f, p)
			bt.Y[b*T+t] = sampleCategorical(p, rng.Float64())
		}
	}
	return bt, nil
}

// bumpWidths writes s_m = ln(1/BumpLevel) / min_{m'≠m} ‖x̃_m − x̃_{m'}‖² into
// widths for the M anchors of dimension D (anchors has shape (M, D)), so that
// exp(−s_m ‖x̃_{m*} − x̃_m‖²) = BumpLevel at the nearest other anchor x̃_{m*}.
// It reports false, leaving widths unspecified, if two anchors coincide.
// M must be at least 2.
func bumpWidths(anchors []float64, M, D int, widths []float64) bool {
	for m := 0; m < M; m++ {
		nearest := math.Inf(1)
		for o := 0; o < M; o++ {
			if o != m {
				nearest = math.Min(nearest, sqDist(anchors[m*D:(m+1)*D], anchors[o*D:(o+1)*D]))
			}
		}
		if !(nearest > 0) {
			return false
		}
		widths[m] = math.Log(1/BumpLevel) / nearest
	}
	return true
}

// sampleCategorical returns the category c whose cumulative-probability
// interval contains u in [0, 1). Rounding that leaves u beyond the total
// falls back to the last category with positive probability.
func sampleCategorical(p []float64, u float64) int {
	last := 0
	acc := 0.0
	for c, pc := range p {
		if pc <= 0 {
			continue
		}
		acc += pc
		last = c
		if u < acc {
			return c
		}
	}
	return last
}

// softmaxLogits writes softmax_c(W_eᵀ f) into p (length C), subtracting the
// largest logit first; we has shape (dPrime, C).
func softmaxLogits(we []float64, dPrime, C int, f, p []float64) {
	for c := 0; c < C; c++ {
		l := 0.0
		for r := 0; r < dPrime; r++ {
			l += we[r*C+c] * f[r]
		}
		p[c] = l
	}
	numeric.SoftmaxInto(p, p)
}

func sqDist(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		u := v - b[i]
		s += u * u
	}
	return s
}
