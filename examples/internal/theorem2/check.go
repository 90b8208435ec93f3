package theorem2

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/losses"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
	G "gorgonia.org/gorgonia"
)

// Tasks: the quadrant task of Appendix F under several covariate laws.
const (
	// TaskRotated: x ~ N(0, I₂) and each context's quadrant axes turned by
	// a uniform angle, so the law of the task is invariant under all of
	// O(2) (Theorem 2's Assumptions 3-4).
	TaskRotated = "rotated"
	// TaskSquare: x ~ N(0, I₂), axis-aligned quadrants: invariant under the
	// eight symmetries of the square only, which is enough for d = 2 (they
	// act irreducibly on R², so averaging UᵀRU over them gives (tr R/2)·I,
	// the one fact the proof uses).
	TaskSquare = "square"
	// TaskUniform: the paper's x ~ U(−1, 1)², axis-aligned: the same
	// symmetries as TaskSquare.
	TaskUniform = "uniform"
	// TaskAnisotropic is a negative control: TaskSquare with x₂ scaled by
	// Config.Aniso (quadrants, hence labels, unchanged). Only the
	// reflections x_i → −x_i remain, which allow a diagonal, traceless
	// gradient in the x×x blocks: the check must detect it.
	TaskAnisotropic = "anisotropic"
)

// Tasks are the tasks' names.
var Tasks = []string{TaskRotated, TaskSquare, TaskUniform, TaskAnisotropic}

// problem is the task the check runs on and its sampler.
type problem struct {
	name  string
	task  *data.Quadrant
	aniso float64
	// symmetry describes the task's symmetry group in words.
	symmetry string
}

func newProblem(name string, N int, aniso float64, seed uint64) (*problem, error) {
	cfg := data.QuadrantConfig{N: N, Covariates: data.CovariatesGaussian}
	p := &problem{name: name, aniso: 1}
	switch name {
	case TaskRotated:
		cfg.Rotate = true
		p.symmetry = "O(2): all rotations and reflections of x"
	case TaskSquare:
		p.symmetry = "the 8 symmetries of the square (irreducible on R²)"
	case TaskUniform:
		cfg.Covariates = data.CovariatesUniform
		p.symmetry = "the 8 symmetries of the square (irreducible on R²)"
	case TaskAnisotropic:
		if !(aniso > 0) || aniso == 1 {
			return nil, fmt.Errorf("-aniso %v: want a positive scale other than 1", aniso)
		}
		p.aniso = aniso
		p.symmetry = "only x₁ → −x₁ and x₂ → −x₂ (a negative control)"
	default:
		return nil, fmt.Errorf("-task %q: want %s, %s, %s or %s", name, TaskRotated, TaskSquare, TaskUniform, TaskAnisotropic)
	}
	t, err := data.NewQuadrant(cfg, seed)
	if err != nil {
		return nil, err
	}
	p.task = t
	return p, nil
}

// sample draws B contexts.
func (p *problem) sample(B int, rng *rand.Rand) (*data.Batch, error) {
	b, err := p.task.Sample(B, rng)
	if err != nil {
		return nil, err
	}
	if p.aniso != 1 {
		for i := 1; i < len(b.X); i += 2 {
			b.X[i] *= p.aniso
		}
	}
	return b, nil
}

// scalarFit is the result of fitting the GD model's scalars α and g with
// W_e fixed at the task's true W_e.
type scalarFit struct {
	Alpha, Gamma float64
	// AdamSteps minibatches of AdamBatch fresh contexts, then NewtonIters
	// Newton steps on a fixed sample of NewtonContexts contexts, with the
	// Hessian from its first HessianContexts.
	AdamSteps, AdamBatch, NewtonIters, NewtonContexts, HessianContexts int
	// GradBefore and GradAfter are the gradient of the loss on the fixed
	// sample (with respect to log α, log g) before and after Newton, with
	// its Monte Carlo standard error SE.
	GradBefore, GradAfter, SE []float64
	Loss                      float64
	Seconds                   float64
}

