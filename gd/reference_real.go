package gd

import (
	"fmt"
	"math"

	"github.com/gdattn/gdattn/internal/bounds"
)

// ReferenceReal runs K = cfg.Steps steps of the functional gradient descent
// of a real-valued likelihood (Appendix G), in plain Go, as the ground truth
// the real-valued GD models must match:
//
//	f_{j,0}   = 0
//	f_{j,k+1} = f_{j,k} + (α/N) Σ_{i=1..N} [y_i − E(Y | f_{i,k})] κ(x_i, x_j)
//
// for every position j = 1..N+1, the query included. For the Gaussian
// likelihood (lik nil or Gaussian()) E(Y | f) = f, the paper's update; a
// user RealLikelihood supplies E(Y | f) by its MeanValues. The kernel, the
// bias of Appendix B and the heads of Appendix H are those of cfg, as in
// [Reference] (P_m is d_y×d_y).
//
// Shapes: x is (B, T, d) with T = N+1 and y (B, T, dY), row-major; the
// query's y (the last row of each context) is never used and may be NaN.
// The result's F[k] and E[k] are f and E(Y | f) after k steps, (B, T, dY),
// and Pred is E(Y | f_K) at the query, (B, dY).
//
// ReferenceReal returns an error naming the argument on non-positive sizes
// or N = 0, wrong slice lengths, NaN or ±Inf in x, in a context y, in Alpha
// or Gamma, negative Steps or more than the GD models' limit (2^10,
// internal/bounds.MaxUnits), sizes whose f and E(Y | f) over all steps
// exceed internal/bounds' limits, an unknown kernel, or if the kernel or f
// overflows.
func ReferenceReal(x, y []float64, B, T, d, dY int, lik RealLikelihood, cfg ReferenceConfig) (*ReferenceResult, error) {
	if lik == nil {
		lik = Gaussian()
	}
	if err := refCheckRealArgs(x, y, B, T, d, dY, cfg); err != nil {
		return nil, err
	}
	N := T - 1
	heads, Ks, err := refHeadKernels(x, B, T, d, dY, cfg)
	if err != nil {
		return nil, err
	}
	res := &ReferenceResult{F: make([][]float64, cfg.Steps+1), E: make([][]float64, cfg.Steps+1)}
	scale := cfg.Alpha / float64(N)
	r := make([]float64, dY)
	f := make([]float64, B*T*dY) // (B, T, d_y), f_{·,0} = 0
	for k := 0; ; k++ {
		e := make([]float64, B*T*dY) // (B, T, d_y): E(Y | f)
		for bt := 0; bt < B*T; bt++ {
			lik.MeanValues(e[bt*dY:(bt+1)*dY], f[bt*dY:(bt+1)*dY])
		}
		if err := refCheckFinite(e); err != nil {
			return nil, fmt.Errorf("gd: ReferenceReal: E(Y|f) after %d steps: %w", k, err)
		}
		res.F[k], res.E[k] = f, e
		if k == cfg.Steps {
			break
		}
		next := append([]float64(nil), f...)
		for h, K := range Ks {
			delta := make([]float64, B*T*dY) // this head's Δf before P_m
			for b := 0; b < B; b++ {
				for i := 0; i < N; i++ {
					yi := y[(b*T+i)*dY : (b*T+i+1)*dY]
					ei := e[(b*T+i)*dY : (b*T+i+1)*dY]
					for c := range r {
						r[c] = yi[c] - ei[c] // y_i − E(Y | f_{i,k})
					}
					krow := K[(b*N+i)*T : (b*N+i+1)*T] // κ(x_i, x_j), j = 0..T-1
					for j, kij := range krow {
						dj := delta[(b*T+j)*dY : (b*T+j+1)*dY]
						for c, rc := range r {
							dj[c] += scale * kij * rc
						}
					}
				}
			}
			P := heads[h].P
			for bt := 0; bt < B*T; bt++ {
				dj := delta[bt*dY : (bt+1)*dY]
				nj := next[bt*dY : (bt+1)*dY]
				for c := 0; c < dY; c++ {
					if P == nil {
						nj[c] += dj[c]
						continue
					}
					v := 0.0
					for r2 := 0; r2 < dY; r2++ {
						v += dj[r2] * P[r2*dY+c]
					}
					nj[c] += v
				}
			}
		}
		if err := refCheckFinite(next); err != nil {
			return nil, fmt.Errorf("gd: ReferenceReal: f after %d steps: %w", k+1, err)
		}
		f = next
	}
	res.Pred = make([]float64, B*dY)
	eK := res.E[cfg.Steps]
	for b := 0; b < B; b++ {
		copy(res.Pred[b*dY:(b+1)*dY], eK[(b*T+N)*dY:(b*T+N+1)*dY])
	}
	return res, nil
}

