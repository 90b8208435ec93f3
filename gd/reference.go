package gd

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gdattn/gdattn/internal/bounds"
	"github.com/gdattn/gdattn/internal/numeric"
)

// refKernels lists the kernel names understood by RefKernel and Reference,
// in the order reported by RefKernelNames.
var refKernels = []string{"linear", "rbf", "exp", "laplacian", "softmax"}

// RefKernelNames returns the kernel names accepted by RefKernel and by
// ReferenceConfig.Kernel: "linear", "rbf", "exp", "laplacian" and "softmax".
// The returned slice is a fresh copy.
func RefKernelNames() []string {
	return append([]string(nil), refKernels...)
}

// RefKernel returns the plain-Go attention kernel κ(q, k) called name, with
// kernel parameter gamma (written g below):
//
//	"linear":    κ(q, k) = q·k                (gamma is ignored)
//	"rbf":       κ(q, k) = exp(-g‖q−k‖²)
//	"exp":       κ(q, k) = exp(g q·k)
//	"laplacian": κ(q, k) = exp(-g‖q−k‖)
//	"softmax":   κ(q, k) = exp(g q·k)         (unnormalised, see below)
//
// The softmax kernel of the paper (Section 5) is exp(g x_i·x_j) normalised
// over the N context keys x_i for each query x_j. A function of one (q, k)
// pair cannot see the other keys, so for "softmax" RefKernel returns the
// unnormalised exp kernel; Reference does the normalisation (stably).
//
// RefKernel returns an error naming the argument if name is unknown or gamma
// is NaN or ±Inf. The returned function panics if len(q) != len(k), which is
// a programmer error.
func RefKernel(name string, gamma float64) (func(q, k []float64) float64, error) {
	if err := refCheckKernel(name, gamma, "name", "gamma"); err != nil {
		return nil, fmt.Errorf("gd: RefKernel: %w", err)
	}
	g := gamma
	switch name {
	case "linear":
		return func(q, k []float64) float64 { return refDot(q, k) }, nil
	case "rbf":
		return func(q, k []float64) float64 { return math.Exp(-g * refSqDist(q, k)) }, nil
	case "exp", "softmax":
		return func(q, k []float64) float64 { return math.Exp(g * refDot(q, k)) }, nil
	case "laplacian":
		return func(q, k []float64) float64 { return math.Exp(-g * math.Sqrt(refSqDist(q, k))) }, nil
	}
	panic("gd: unreachable: kernel " + name + " passed refCheckKernel")
}

// refCheckKernel validates a kernel name and parameter; nameArg and gammaArg
// are the argument names used in the error.
func refCheckKernel(name string, gamma float64, nameArg, gammaArg string) error {
	if !slices.Contains(refKernels, name) {
		return fmt.Errorf("%s = %q is not a kernel, want one of %s", nameArg, name, strings.Join(refKernels, ", "))
	}
	if math.IsNaN(gamma) || math.IsInf(gamma, 0) {
		return fmt.Errorf("%s = %v, want a finite value", gammaArg, gamma)
	}
	return nil
}

// RefSoftmax returns the class probabilities p(c | f) = softmax_c(W_eᵀ f) of
// the paper's eq. (1), a slice of length C. we is W_e, d'×C row-major
// (element (r, c) at we[r*C+c], column c is the embedding w_{e,c}), and f has
// length d'. The softmax subtracts the largest logit, so it is stable for
// large |f|.
//
// RefSoftmax returns an error naming the argument on non-positive dPrime or
// C, wrong lengths, or NaN/Inf in we or f, and an error if a logit W_eᵀ f
// overflows to ±Inf.
func RefSoftmax(we []float64, dPrime, C int, f []float64) ([]float64, error) {
	if err := refCheckEmbedding("RefSoftmax", we, dPrime, C, f); err != nil {
		return nil, err
	}
	p := make([]float64, C)
	refSoftmaxLogits(we, dPrime, C, f, p)
	if err := refCheckFinite(p); err != nil {
		return nil, fmt.Errorf("gd: RefSoftmax: W_eᵀ f overflowed: %w", err)
	}
	return p, nil
}

