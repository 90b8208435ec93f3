package fewshot

import (
	"fmt"
	"math"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/internal/numeric"
	"github.com/gdattn/gdattn/losses"
)

// probeConfig sets the linear-probing reference.
type probeConfig struct {
	Steps int     // full-batch gradient steps per context (the paper: 500 epochs)
	L2    float64 // λ of the penalty (λ/2)‖W‖² (not on the bias)
}

// linearProbe fits, anew on the context of every episode of b, a multinomial
// logistic regression p(y | x) = softmax(Wᵀx + c) with cfg.Steps steps of
// full-batch gradient descent on the mean cross-entropy plus (λ/2)‖W‖², from
// W = 0, c = 0, and returns the query probabilities (b.B, b.C).
//
// The steps are exact gradient descent on W (d×C), run in the span of the
// context: W = Xᵀ A stays true for every iterate from W = 0, since the
// gradient Xᵀ G/N + λW is of that form, so A (N×C) is updated by
// A ← A − η (G/N + λA) with the Gram matrix K = XXᵀ (logits K·A + c). This
// costs O(N²C) per step instead of O(NdC). The step is η = 1/L with L the
// smoothness bound ½·λmax(K + 11ᵀ)/N + λ of the objective in (W, c).
func linearProbe(b *data.Batch, cfg probeConfig) ([]float64, error) {
	if cfg.Steps <= 0 || cfg.L2 < 0 {
		return nil, fmt.Errorf("linear probe: Steps = %d, L2 = %v, want > 0 and >= 0", cfg.Steps, cfg.L2)
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	N, d, C := b.T-1, b.D, b.C
	out := make([]float64, b.B*C)
	K := make([]float64, N*N)
	kq := make([]float64, N)
	A := make([]float64, N*C)
	G := make([]float64, N*C)
	logits := make([]float64, C)
	onesK := make([]float64, N*N)
	for e := 0; e < b.B; e++ {
		x := b.X[e*b.T*d : (e+1)*b.T*d]
		y := b.Y[e*b.T : (e+1)*b.T]
		for i := 0; i < N; i++ {
			for j := i; j < N; j++ {
				s := dot(x[i*d:(i+1)*d], x[j*d:(j+1)*d])
				K[i*N+j], K[j*N+i] = s, s
			}
			kq[i] = dot(x[N*d:(N+1)*d], x[i*d:(i+1)*d])
		}
		for i := range onesK {
			onesK[i] = K[i] + 1
		}
		L := 0.5*maxEigen(onesK, N)/float64(N) + cfg.L2
		eta := 1 / L
		clear(A)
		var c [64]float64 // bias, C <= 64
		if C > len(c) {
			return nil, fmt.Errorf("linear probe: C = %d, want <= %d", C, len(c))
		}
		for step := 0; step < cfg.Steps; step++ {
			// G = softmax(K A + c) − onehot(y), row by row.
			var gc [64]float64
			for i := 0; i < N; i++ {
				for k := 0; k < C; k++ {
					s := c[k]
					for j := 0; j < N; j++ {
						s += K[i*N+j] * A[j*C+k]
					}
					logits[k] = s
				}
				numeric.SoftmaxInto(logits, logits)
				for k := 0; k < C; k++ {
					g := logits[k]
					if k == y[i] {
						g--
					}
					G[i*C+k] = g
					gc[k] += g
				}
			}
			for i := range A {
				A[i] -= eta * (G[i]/float64(N) + cfg.L2*A[i])
			}
			for k := 0; k < C; k++ {
				c[k] -= eta * gc[k] / float64(N)
			}
		}
		for k := 0; k < C; k++ {
			s := c[k]
			for j := 0; j < N; j++ {
				s += kq[j] * A[j*C+k]
			}
			logits[k] = s
		}
		numeric.SoftmaxInto(logits, logits)
		copy(out[e*C:(e+1)*C], logits)
	}
	return out, nil
}

// scoreProbs returns top-1 accuracy and NLL of query probabilities against
// the query labels of b.
func scoreProbs(b *data.Batch, probs []float64) (top1, nll float64, err error) {
	labels := make([]int, b.B)
	for i := range labels {
		labels[i] = b.Y[i*b.T+b.T-1]
	}
	if top1, err = losses.Top1(probs, labels, b.C); err != nil {
		return 0, 0, err
	}
	nll, err = losses.NLL(probs, labels, b.C)
	return top1, nll, err
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// maxEigen returns the largest eigenvalue of the symmetric positive
// semi-definite n×n matrix m, by power iteration (an overestimate by at most
// 1% is harmless here: it only shortens the step).
func maxEigen(m []float64, n int) float64 {
	v := make([]float64, n)
	w := make([]float64, n)
	for i := range v {
		v[i] = 1 / math.Sqrt(float64(n)) * (1 + 0.01*float64(i%7))
	}
	lam := 0.0
	for it := 0; it < 100; it++ {
		for i := 0; i < n; i++ {
			w[i] = dot(m[i*n:(i+1)*n], v)
		}
		nrm := math.Sqrt(dot(w, w))
		if nrm == 0 {
			return 0
		}
		prev := lam
		lam = nrm / math.Sqrt(dot(v, v))
		for i := range v {
			v[i] = w[i] / nrm
		}
		if it > 5 && math.Abs(lam-prev) < 1e-6*lam {
			break
		}
	}
	return lam * 1.01
}
