package regression

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
)

// spec is one model to train: a GD model with the Gaussian likelihood
// ("gd", Depth = GD steps) or a Trained TF regressor ("tf", Depth =
// layers), with its kernel.
type spec struct {
	Model  string `json:"model"` // "gd" or "tf"
	Depth  int    `json:"depth"`
	Kernel string `json:"kernel"`
}

func (s spec) String() string {
	if s.Model == "gd" {
		return fmt.Sprintf("GD K=%d %s", s.Depth, s.Kernel)
	}
	return fmt.Sprintf("TF layers=%d %s", s.Depth, s.Kernel)
}

// kernelSpec is the kernel of a model: the linear kernel (no parameter),
// RBF with g learned from 0.1 (x ~ U(−1, 1)^10 puts ‖x_i − x_j‖² near 6.7,
// where g = 1 would make every weight vanish), softmax with g learned from 1.
func kernelSpec(name string) (layers.KernelSpec, error) {
	switch name {
	case "linear":
		return layers.Linear(), nil
	case "rbf":
		return layers.RBF(0.1), nil
	case "softmax":
		return layers.Softmax(1), nil
	}
	return nil, fmt.Errorf("unknown kernel %q", name)
}

// fitted is a trained model with its runner (for predictions and
// sensitivities) and its test metrics.
type fitted struct {
	spec   spec
	model  train.Model
	runner *train.Runner
	met    train.Metrics
	alpha  float64 // learned α (GD models)
}