// RefExpectedEmbedding returns E(w_e | f) = Σ_c w_{e,c} softmax_c(W_eᵀ f), the
// posterior mean of the embedding under eq. (1) (the paper's eq. (5)), a slice
// of length d'. The arguments and errors are those of RefSoftmax. At f = 0 it
// is the mean of the columns of W_e.
func RefExpectedEmbedding(we []float64, dPrime, C int, f []float64) ([]float64, error) {
	if err := refCheckEmbedding("RefExpectedEmbedding", we, dPrime, C, f); err != nil {
		return nil, err
	}
	e := make([]float64, dPrime)
	refExpectedEmbedding(we, dPrime, C, f, make([]float64, C), e)
	if err := refCheckFinite(e); err != nil {
		return nil, fmt.Errorf("gd: RefExpectedEmbedding: W_eᵀ f overflowed: %w", err)
	}
	return e, nil
}

// ReferenceConfig configures Reference. There are no defaults: the zero value
// runs zero steps and has an empty, hence invalid, Kernel, because a
// reference should state every choice it makes.
type ReferenceConfig struct {
	// Steps is the number K ≥ 0 of functional GD steps.
	Steps int
	// Alpha is the GD step size α; it must be finite.
	Alpha float64
	// Kernel names the kernel κ; see RefKernel for the list. Set Kernel or
	// KernelFunc, not both.
	Kernel string
	// Gamma is the kernel parameter g of the named Kernel; it must be finite
	// and is ignored by "linear" and with KernelFunc.
	Gamma float64
	// KernelFunc, instead of Kernel, is a user kernel κ(q, k) of two
	// d-vectors (unnormalised: Reference uses κ(x_i, x_j) as it is), e.g.
	// κ = rbf + β·linear for the GD model with layers.Sum(layers.RBF(g),
	// layers.Scaled(β, layers.Linear())). Its values must be finite.
	KernelFunc func(q, k []float64) float64
	// Bias adds the GD update of the bias b of f = Aψ(x) + b (Appendix B),
	// which is the same as using the kernel κ + 1.
	Bias bool
	// Heads, when non-empty, runs the multi-kernel GD of Appendix H:
	// f_{k+1}(x_j) = f_k(x_j) + Σ_m [(α/N) Σ_i (w_{e,y_i} − E_i) κ(Λ_m x_i, Λ_m x_j)] P_m,
	// with the row-vector convention (a d'-vector times the d'×d' matrix P_m).
	Heads []RefHead
}

// RefHead is one kernel of the multi-kernel GD of Appendix H: the diagonal
// Λ_m (its d entries) and the d'×d' merge matrix P_m (row-major).
type RefHead struct {
	Lambda []float64
	P      []float64
}

// ReferenceResult holds the trajectory computed by Reference. All slices are
// flat and row-major.
type ReferenceResult struct {
	// F[k], k = 0..Steps, is f_{·,k}, shape (B, T, d'): the latent function
	// at every position (context and query) after k steps. F[0] is all zeros.
	F [][]float64
	// E[k], k = 0..Steps, is E(w_e | f_{·,k}), shape (B, T, d').
	E [][]float64
	// Probs is softmax(W_eᵀ f_{N+1,K}), shape (B, C): the predicted class
	// probabilities at the query after the last step (nil for ReferenceReal).
	Probs []float64
	// Pred is E(Y | f_{N+1,K}), shape (B, d_y): ReferenceReal's prediction
	// at the query (f_K itself for the Gaussian); nil for Reference.
	Pred []float64
}