// fitScalars trains the GD model's log α and log g (W_e fixed to the
// true one): Adam on fresh minibatches, then Newton steps on a fixed sample
// of newtonBatches minibatches, with a finite-difference Hessian computed
// once on its first hessBatches minibatches, so that the GD construction
// sits at the optimum of the step and kernel scale before the gradient is
// checked on an independent sample.
func fitScalars(p *problem, kern string, N, adamSteps, batch, newtonIters, newtonBatches, hessBatches int, seed uint64, progress io.Writer) (scalarFit, error) {
	start := time.Now()
	fit := scalarFit{AdamSteps: adamSteps, AdamBatch: batch, NewtonIters: newtonIters, NewtonContexts: newtonBatches * batch, HessianContexts: min(hessBatches, newtonBatches) * batch}
	s, err := graph.NewScope(graph.Float64, seed)
	if err != nil {
		return fit, err
	}
	gm, err := gd.NewModel(s, gd.Config{D: 2, DPrime: p.task.Config.DPrime, C: p.task.Config.C, N: N, Form: gd.OneStep, Kernel: layers.Builtin(kern, 1)}, batch)
	if err != nil {
		return fit, err
	}
	we, _ := s.Lookup("we")
	if err := graph.SetValue(we, p.task.We); err != nil {
		return fit, err
	}
	var params G.Nodes
	for _, name := range []string{"log_alpha", "kernel/log_gamma"} {
		if n, ok := s.Lookup(name); ok {
			params = append(params, n)
		}
	}
	loss, err := losses.CrossEntropy(gm.Logits, gm.Target)
	if err != nil {
		return fit, err
	}
	vm, err := graph.NewMachine(s, loss, graph.MachineOptions{Params: params})
	if err != nil {
		return fit, err
	}
	defer vm.Close()
	tr, err := train.NewTrainer(vm, train.Config{Schedule: train.WarmupCosine(0.05, 0, adamSteps, 1e-3),
		Progress: progress, Total: adamSteps, Label: "fit α, g (" + kern + ")", ProgressEvery: max(1, adamSteps/5)})
	if err != nil {
		return fit, err
	}
	rng := rand.New(rand.NewPCG(seed, 11))
	for i := 0; i < adamSteps; i++ {
		b, err := p.sample(batch, rng)
		if err != nil {
			return fit, err
		}
		if err := gm.Feed(b.X, b.Y); err != nil {
			return fit, err
		}
		if _, err := tr.Step(); err != nil {
			return fit, err
		}
	}
	// Newton on a fixed sample.
	fixed := make([]*data.Batch, newtonBatches)
	frng := rand.New(rand.NewPCG(seed, 12))
	for i := range fixed {
		if fixed[i], err = p.sample(batch, frng); err != nil {
			return fit, err
		}
	}
	theta := make([]float64, len(params))
	for i, n := range params {
		if theta[i], err = graph.Scalar(n); err != nil {
			return fit, err
		}
	}
	// grad returns the mean gradient over the first nb minibatches of the
	// fixed sample at th, its standard error and the mean loss.
	grad := func(th []float64, nb int) ([]float64, []float64, float64, error) {
		for i, n := range params {
			if err := graph.SetValue(n, th[i:i+1]); err != nil {
				return nil, nil, 0, err
			}
		}
		sum, sq := make([]float64, len(params)), make([]float64, len(params))
		lsum := 0.0
		for _, b := range fixed[:nb] {
			if err := gm.Feed(b.X, b.Y); err != nil {
				return nil, nil, 0, err
			}
			if err := vm.Run(); err != nil {
				return nil, nil, 0, err
			}
			l, err := graph.Scalar(loss)
			if err != nil {
				return nil, nil, 0, err
			}
			lsum += l
			for i, n := range params {
				g, err := graph.GradValues(n)
				if err != nil {
					return nil, nil, 0, err
				}
				sum[i] += g[0]
				sq[i] += g[0] * g[0]
			}
		}
		k := float64(nb)
		se := make([]float64, len(params))
		for i := range sum {
			sum[i] /= k
			se[i] = math.Sqrt(math.Max(0, sq[i]/k-sum[i]*sum[i]) / (k - 1))
		}
		return sum, se, lsum / k, nil
	}
	g0, se, _, err := grad(theta, newtonBatches)
	if err != nil {
		return fit, err
	}
	fit.GradBefore, fit.SE = g0, se
	// Hessian by central differences of the gradient, on the first
	// hessBatches minibatches (common random numbers make it smooth).
	const h = 1e-3
	hb := min(hessBatches, newtonBatches)
	n := len(theta)
	H := make([]float64, n*n)
	for j := 0; j < n; j++ {
		tp := append([]float64(nil), theta...)
		tm := append([]float64(nil), theta...)
		tp[j] += h
		tm[j] -= h
		gp, _, _, err := grad(tp, hb)
		if err != nil {
			return fit, err
		}
		gmn, _, _, err := grad(tm, hb)
		if err != nil {
			return fit, err
		}
		for i := 0; i < n; i++ {
			H[i*n+j] = (gp[i] - gmn[i]) / (2 * h)
		}
	}
	g := g0
	for it := 0; it < newtonIters; it++ {
		step, ok := solveSym(H, g)
		if !ok {
			break // not positive definite: keep Adam's point
		}
		for i := range theta {
			theta[i] -= step[i]
		}
		if it == newtonIters-1 {
			break
		}
		if g, _, _, err = grad(theta, newtonBatches); err != nil {
			return fit, err
		}
	}
	g1, _, l1, err := grad(theta, newtonBatches)
	if err != nil {
		return fit, err
	}
	fit.GradAfter, fit.Loss = g1, l1
	fit.Alpha = math.Exp(theta[0])
	fit.Gamma = 1
	if len(theta) > 1 {
		fit.Gamma = math.Exp(theta[1])
	}
	fit.Seconds = time.Since(start).Seconds()
	return fit, nil
}

