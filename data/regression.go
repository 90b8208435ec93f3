package data

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// LinearRegressionConfig describes the linear-regression task of von
// Oswald et al. ("Transformers learn in-context by gradient descent", ICML
// 2023) used for Appendix G: every context draws its own W ~ N(0, I)
// (DY×D), covariates x ~ U(−1, 1)^D and targets y = W x + ε,
// ε ~ N(0, Noise² I). A zero field means its default; negative values are
// errors.
type LinearRegressionConfig struct {
	D  int // covariate dimension (default 10)
	DY int // target dimension (default 1)
	N  int // context pairs; T = N+1 with the query (default 10)
	// Noise is the standard deviation σ of ε (0, the default: noiseless).
	Noise float64
}

// LinearRegression is the linear-regression task; see
// LinearRegressionConfig.
type LinearRegression struct{ Config LinearRegressionConfig }

// NewLinearRegression validates cfg and returns the task.
func NewLinearRegression(cfg LinearRegressionConfig) (*LinearRegression, error) {
	var err error
	if cfg, err = cfg.resolve(); err != nil {
		return nil, fmt.Errorf("data: NewLinearRegression: %w", err)
	}
	return &LinearRegression{Config: cfg}, nil
}

func (c LinearRegressionConfig) resolve() (LinearRegressionConfig, error) {
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{{"D", &c.D, 10}, {"DY", &c.DY, 1}, {"N", &c.N, 10}} {
		if *f.v < 0 {
			return c, fmt.Errorf("LinearRegressionConfig.%s = %d, want >= 0 (0 means %d)", f.name, *f.v, f.def)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
		if err := checkedSize("LinearRegressionConfig."+f.name, *f.v); err != nil {
			return c, err
		}
	}
	if math.IsNaN(c.Noise) || math.IsInf(c.Noise, 0) || c.Noise < 0 {
		return c, fmt.Errorf("LinearRegressionConfig.Noise = %v, want a finite value >= 0", c.Noise)
	}
	if _, err := checkedSum("LinearRegressionConfig.N+1 (T)", c.N, 1); err != nil {
		return c, err
	}
	return c, nil
}

// Sample draws B contexts (a regression batch: DY > 0, targets in R) with
// rng. Bayes holds each context's Bayes error: the expected squared error
// per target entry of the posterior-mean prediction of the query given the
// context, which under W ~ N(0, I) and Gaussian noise is exactly
//
//	σ² + x_qᵀ Σ x_q,   Σ = (I + XᵀX/σ²)⁻¹ (σ > 0),
//
// and, noiseless, x_qᵀ (I − X⁺X) x_q, the squared norm of the part of x_q
// outside the span of the context's covariates (0 once N ≥ D, almost
// surely). X is the context's N×D covariate matrix; each row of W is an
// independent N(0, I) vector, so the error is the same for every entry.
func (t *LinearRegression) Sample(B int, rng *rand.Rand) (*Batch, error) {
	switch {
	case t == nil:
		return nil, fmt.Errorf("data: LinearRegression.Sample: task is nil")
	case B <= 0:
		return nil, fmt.Errorf("data: LinearRegression.Sample: B = %d, want > 0", B)
	case rng == nil:
		return nil, fmt.Errorf("data: LinearRegression.Sample: rng is nil")
	}
	cfg, err := t.Config.resolve()
	if err != nil {
		return nil, fmt.Errorf("data: LinearRegression.Sample: %w", err)
	}
	D, DY, T := cfg.D, cfg.DY, cfg.N+1
	if err := checkBatchSize(B, T, D, DY); err != nil {
		return nil, fmt.Errorf("data: LinearRegression.Sample: %w", err)
	}
	bt := &Batch{B: B, T: T, D: D, DY: DY,
		X: make([]float64, B*T*D), R: make([]float64, B*T*DY), Bayes: make([]float64, B)}
	w := make([]float64, DY*D)
	for b := 0; b < B; b++ {
		for i := range w {
			w[i] = rng.NormFloat64()
		}
		for p := 0; p < T; p++ {
			x := bt.X[(b*T+p)*D : (b*T+p+1)*D]
			for i := range x {
				x[i] = 2*rng.Float64() - 1
			}
			y := bt.R[(b*T+p)*DY : (b*T+p+1)*DY]
			for r := range y {
				y[r] = dot(w[r*D:(r+1)*D], x) + cfg.Noise*rng.NormFloat64()
			}
		}
		X := bt.X[b*T*D : (b*T+cfg.N)*D]
		xq := bt.X[(b*T+cfg.N)*D : (b*T+T)*D]
		bt.Bayes[b] = linearBayesError(X, xq, cfg.N, D, cfg.Noise)
	}
	return bt, nil
}

// PosteriorMean returns the Bayes-optimal prediction of every query of b
// under the task's prior, E(W | context) x_q with E(W | context) the ridge
// solution Yᵀ X (XᵀX + σ² I)⁻¹ (the minimum-norm least-squares solution
// when σ = 0), shape (B, DY). Its expected squared error is b.Bayes.
func (t *LinearRegression) PosteriorMean(b *Batch) ([]float64, error) {
	if t == nil {
		return nil, fmt.Errorf("data: LinearRegression.PosteriorMean: task is nil")
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("data: LinearRegression.PosteriorMean: %w", err)
	}
	cfg := t.Config
	if !b.Regression() || b.D != cfg.D || b.DY != cfg.DY || b.T < 2 {
		return nil, fmt.Errorf("data: LinearRegression.PosteriorMean: batch (D %d, DY %d) is not the task's (D %d, DY %d)", b.D, b.DY, cfg.D, cfg.DY)
	}
	N, D, DY, T := b.T-1, b.D, b.DY, b.T
	out := make([]float64, b.B*DY)
	for i := 0; i < b.B; i++ {
		X := b.X[i*T*D : (i*T+N)*D]
		xq := b.X[(i*T+N)*D : (i*T+T)*D]
		// Prediction = yᵀ X (XᵀX + σ²I)⁻¹ x_q = yᵀ u with u = (XXᵀ + σ²I)⁺ X x_q
		// (push-through identity), computed in the N-dimensional row space.
		u := ridgeWeights(X, xq, N, D, cfg.Noise)
		for r := 0; r < DY; r++ {
			s := 0.0
			for j := 0; j < N; j++ {
				s += u[j] * b.R[(i*T+j)*DY+r]
			}
			out[i*DY+r] = s
		}
	}
	return out, nil
}

// linearBayesError is σ² + x_qᵀ Σ x_q for the context covariates X (N×D).
// With K = XXᵀ + σ²I (N×N), Σ = I − Xᵀ K⁺ X (Woodbury; for σ = 0 the
// projector onto the null space of X), so x_qᵀ Σ x_q = ‖x_q‖² − vᵀ u with
// v = X x_q and u = K⁺ v (any solution of K u = v gives the same vᵀu).
func linearBayesError(X, xq []float64, N, D int, sigma float64) float64 {
	u := ridgeWeights(X, xq, N, D, sigma) // K⁺ v
	v := make([]float64, N)
	for j := 0; j < N; j++ {
		v[j] = dot(X[j*D:(j+1)*D], xq)
	}
	e := dot(xq, xq) - dot(v, u)
	return sigma*sigma + math.Max(e, 0)
}

// ridgeWeights returns a solution u of K u = X x_q for K = XXᵀ + σ²I
// (N×N, symmetric positive semi-definite), by a Cholesky factorisation with
// diagonal pivoting that stops at the first pivot below 1e-12·max(diag K)
// (the numerical rank of a noiseless K with N > D) and sets the remaining
// components to 0. X x_q lies in the range of K, so u solves the system
// exactly, and Xᵀu — hence x_qᵀXᵀu and the prediction yᵀu for y in the
// range of X, or any y when σ > 0 — is the same for every solution:
// that of the pseudo-inverse.
func ridgeWeights(X, xq []float64, N, D int, sigma float64) []float64 {
	A := make([]float64, N*N)
	top := 0.0
	for i := 0; i < N; i++ {
		for j := 0; j <= i; j++ {
			v := dot(X[i*D:(i+1)*D], X[j*D:(j+1)*D])
			A[i*N+j], A[j*N+i] = v, v
		}
		A[i*N+i] += sigma * sigma
		top = math.Max(top, A[i*N+i])
	}
	v := make([]float64, N)
	for j := 0; j < N; j++ {
		v[j] = dot(X[j*D:(j+1)*D], xq)
	}
	perm := make([]int, N)
	for i := range perm {
		perm[i] = i
	}
	swap := func(a, b int) { // symmetric row and column swap
		for k := 0; k < N; k++ {
			A[a*N+k], A[b*N+k] = A[b*N+k], A[a*N+k]
		}
		for k := 0; k < N; k++ {
			A[k*N+a], A[k*N+b] = A[k*N+b], A[k*N+a]
		}
		perm[a], perm[b] = perm[b], perm[a]
		v[a], v[b] = v[b], v[a]
	}
	// A ← L (lower triangle), the first r columns.
	r := 0
	for ; r < N; r++ {
		p := r
		for j := r + 1; j < N; j++ {
			if A[j*N+j] > A[p*N+p] {
				p = j
			}
		}
		if !(A[p*N+p] > 1e-12*top) {
			break
		}
		swap(r, p)
		l := math.Sqrt(A[r*N+r])
		A[r*N+r] = l
		for i := r + 1; i < N; i++ {
			A[i*N+r] /= l
		}
		for i := r + 1; i < N; i++ {
			for j := r + 1; j <= i; j++ {
				A[i*N+j] -= A[i*N+r] * A[j*N+r]
				A[j*N+i] = A[i*N+j]
			}
		}
	}
	// Solve L11 L11ᵀ z = v[:r]; the other components are 0.
	z := make([]float64, N)
	for i := 0; i < r; i++ {
		s := v[i]
		for k := 0; k < i; k++ {
			s -= A[i*N+k] * z[k]
		}
		z[i] = s / A[i*N+i]
	}
	for i := r - 1; i >= 0; i-- {
		s := z[i]
		for k := i + 1; k < r; k++ {
			s -= A[k*N+i] * z[k]
		}
		z[i] = s / A[i*N+i]
	}
	u := make([]float64, N)
	for i, p := range perm {
		u[p] = z[i]
	}
	return u
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// RBFRegressionConfig describes a nonlinear regression task that mirrors
// the synthetic task of Appendix E with real-valued y: every context draws
// Active anchors c_m ~ N(0, I_D), each with a bump exp(−γ_m‖x − c_m‖²)
// whose width makes it BumpLevel (0.1) at the nearest other anchor, and
// amplitudes a_m ~ N(0, I_DY); covariates x ~ U(−1, 1)^D and targets
//
//	y = Scale · Σ_m a_m exp(−γ_m‖x − c_m‖²) + ε,   ε ~ N(0, Noise² I).
//
// Zero fields mean their defaults; negative values are errors.
type RBFRegressionConfig struct {
	D      int     // covariate dimension (default 10)
	DY     int     // target dimension (default 1)
	N      int     // context pairs (default 10)
	Active int     // bumps per context, >= 2 (default 5)
	Scale  float64 // amplitude scale (default 1)
	Noise  float64 // noise standard deviation σ (default 0)
}

// RBFRegression is the nonlinear regression task; see
// RBFRegressionConfig.
type RBFRegression struct{ Config RBFRegressionConfig }

// NewRBFRegression validates cfg and returns the task.
func NewRBFRegression(cfg RBFRegressionConfig) (*RBFRegression, error) {
	var err error
	if cfg, err = cfg.resolve(); err != nil {
		return nil, fmt.Errorf("data: NewRBFRegression: %w", err)
	}
	return &RBFRegression{Config: cfg}, nil
}

func (c RBFRegressionConfig) resolve() (RBFRegressionConfig, error) {
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{{"D", &c.D, 10}, {"DY", &c.DY, 1}, {"N", &c.N, 10}, {"Active", &c.Active, 5}} {
		if *f.v < 0 {
			return c, fmt.Errorf("RBFRegressionConfig.%s = %d, want >= 0 (0 means %d)", f.name, *f.v, f.def)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
		if err := checkedSize("RBFRegressionConfig."+f.name, *f.v); err != nil {
			return c, err
		}
	}
	if c.Active < 2 {
		return c, fmt.Errorf("RBFRegressionConfig.Active = %d, want >= 2 (a bump's width is set from its nearest other anchor)", c.Active)
	}
	for _, f := range []struct {
		name string
		v    *float64
		def  float64
	}{{"Scale", &c.Scale, 1}, {"Noise", &c.Noise, 0}} {
		if math.IsNaN(*f.v) || math.IsInf(*f.v, 0) || *f.v < 0 {
			return c, fmt.Errorf("RBFRegressionConfig.%s = %v, want a finite value >= 0", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if _, err := checkedProduct("RBFRegressionConfig.Active*D (anchors)", c.Active, c.D); err != nil {
		return c, err
	}
	if _, err := checkedSum("RBFRegressionConfig.N+1 (T)", c.N, 1); err != nil {
		return c, err
	}
	return c, nil
}

// Sample draws B contexts with rng. The Bayes error is known only for the
// oracle that knows each context's function: Bayes holds Noise² (the
// irreducible error; the Bayes-optimal prediction from the context alone
// has no closed form and is above it).
func (t *RBFRegression) Sample(B int, rng *rand.Rand) (*Batch, error) {
	switch {
	case t == nil:
		return nil, fmt.Errorf("data: RBFRegression.Sample: task is nil")
	case B <= 0:
		return nil, fmt.Errorf("data: RBFRegression.Sample: B = %d, want > 0", B)
	case rng == nil:
		return nil, fmt.Errorf("data: RBFRegression.Sample: rng is nil")
	}
	cfg, err := t.Config.resolve()
	if err != nil {
		return nil, fmt.Errorf("data: RBFRegression.Sample: %w", err)
	}
	D, DY, T, M := cfg.D, cfg.DY, cfg.N+1, cfg.Active
	if err := checkBatchSize(B, T, D, DY); err != nil {
		return nil, fmt.Errorf("data: RBFRegression.Sample: %w", err)
	}
	bt := &Batch{B: B, T: T, D: D, DY: DY,
		X: make([]float64, B*T*D), R: make([]float64, B*T*DY), Bayes: make([]float64, B)}
	anchors := make([]float64, M*D)
	widths := make([]float64, M)
	amps := make([]float64, M*DY)
	for b := 0; b < B; b++ {
		for {
			for i := range anchors {
				anchors[i] = rng.NormFloat64()
			}
			if bumpWidths(anchors, M, D, widths) {
				break
			}
		}
		for i := range amps {
			amps[i] = rng.NormFloat64()
		}
		for p := 0; p < T; p++ {
			x := bt.X[(b*T+p)*D : (b*T+p+1)*D]
			for i := range x {
				x[i] = 2*rng.Float64() - 1
			}
			y := bt.R[(b*T+p)*DY : (b*T+p+1)*DY]
			for m := 0; m < M; m++ {
				bump := cfg.Scale * math.Exp(-widths[m]*sqDist(x, anchors[m*D:(m+1)*D]))
				for r := range y {
					y[r] += bump * amps[m*DY+r]
				}
			}
			for r := range y {
				y[r] += cfg.Noise * rng.NormFloat64()
			}
		}
		bt.Bayes[b] = cfg.Noise * cfg.Noise
	}
	return bt, nil
}