// Reference runs K = cfg.Steps steps of the functional gradient descent of
// the paper's eqs. (2)-(3), in plain Go, as the ground truth that the
// categorical attention models in this package must match ([ReferenceReal]
// is its Gaussian counterpart, Appendix G, for real-valued y):
//
//	f_{j,0}   = 0
//	f_{j,k+1} = f_{j,k} + (α/N) Σ_{i=1..N} [w_{e,y_i} − E(w_e | f_{i,k})] κ(x_i, x_j)
//
// for every position j = 1..N+1, the query included, with
// E(w_e | f) = Σ_c w_{e,c} softmax_c(W_eᵀ f).
//
// Shapes: x is (B, T, d) with T = N+1; positions 0..N-1 of each context are
// the context and position N (the last) is the query. y is (B, T) with
// context labels in 0..C-1; the query label may be -1 (unknown) and is never
// used. we is W_e, d'×C row-major (element (r, c) at we[r*C+c]).
//
// For the "softmax" kernel, κ(x_i, x_j) = exp(g x_i·x_j) / Σ_{i'=1..N}
// exp(g x_{i'}·x_j): the weights of each query j sum to one over the N
// context keys.
//
// With cfg.Bias, f = Aψ(x) + b and the update of b from Appendix B,
// b_{k+1} = b_k + (α/N) Σ_i [w_{e,y_i} − E(w_e | f_{i,k})], is added to every
// f_j. This follows the derivation: the final displayed formula of
// Appendix B (eq. (f_update)) prints the bias term with α instead of α/N,
// which disagrees with the update of b derived just above it. The result
// equals the plain update with the kernel κ + 1 (for "softmax", the
// normalised kernel plus one).
//
// Reference returns an error naming the argument on non-positive B, T−1
// (that is, N = 0), d, dPrime or C; wrong slice lengths; labels out of range;
// NaN or ±Inf in x, we, Alpha or Gamma; negative Steps; an unknown kernel;
// or if the kernel or f overflows to a non-finite value.
func Reference(x []float64, y []int, B, T, d int, we []float64, dPrime, C int, cfg ReferenceConfig) (*ReferenceResult, error) {
	if err := refCheckArgs(x, y, B, T, d, we, dPrime, C, cfg); err != nil {
		return nil, err
	}
	N := T - 1
	heads, Ks, err := refHeadKernels(x, B, T, d, dPrime, cfg)
	if err != nil {
		return nil, err
	}

	res := &ReferenceResult{
		F: make([][]float64, cfg.Steps+1),
		E: make([][]float64, cfg.Steps+1),
	}
	p := make([]float64, C)
	r := make([]float64, dPrime)
	scale := cfg.Alpha / float64(N)
	f := make([]float64, B*T*dPrime) // (B, T, d'), f_{·,0} = 0
	for k := 0; ; k++ {
		e := make([]float64, B*T*dPrime) // (B, T, d')
		for bt := 0; bt < B*T; bt++ {
			refExpectedEmbedding(we, dPrime, C, f[bt*dPrime:(bt+1)*dPrime], p, e[bt*dPrime:(bt+1)*dPrime])
		}
		if err := refCheckFinite(e); err != nil {
			return nil, fmt.Errorf("gd: Reference: E(w_e|f) after %d steps (W_eᵀ f overflowed): %w", k, err)
		}
		res.F[k], res.E[k] = f, e
		if k == cfg.Steps {
			break
		}
		next := append([]float64(nil), f...)
		for h, K := range Ks {
			delta := make([]float64, B*T*dPrime) // this head's Δf before P_m
			for b := 0; b < B; b++ {
				for i := 0; i < N; i++ {
					yi := y[b*T+i]
					ei := e[(b*T+i)*dPrime : (b*T+i+1)*dPrime]
					for c := range r {
						r[c] = we[c*C+yi] - ei[c] // w_{e,y_i} − E(w_e | f_{i,k})
					}
					krow := K[(b*N+i)*T : (b*N+i+1)*T] // κ(x_i, x_j), j = 0..T-1
					for j, kij := range krow {
						dj := delta[(b*T+j)*dPrime : (b*T+j+1)*dPrime]
						for c, rc := range r {
							dj[c] += scale * kij * rc
						}
					}
				}
			}
			P := heads[h].P
			for bt := 0; bt < B*T; bt++ {
				dj := delta[bt*dPrime : (bt+1)*dPrime]
				nj := next[bt*dPrime : (bt+1)*dPrime]
				for c := 0; c < dPrime; c++ {
					if P == nil {
						nj[c] += dj[c]
						continue
					}
					v := 0.0
					for r2 := 0; r2 < dPrime; r2++ {
						v += dj[r2] * P[r2*dPrime+c]
					}
					nj[c] += v
				}
			}
		}
		if err := refCheckFinite(next); err != nil {
			return nil, fmt.Errorf("gd: Reference: f after %d steps: %w", k+1, err)
		}
		f = next
	}

	res.Probs = make([]float64, B*C) // (B, C)
	fK := res.F[cfg.Steps]
	for b := 0; b < B; b++ {
		q := (b*T + N) * dPrime
		refSoftmaxLogits(we, dPrime, C, fK[q:q+dPrime], res.Probs[b*C:(b+1)*C])
	}
	return res, nil
}