// solveSym solves H x = g for a symmetrised 1×1 or 2×2 H, reporting false
// unless H is positive definite.
func solveSym(H, g []float64) ([]float64, bool) {
	switch len(g) {
	case 1:
		if !(H[0] > 0) {
			return nil, false
		}
		return []float64{g[0] / H[0]}, true
	case 2:
		a, b, d := H[0], (H[1]+H[2])/2, H[3]
		det := a*d - b*b
		if !(a > 0 && det > 0) {
			return nil, false
		}
		return []float64{(d*g[0] - b*g[1]) / det, (a*g[1] - b*g[0]) / det}, true
	}
	return nil, false
}

// gradModel is a single-layer TF started at the GD construction, with a
// gradient machine over all its parameters.
type gradModel struct {
	s      *graph.Scope
	m      *tf.Model
	vm     *graph.Machine
	loss   *G.Node
	att    []*G.Node // attention parameters, in layout order
	other  []*G.Node // W_e and R
	lay    layout    // attention parameters
	theta0 [][]float64
}

// newGradModel builds the TF at the GD construction with step α and
// kernel parameter g, W_e set to we (the task's).
func newGradModel(kern string, d, dp, C, N, batch int, alpha, gamma float64, we []float64) (*gradModel, error) {
	s, err := graph.NewScope(graph.Float64, 1)
	if err != nil {
		return nil, err
	}
	start, err := gd.Construction(gd.OneStep, 1, d, dp, N, alpha, 100)
	if err != nil {
		return nil, err
	}
	m, err := tf.NewModel(s, tf.Config{D: d, DPrime: dp, C: C, N: N, Kernel: layers.Builtin(kern, gamma), Init: start}, batch)
	if err != nil {
		return nil, err
	}
	wn, _ := s.Lookup("we")
	if err := graph.SetValue(wn, we); err != nil {
		return nil, err
	}
	loss, err := losses.CrossEntropy(m.Logits, m.Target)
	if err != nil {
		return nil, err
	}
	g := &gradModel{s: s, m: m, loss: loss}
	for _, p := range s.Params() {
		short := p.Name()[strings.LastIndex(p.Name(), "/")+1:]
		switch short {
		case "log_gamma", "wq", "wk", "wv", "wo":
			r, c := 1, 1
			if sh := p.Shape(); len(sh) == 2 {
				r, c = sh[0], sh[1]
			}
			g.lay.add(short, r, c)
			g.att = append(g.att, p)
			v, err := graph.Values(p)
			if err != nil {
				return nil, err
			}
			g.theta0 = append(g.theta0, v)
		default:
			g.other = append(g.other, p)
		}
	}
	if g.vm, err = graph.NewMachine(s, loss, graph.MachineOptions{}); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *gradModel) close() { g.vm.Close() }

// set moves the attention parameters to θ₀ + delta (delta nil: θ₀).
func (g *gradModel) set(delta [][]float64) error {
	for k, p := range g.att {
		v := append([]float64(nil), g.theta0[k]...)
		if delta != nil {
			for i := range v {
				v[i] += delta[k][i]
			}
		}
		if err := graph.SetValue(p, v); err != nil {
			return err
		}
	}
	return nil
}

// sampleGrads returns the gradient of the loss with respect to the
// attention parameters (flat, layout order) and to W_e and R (flat,
// concatenated) on nb independent minibatches drawn from rng, and the mean
// loss.
func (g *gradModel) sampleGrads(p *problem, nb int, rng *rand.Rand) (att, other [][]float64, meanLoss float64, err error) {
	for k := 0; k < nb; k++ {
		b, err := p.sample(g.m.Batch, rng)
		if err != nil {
			return nil, nil, 0, err
		}
		if err := g.m.Feed(b.X, b.Y); err != nil {
			return nil, nil, 0, err
		}
		if err := g.vm.Run(); err != nil {
			return nil, nil, 0, err
		}
		l, err := graph.Scalar(g.loss)
		if err != nil {
			return nil, nil, 0, err
		}
		meanLoss += l / float64(nb)
		var a, o []float64
		for _, n := range g.att {
			v, err := graph.GradValues(n)
			if err != nil {
				return nil, nil, 0, err
			}
			a = append(a, v...)
		}
		for _, n := range g.other {
			v, err := graph.GradValues(n)
			if err != nil {
				return nil, nil, 0, err
			}
			o = append(o, v...)
		}
		att, other = append(att, a), append(other, o)
	}
	return att, other, meanLoss, nil
}

// perturbation returns a random direction scaled so that every attention
// matrix moves by eps·‖W₀‖_F (Gaussian entries, all of them, the
// structural zeros included) and log g by ±eps.
func (g *gradModel) perturbation(eps float64, rng *rand.Rand) [][]float64 {
	out := make([][]float64, len(g.theta0))
	for k, th := range g.theta0 {
		v := make([]float64, len(th))
		norm, scale := 0.0, 0.0
		for i := range v {
			v[i] = rng.NormFloat64()
			norm += v[i] * v[i]
			scale += th[i] * th[i]
		}
		scale = math.Sqrt(scale)
		if len(th) == 1 {
			scale = 1 // log g: an additive (relative in g) move
		}
		for i := range v {
			v[i] *= eps * scale / math.Sqrt(norm)
		}
		out[k] = v
	}
	return out
}