// trainOne builds s in a scope seeded with seed, trains it on trainSet and
// evaluates it on testSet.
func trainOne(s spec, dt string, dx, dy, n int, trainSet, testSet *data.Batch, tc trainCfg, seed uint64, progress io.Writer) (*fitted, error) {
	dtype, err := graph.ParseDtype(dt)
	if err != nil {
		return nil, err
	}
	sc, err := graph.NewScope(dtype, seed)
	if err != nil {
		return nil, err
	}
	kern, err := kernelSpec(s.Kernel)
	if err != nil {
		return nil, err
	}
	var m train.Model
	switch s.Model {
	case "gd":
		m, err = gd.NewModel(sc, gd.Config{D: dx, DPrime: dy, N: n, Blocks: s.Depth, Kernel: kern, Likelihood: gd.Gaussian()}, tc.Batch)
	case "tf":
		m, err = tf.NewRegressor(sc, tf.RegressorConfig{D: dx, DY: dy, N: n, Layers: s.Depth, Kernel: kern, WInit: tfInit}, tc.Batch)
	default:
		err = fmt.Errorf("unknown model %q", s.Model)
	}
	if err != nil {
		return nil, err
	}
	r, err := train.NewRunner(m, train.RunnerConfig{Optim: train.Config{LR: tc.LR, Progress: progress, Label: s.String(),
		Total: train.Steps(trainSet.B, tc.Batch, tc.Epochs)}})
	if err != nil {
		return nil, err
	}
	if err := r.Fit(trainSet, train.FitConfig{Epochs: tc.Epochs, Seed: seed}); err != nil {
		r.Close()
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	met, err := r.Evaluate(testSet)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	f := &fitted{spec: s, model: m, runner: r, met: met, alpha: math.NaN()}
	if g, ok := m.(*gd.Model); ok {
		a, err := graph.Values(g.Alpha)
		if err != nil {
			r.Close()
			return nil, err
		}
		f.alpha = a[0]
	}
	return f, nil
}

// tfInit initialises the Trained TF's matrices: N(0, 0.02²). Linear
// attention is a cubic function of its weights, and with the default
// Glorot initialisation (entries near ±0.4 for 12×12 matrices) the 2- and
// 3-layer models diverge at the first steps (measured: test MSE 10^7 and
// 10^30); von Oswald et al. also start from small weights.
var tfInit = graph.Normal(0.02)

// trainCfg is the optimisation of every model: Adam with learning rate LR,
// Epochs passes over the training contexts in minibatches of Batch.
type trainCfg struct {
	Epochs int     `json:"epochs"`
	Batch  int     `json:"batch"`
	LR     float64 `json:"lr"`
}

// sensitivities returns ∂ŷ/∂x_q of every context of b, (B, d_y, d)
// row-major, by central differences of step h through the runner's
// predictions (each coordinate of every query moved at once: the contexts
// are independent).
func sensitivities(r *train.Runner, b *data.Batch, h float64) ([]float64, error) {
	B, T, d, dy := b.B, b.T, b.D, b.DY
	out := make([]float64, B*dy*d)
	moved := *b
	moved.X = append([]float64(nil), b.X...)
	for c := 0; c < d; c++ {
		var plus, minus []float64
		for _, sign := range []float64{1, -1} {
			for i := 0; i < B; i++ {
				q := (i*T+T-1)*d + c
				moved.X[q] = b.X[q] + sign*h
			}
			p, err := r.Predict(&moved)
			if err != nil {
				return nil, err
			}
			if sign > 0 {
				plus = p
			} else {
				minus = p
			}
		}
		for i := 0; i < B; i++ {
			moved.X[(i*T+T-1)*d+c] = b.X[(i*T+T-1)*d+c]
			for r := 0; r < dy; r++ {
				out[(i*dy+r)*d+c] = (plus[i*dy+r] - minus[i*dy+r]) / (2 * h)
			}
		}
	}
	return out, nil
}

// compare returns von Oswald et al.'s two measures between models a and b
// on the contexts of set: the mean over contexts of the L2 distance
// ‖ŷ_a − ŷ_b‖ of the query predictions, and the mean cosine similarity of
// the sensitivities ∂ŷ/∂x_q (flattened over d_y × d).
func compare(a, b *train.Runner, set *data.Batch) (dist, cos float64, err error) {
	pa, err := a.Predict(set)
	if err != nil {
		return 0, 0, err
	}
	pb, err := b.Predict(set)
	if err != nil {
		return 0, 0, err
	}
	sa, err := sensitivities(a, set, 1e-4)
	if err != nil {
		return 0, 0, err
	}
	sb, err := sensitivities(b, set, 1e-4)
	if err != nil {
		return 0, 0, err
	}
	dy, w := set.DY, set.DY*set.D
	for i := 0; i < set.B; i++ {
		s := 0.0
		for r := 0; r < dy; r++ {
			e := pa[i*dy+r] - pb[i*dy+r]
			s += e * e
		}
		dist += math.Sqrt(s)
		var ab, aa, bb float64
		for j := i * w; j < (i+1)*w; j++ {
			ab += sa[j] * sb[j]
			aa += sa[j] * sa[j]
			bb += sb[j] * sb[j]
		}
		cos += ab / math.Sqrt(aa*bb)
	}
	n := float64(set.B)
	return dist / n, cos / n, nil
}

// optimalAlpha is the one-step learning rate α* that minimises the
// expected query MSE of one functional GD step with the linear kernel from
// f = 0, ŷ = α·u with u = (1/N) Σ_i y_i x_i·x_q, over the task
// distribution of data.LinearRegression (x ~ U(−1, 1)^d, w ~ N(0, I),
// y = w·x + ε, ε ~ N(0, σ²)): α* = E[u y_q] / E[u²], with
//
//	E[u y_q] = E[x_qᵀ S x_q] = d/9,                       S = XᵀX/N
//	E[u²]    = E[x_qᵀ S² x_q] + σ² d/(9N) = (1/3) E[tr S²] + σ² d/(9N)
//	E[tr S²] = (1/N)(d/5 + d(d−1)/9) + ((N−1)/N)(d/9)
//
// (E x_k² = 1/3, E x_k⁴ = 1/5); it also returns the MSE at α*,
// E[y_q²] − E[u y_q]²/E[u²] with E[y_q²] = d/3 + σ².
func optimalAlpha(d, n int, sigma float64) (alpha, mse float64) {
	D, N := float64(d), float64(n)
	trS2 := (D/5+D*(D-1)/9)/N + (N-1)/N*D/9
	uy := D / 9
	uu := trS2/3 + sigma*sigma*D/(9*N)
	return uy / uu, D/3 + sigma*sigma - uy*uy/uu
}

// optimalAlphaMC estimates α* and its MSE by Monte Carlo over the task
// distribution itself (samples contexts from task, independently of the
// closed form): α* = Σ u y_q / Σ u².
func optimalAlphaMC(task *data.LinearRegression, samples int, seed uint64) (alpha, mse float64, err error) {
	rng := rand.New(rand.NewPCG(seed, 77))
	var acc alphaAcc
	for done := 0; done < samples; {
		b, err := task.Sample(min(4096, samples-done), rng)
		if err != nil {
			return 0, 0, err
		}
		acc.add(b)
		done += b.B
	}
	a, m := acc.result()
	return a, m, nil
}

// alphaAcc accumulates Σ u y_q, Σ u² and Σ y_q² over contexts.
type alphaAcc struct{ uy, uu, yy, n float64 }

func (a *alphaAcc) add(b *data.Batch) {
	T, d, dy := b.T, b.D, b.DY
	for i := 0; i < b.B; i++ {
		xq := b.X[(i*T+T-1)*d : (i*T+T)*d]
		for r := 0; r < dy; r++ {
			u := 0.0
			for j := 0; j < T-1; j++ {
				u += b.R[(i*T+j)*dy+r] * dot(b.X[(i*T+j)*d:(i*T+j+1)*d], xq)
			}
			u /= float64(T - 1)
			yq := b.R[(i*T+T-1)*dy+r]
			a.uy += u * yq
			a.uu += u * u
			a.yy += yq * yq
			a.n++
		}
	}
}

// result is the minimiser Σ u y / Σ u² and the mean squared error there.
func (a *alphaAcc) result() (alpha, mse float64) {
	return a.uy / a.uu, (a.yy - a.uy*a.uy/a.uu) / a.n
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// saveGD saves a GD model's checkpoint to the directory dir.
func saveGD(f *fitted, dir string) (string, error) {
	g, ok := f.model.(*gd.Model)
	if !ok {
		return "", fmt.Errorf("%s is not a GD model", f.spec)
	}
	if err := f.runner.Trainer().SyncParams(); err != nil {
		return "", err
	}
	if err := g.Save(dir); err != nil {
		return "", err
	}
	return dir, nil
}