// refHeadKernels returns the heads of cfg (one plain head when cfg.Heads is
// empty) and each head's kernel matrix (B, N, T), κ+1 with cfg.Bias.
func refHeadKernels(x []float64, B, T, d, dPrime int, cfg ReferenceConfig) ([]RefHead, [][]float64, error) {
	heads := cfg.Heads
	if len(heads) == 0 {
		heads = []RefHead{{}}
	}
	Ks := make([][]float64, len(heads))
	for h, hd := range heads {
		if hd.Lambda != nil && len(hd.Lambda) != d {
			return nil, nil, fmt.Errorf("gd: Reference: cfg.Heads[%d].Lambda has %d entries, want d = %d", h, len(hd.Lambda), d)
		}
		if hd.P != nil && len(hd.P) != dPrime*dPrime {
			return nil, nil, fmt.Errorf("gd: Reference: cfg.Heads[%d].P has %d entries, want d'*d' = %d", h, len(hd.P), dPrime*dPrime)
		}
		xs := x
		if hd.Lambda != nil {
			xs = make([]float64, len(x))
			for i := range x {
				xs[i] = x[i] * hd.Lambda[i%d]
			}
		}
		K, err := refKernelMatrix(xs, B, T, d, cfg.Kernel, cfg.Gamma, cfg.KernelFunc) // (B, N, T)
		if err != nil {
			return nil, nil, err
		}
		if cfg.Bias {
			for i := range K {
				K[i]++
			}
		}
		Ks[h] = K
	}

	return heads, Ks, nil
}

// refCheckArgs validates the arguments of Reference.
func refCheckArgs(x []float64, y []int, B, T, d int, we []float64, dPrime, C int, cfg ReferenceConfig) error {
	switch {
	case B <= 0:
		return fmt.Errorf("gd: Reference: B = %d, want > 0", B)
	case T <= 0:
		return fmt.Errorf("gd: Reference: T = %d, want > 0", T)
	case T == 1:
		return fmt.Errorf("gd: Reference: T = 1 gives N = T-1 = 0 context positions, want N > 0")
	case d <= 0:
		return fmt.Errorf("gd: Reference: d = %d, want > 0", d)
	case dPrime <= 0:
		return fmt.Errorf("gd: Reference: dPrime = %d, want > 0", dPrime)
	case C <= 0:
		return fmt.Errorf("gd: Reference: C = %d, want > 0", C)
	case len(x) != B*T*d:
		return fmt.Errorf("gd: Reference: len(x) = %d, want B*T*d = %d", len(x), B*T*d)
	case len(y) != B*T:
		return fmt.Errorf("gd: Reference: len(y) = %d, want B*T = %d", len(y), B*T)
	case len(we) != dPrime*C:
		return fmt.Errorf("gd: Reference: len(we) = %d, want dPrime*C = %d", len(we), dPrime*C)
	case cfg.Steps < 0:
		return fmt.Errorf("gd: Reference: cfg.Steps = %d, want >= 0", cfg.Steps)
	case cfg.Steps > bounds.MaxUnits:
		return fmt.Errorf("gd: Reference: cfg.Steps = %d, want at most %d (the GD models' limit of steps, internal/bounds.MaxUnits)", cfg.Steps, bounds.MaxUnits)
	case math.IsNaN(cfg.Alpha) || math.IsInf(cfg.Alpha, 0):
		return fmt.Errorf("gd: Reference: cfg.Alpha = %v, want a finite value", cfg.Alpha)
	}
	if err := bounds.Elements(bounds.Term{What: "B·T·d (x)", Dims: []int{B, T, d}},
		bounds.Term{What: "2·(cfg.Steps+1)·B·T·dPrime (F and E of every step)", Dims: []int{2, cfg.Steps + 1, B, T, dPrime},
			Tensor: "B·T·dPrime", TensorDims: []int{B, T, dPrime}}); err != nil {
		return fmt.Errorf("gd: Reference: %w", err)
	}
	if cfg.KernelFunc != nil {
		if cfg.Kernel != "" {
			return fmt.Errorf("gd: Reference: cfg.Kernel = %q and cfg.KernelFunc are both set, want one", cfg.Kernel)
		}
	} else if err := refCheckKernel(cfg.Kernel, cfg.Gamma, "cfg.Kernel", "cfg.Gamma"); err != nil {
		return fmt.Errorf("gd: Reference: %w", err)
	}
	if err := refCheckFinite(x); err != nil {
		return fmt.Errorf("gd: Reference: x: %w", err)
	}
	if err := refCheckFinite(we); err != nil {
		return fmt.Errorf("gd: Reference: we: %w", err)
	}
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			v := y[b*T+t]
			if t == T-1 {
				if v < -1 || v >= C {
					return fmt.Errorf("gd: Reference: y[%d] = %d (query of context %d), want -1..%d", b*T+t, v, b, C-1)
				}
				continue
			}
			if v < 0 || v >= C {
				return fmt.Errorf("gd: Reference: y[%d] = %d (context %d, position %d), want 0..%d", b*T+t, v, b, t, C-1)
			}
		}
	}
	return nil
}