// refCheckRealArgs validates the arguments of ReferenceReal.
func refCheckRealArgs(x, y []float64, B, T, d, dY int, cfg ReferenceConfig) error {
	switch {
	case B <= 0:
		return fmt.Errorf("gd: ReferenceReal: B = %d, want > 0", B)
	case T <= 1:
		return fmt.Errorf("gd: ReferenceReal: T = %d gives N = T-1 = %d context positions, want N > 0", T, T-1)
	case d <= 0:
		return fmt.Errorf("gd: ReferenceReal: d = %d, want > 0", d)
	case dY <= 0:
		return fmt.Errorf("gd: ReferenceReal: dY = %d, want > 0", dY)
	case len(x) != B*T*d:
		return fmt.Errorf("gd: ReferenceReal: len(x) = %d, want B*T*d = %d", len(x), B*T*d)
	case len(y) != B*T*dY:
		return fmt.Errorf("gd: ReferenceReal: len(y) = %d, want B*T*dY = %d", len(y), B*T*dY)
	case cfg.Steps < 0:
		return fmt.Errorf("gd: ReferenceReal: cfg.Steps = %d, want >= 0", cfg.Steps)
	case cfg.Steps > bounds.MaxUnits:
		return fmt.Errorf("gd: ReferenceReal: cfg.Steps = %d, want at most %d (the GD models' limit of steps, internal/bounds.MaxUnits)", cfg.Steps, bounds.MaxUnits)
	case math.IsNaN(cfg.Alpha) || math.IsInf(cfg.Alpha, 0):
		return fmt.Errorf("gd: ReferenceReal: cfg.Alpha = %v, want a finite value", cfg.Alpha)
	}
	if err := bounds.Elements(bounds.Term{What: "B·T·d (x)", Dims: []int{B, T, d}},
		bounds.Term{What: "2·(cfg.Steps+1)·B·T·dY (F and E of every step)", Dims: []int{2, cfg.Steps + 1, B, T, dY},
			Tensor: "B·T·dY", TensorDims: []int{B, T, dY}}); err != nil {
		return fmt.Errorf("gd: ReferenceReal: %w", err)
	}
	if cfg.KernelFunc != nil {
		if cfg.Kernel != "" {
			return fmt.Errorf("gd: ReferenceReal: cfg.Kernel = %q and cfg.KernelFunc are both set, want one", cfg.Kernel)
		}
	} else if err := refCheckKernel(cfg.Kernel, cfg.Gamma, "cfg.Kernel", "cfg.Gamma"); err != nil {
		return fmt.Errorf("gd: ReferenceReal: %w", err)
	}
	if err := refCheckFinite(x); err != nil {
		return fmt.Errorf("gd: ReferenceReal: x: %w", err)
	}
	for i, v := range y {
		if (i/dY)%T == T-1 {
			continue // the query's y is never used
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("gd: ReferenceReal: y[%d] (context %d, position %d) is %v, want a finite value", i, i/(T*dY), (i/dY)%T, v)
		}
	}
	return nil
}
