package fewshot

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/internal/numeric"
)

// randomBatch returns B episodes of N = ways*shots context points in d
// dimensions: class means μ_c ~ N(0, sep²I), points μ_c + N(0, I).
func randomBatch(B, ways, shots, d int, sep float64, seed uint64) *data.Batch {
	rng := rand.New(rand.NewPCG(seed, seed))
	T := ways*shots + 1
	b := &data.Batch{B: B, T: T, D: d, C: ways, X: make([]float64, B*T*d), Y: make([]int, B*T)}
	for e := 0; e < B; e++ {
		mu := make([]float64, ways*d)
		for i := range mu {
			mu[i] = sep * rng.NormFloat64()
		}
		for t := 0; t < T; t++ {
			y := t % ways
			if t == T-1 {
				y = rng.IntN(ways)
			}
			b.Y[e*T+t] = y
			for k := 0; k < d; k++ {
				b.X[(e*T+t)*d+k] = mu[y*d+k] + rng.NormFloat64()
			}
		}
	}
	return b
}

// probeReference is gradient descent on W (d×C) and c directly, the
// definition the kernel form of linearProbe must reproduce.
func probeReference(b *data.Batch, cfg probeConfig) []float64 {
	N, d, C := b.T-1, b.D, b.C
	out := make([]float64, b.B*C)
	for e := 0; e < b.B; e++ {
		x := b.X[e*b.T*d : (e+1)*b.T*d]
		y := b.Y[e*b.T : (e+1)*b.T]
		// Step size from the same bound, computed on the Gram matrix.
		K := make([]float64, N*N)
		for i := 0; i < N; i++ {
			for j := 0; j < N; j++ {
				K[i*N+j] = dot(x[i*d:(i+1)*d], x[j*d:(j+1)*d]) + 1
			}
		}
		eta := 1 / (0.5*maxEigen(K, N)/float64(N) + cfg.L2)
		W := make([]float64, d*C)
		c := make([]float64, C)
		p := make([]float64, C)
		for s := 0; s < cfg.Steps; s++ {
			gW := make([]float64, d*C)
			gc := make([]float64, C)
			for i := 0; i < N; i++ {
				for k := 0; k < C; k++ {
					p[k] = c[k]
					for a := 0; a < d; a++ {
						p[k] += x[i*d+a] * W[a*C+k]
					}
				}
				numeric.SoftmaxInto(p, p)
				p[y[i]]--
				for k := 0; k < C; k++ {
					gc[k] += p[k] / float64(N)
					for a := 0; a < d; a++ {
						gW[a*C+k] += x[i*d+a] * p[k] / float64(N)
					}
				}
			}
			for i := range W {
				W[i] -= eta * (gW[i] + cfg.L2*W[i])
			}
			for k := range c {
				c[k] -= eta * gc[k]
			}
		}
		for k := 0; k < C; k++ {
			p[k] = c[k]
			for a := 0; a < d; a++ {
				p[k] += x[N*d+a] * W[a*C+k]
			}
		}
		numeric.SoftmaxInto(p, p)
		copy(out[e*C:], p)
	}
	return out
}

func TestLinearProbeMatchesWeightSpaceGD(t *testing.T) {
	for _, tt := range []struct {
		name string
		d    int
		l2   float64
	}{{"d < N", 3, 0}, {"d > N", 40, 1e-2}} {
		t.Run(tt.name, func(t *testing.T) {
			b := randomBatch(4, 3, 4, tt.d, 1, 1)
			cfg := probeConfig{Steps: 60, L2: tt.l2}
			got, err := linearProbe(b, cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := probeReference(b, cfg)
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-10 {
					t.Fatalf("probability %d: kernel form %v, weight space %v", i, got[i], want[i])
				}
			}
		})
	}
}

func TestLinearProbeLearns(t *testing.T) {
	easy := randomBatch(40, 5, 10, 8, 3, 2) // well separated classes
	probs, err := linearProbe(easy, probeConfig{Steps: 500, L2: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	top1, nll, err := scoreProbs(easy, probs)
	if err != nil {
		t.Fatal(err)
	}
	if top1 < 0.95 || nll > 0.3 {
		t.Errorf("separated classes: top-1 %v, NLL %v, want >= 0.95 and <= 0.3", top1, nll)
	}
	noise := randomBatch(150, 5, 4, 8, 0, 3) // no signal: chance level
	probs, _ = linearProbe(noise, probeConfig{Steps: 500, L2: 1e-3})
	if top1, _, _ := scoreProbs(noise, probs); top1 > 0.35 {
		t.Errorf("no signal: top-1 %v, want about 0.2", top1)
	}
	if _, err := linearProbe(easy, probeConfig{Steps: 0}); err == nil {
		t.Error("Steps = 0: no error")
	}
	if _, err := linearProbe(easy, probeConfig{Steps: 1, L2: -1}); err == nil {
		t.Error("L2 < 0: no error")
	}
}