// refKernelMatrix returns κ(x_i, x_j) for every context i = 0..N-1 and every
// position j = 0..T-1 of every context b, shape (B, N, T), element (b, i, j)
// at (b*N+i)*T+j. For "softmax" each column j is normalised over i. A
// non-nil fn is the kernel instead of the named one.
func refKernelMatrix(x []float64, B, T, d int, name string, gamma float64, fn func(q, k []float64) float64) ([]float64, error) {
	N := T - 1
	K := make([]float64, B*N*T) // (B, N, T)
	row := func(b, t int) []float64 { return x[(b*T+t)*d : (b*T+t+1)*d] }
	if fn != nil {
		for b := 0; b < B; b++ {
			for i := 0; i < N; i++ {
				for j := 0; j < T; j++ {
					K[(b*N+i)*T+j] = fn(row(b, i), row(b, j))
				}
			}
		}
		if err := refCheckFinite(K); err != nil {
			return nil, fmt.Errorf("gd: Reference: cfg.KernelFunc: %w", err)
		}
		return K, nil
	}
	if name == "softmax" {
		logit := make([]float64, N)
		for b := 0; b < B; b++ {
			for j := 0; j < T; j++ {
				xj := row(b, j)
				for i := range logit {
					logit[i] = gamma * refDot(row(b, i), xj)
				}
				numeric.SoftmaxInto(logit, logit)
				for i, w := range logit {
					K[(b*N+i)*T+j] = w
				}
			}
		}
	} else {
		kern, err := RefKernel(name, gamma)
		if err != nil {
			return nil, err
		}
		for b := 0; b < B; b++ {
			for i := 0; i < N; i++ {
				for j := 0; j < T; j++ {
					K[(b*N+i)*T+j] = kern(row(b, i), row(b, j))
				}
			}
		}
	}
	if err := refCheckFinite(K); err != nil {
		return nil, fmt.Errorf("gd: Reference: kernel %q with gamma %v overflowed: %w", name, gamma, err)
	}
	return K, nil
}

// refCheckEmbedding validates the (we, dPrime, C, f) arguments of RefSoftmax and
// RefExpectedEmbedding.
func refCheckEmbedding(fn string, we []float64, dPrime, C int, f []float64) error {
	switch {
	case dPrime <= 0:
		return fmt.Errorf("gd: %s: dPrime = %d, want > 0", fn, dPrime)
	case C <= 0:
		return fmt.Errorf("gd: %s: C = %d, want > 0", fn, C)
	case len(we) != dPrime*C:
		return fmt.Errorf("gd: %s: len(we) = %d, want dPrime*C = %d", fn, len(we), dPrime*C)
	case len(f) != dPrime:
		return fmt.Errorf("gd: %s: len(f) = %d, want dPrime = %d", fn, len(f), dPrime)
	}
	if err := refCheckFinite(we); err != nil {
		return fmt.Errorf("gd: %s: we: %w", fn, err)
	}
	if err := refCheckFinite(f); err != nil {
		return fmt.Errorf("gd: %s: f: %w", fn, err)
	}
	return nil
}

// refSoftmaxLogits writes softmax_c(W_eᵀ f) into p (length C), subtracting the
// largest logit first.
func refSoftmaxLogits(we []float64, dPrime, C int, f, p []float64) {
	for c := 0; c < C; c++ {
		l := 0.0
		for r := 0; r < dPrime; r++ {
			l += we[r*C+c] * f[r]
		}
		p[c] = l
	}
	numeric.SoftmaxInto(p, p)
}

// refExpectedEmbedding writes E(w_e | f) into e (length d'), using p (length C)
// as scratch for the class probabilities.
func refExpectedEmbedding(we []float64, dPrime, C int, f, p, e []float64) {
	refSoftmaxLogits(we, dPrime, C, f, p)
	for r := 0; r < dPrime; r++ {
		s := 0.0
		for c, pc := range p {
			s += we[r*C+c] * pc
		}
		e[r] = s
	}
}

// refCheckFinite returns an error giving the index of the first NaN or ±Inf in v.
func refCheckFinite(v []float64) error {
	for i, a := range v {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return fmt.Errorf("element %d is %v, want a finite value", i, a)
		}
	}
	return nil
}

func refDot(a, b []float64) float64 {
	if len(a) != len(b) {
		panic(fmt.Sprintf("gd: kernel arguments have lengths %d and %d", len(a), len(b)))
	}
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

func refSqDist(a, b []float64) float64 {
	if len(a) != len(b) {
		panic(fmt.Sprintf("gd: kernel arguments have lengths %d and %d", len(a), len(b)))
	}
	s := 0.0
	for i, v := range a {
		u := v - b[i]
		s += u * u
	}
	return s
}
