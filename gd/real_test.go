package gd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/layers"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// realBatch draws x ~ U(-1, 1) and y ~ N(0, 1) (the query's y too), seeded.
func realBatch(seed uint64, B, T, d, dy int) ([]float64, []float64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	x := make([]float64, B*T*d)
	for i := range x {
		x[i] = 2*rng.Float64() - 1
	}
	y := make([]float64, B*T*dy)
	for i := range y {
		y[i] = rng.NormFloat64()
	}
	return x, y
}

// runReal builds a real-valued model in dt, feeds it and runs one forward
// pass with tracing (so that every F[k] can be read).
func runReal(t *testing.T, dt tensor.Dtype, cfg Config, B int, x, y []float64) *Model {
	t.Helper()
	s, err := graph.NewScope(dt, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(s, cfg, B)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.FeedReal(x, y); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(s.Graph(), G.TraceExec())
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	return m
}

// refHeadsOf reads the heads' Λ_m and P_m of m for the reference.
func refHeadsOf(t *testing.T, m *Model) []RefHead {
	t.Helper()
	var out []RefHead
	for h := 0; h < m.Cfg.Heads && m.Cfg.Heads > 1; h++ {
		lam, ok1 := m.Scope().Lookup(fmt.Sprintf("head%d/lambda", h))
		p, ok2 := m.Scope().Lookup(fmt.Sprintf("head%d/p", h))
		if !ok1 || !ok2 {
			t.Fatalf("head %d: lambda or p missing", h)
		}
		lv, _ := graph.Values(lam)
		pv, _ := graph.Values(p)
		out = append(out, RefHead{Lambda: lv, P: pv})
	}
	return out
}

// realWorst is the largest |f_model − f_ref| over all steps and positions,
// and over the prediction.
func realWorst(t *testing.T, m *Model, ref *ReferenceResult) float64 {
	t.Helper()
	worst := 0.0
	for k := range m.F {
		got, _ := graph.Values(m.F[k])
		worst = math.Max(worst, maxAbsDiff(got, ref.F[k]))
	}
	pred, _ := graph.Values(m.Logits)
	return math.Max(worst, maxAbsDiff(pred, ref.Pred))
}

// TestGaussianMatchesReference: the Gaussian GD model (Appendix G), both the
// token-level construction (e = (x, y, f)) and the structured one, performs
// exactly the reference's functional GD for K = 1..6 steps, all five
// built-in kernels and d_y = 1 and 3 (limit 1e-10, float64).
func TestGaussianMatchesReference(t *testing.T) {
	const B, N, d = 4, 10, 10
	T := N + 1
	worstAll := 0.0
	for _, dy := range []int{1, 3} {
		for _, literal := range []bool{false, true} {
			for _, kern := range layers.KernelNames() {
				for K := 1; K <= 6; K++ {
					t.Run(fmt.Sprintf("dy=%d/literal=%v/%s/K=%d", dy, literal, kern, K), func(t *testing.T) {
						x, y := realBatch(uint64(K), B, T, d, dy)
						cfg := Config{D: d, DPrime: dy, N: N, Blocks: K, Kernel: layers.Builtin(kern, 0.7), Alpha: 0.9,
							Likelihood: Gaussian(), Literal: literal}
						m := runReal(t, graph.Float64, cfg, B, x, y)
						ref, err := ReferenceReal(x, y, B, T, d, dy, nil, ReferenceConfig{Steps: K, Alpha: 0.9, Kernel: kern, Gamma: 0.7})
						if err != nil {
							t.Fatal(err)
						}
						w := realWorst(t, m, ref)
						worstAll = math.Max(worstAll, w)
						if w > 1e-10 {
							t.Errorf("max |f_model − f_ref| = %.3g, want <= 1e-10", w)
						}
					})
				}
			}
		}
	}
	t.Logf("largest difference over all cases: %.3g", worstAll)
}

// tanhLikelihood is a user RealLikelihood: E(Y | f) = tanh(f), trained by
// the mean squared error of tanh(f). It checks that the structured
// construction uses the likelihood's mean in every step.
type tanhLikelihood struct{}

func (tanhLikelihood) Name() string                    { return "tanh" }
func (tanhLikelihood) Mean(f *G.Node) (*G.Node, error) { return G.Tanh(f) }
func (tanhLikelihood) MeanValues(dst, f []float64) {
	for i, v := range f {
		dst[i] = math.Tanh(v)
	}
}
func (l tanhLikelihood) Loss(f, y *G.Node) (*G.Node, error) {
	mu, err := l.Mean(f)
	if err != nil {
		return nil, err
	}
	d, err := G.Sub(mu, y)
	if err != nil {
		return nil, err
	}
	sq, err := G.Square(d)
	if err != nil {
		return nil, err
	}
	return G.Mean(sq)
}

// TestGaussianVariantsMatchReference: the single-step form, the bias of
// Appendix B, 2 and 3 heads (Appendix H), a user kernel and a user
// likelihood, against the reference (limit 1e-10).
func TestGaussianVariantsMatchReference(t *testing.T) {
	const B, N, d = 4, 10, 10
	T := N + 1
	type tc struct {
		name string
		cfg  Config
		ref  ReferenceConfig
		lik  RealLikelihood
	}
	var cases []tc
	for _, dy := range []int{1, 3} {
		for _, kern := range layers.KernelNames() {
			kc := ReferenceConfig{Kernel: kern, Gamma: 0.7}
			for _, lit := range []bool{false, true} {
				p := fmt.Sprintf("dy=%d/%s/literal=%v/", dy, kern, lit)
				k := layers.Builtin(kern, 0.7)
				add := func(name string, cfg Config, steps int, bias bool) {
					cfg.D, cfg.DPrime, cfg.N, cfg.Kernel, cfg.Likelihood, cfg.Literal = d, dy, N, k, Gaussian(), lit
					rc := kc
					rc.Steps, rc.Bias = steps, bias
					cases = append(cases, tc{p + name, cfg, rc, nil})
				}
				add("onestep", Config{Form: OneStep}, 1, false)
				add("bias/K=3", Config{Blocks: 3, Bias: true}, 3, true)
				add("heads=2/K=2", Config{Blocks: 2, Heads: 2}, 2, false)
				add("heads=3/K=3", Config{Blocks: 3, Heads: 3}, 3, false)
				add("heads=2/bias/K=2", Config{Blocks: 2, Heads: 2, Bias: true}, 2, true)
			}
		}
		for _, lit := range []bool{false, true} {
			for K := 1; K <= 3; K++ {
				cases = append(cases, tc{fmt.Sprintf("dy=%d/userkernel/literal=%v/K=%d", dy, lit, K),
					Config{D: d, DPrime: dy, N: N, Blocks: K, Kernel: userKernel(), Likelihood: Gaussian(), Literal: lit},
					ReferenceConfig{Steps: K, KernelFunc: userKernelFunc}, nil})
			}
		}
		for K := 1; K <= 4; K++ {
			cases = append(cases, tc{fmt.Sprintf("dy=%d/userlikelihood/K=%d", dy, K),
				Config{D: d, DPrime: dy, N: N, Blocks: K, Kernel: layers.RBF(0.7), Likelihood: tanhLikelihood{}},
				ReferenceConfig{Steps: K, Kernel: "rbf", Gamma: 0.7}, tanhLikelihood{}})
		}
	}
	worstAll := 0.0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, y := realBatch(5, B, T, d, c.cfg.DPrime)
			c.cfg.Alpha = 0.9
			m := runReal(t, graph.Float64, c.cfg, B, x, y)
			rc := c.ref
			rc.Alpha, rc.Heads = 0.9, refHeadsOf(t, m)
			ref, err := ReferenceReal(x, y, B, T, d, c.cfg.DPrime, c.lik, rc)
			if err != nil {
				t.Fatal(err)
			}
			w := realWorst(t, m, ref)
			worstAll = math.Max(worstAll, w)
			if w > 1e-10 {
				t.Errorf("max |f_model − f_ref| = %.3g, want <= 1e-10", w)
			}
		})
	}
	t.Logf("largest difference over all cases: %.3g", worstAll)
}

// TestGaussianFloat32 runs the Gaussian models in float32 against the
// float64 reference (limit 1e-4).
func TestGaussianFloat32(t *testing.T) {
	const B, N, d, dy, K = 4, 10, 10, 3, 3
	T := N + 1
	for _, literal := range []bool{false, true} {
		for _, kern := range layers.KernelNames() {
			t.Run(fmt.Sprintf("literal=%v/%s", literal, kern), func(t *testing.T) {
				x, y := realBatch(9, B, T, d, dy)
				cfg := Config{D: d, DPrime: dy, N: N, Blocks: K, Kernel: layers.Builtin(kern, 0.7), Alpha: 0.9, Likelihood: Gaussian(), Literal: literal}
				m := runReal(t, graph.Float32, cfg, B, x, y)
				ref, err := ReferenceReal(x, y, B, T, d, dy, nil, ReferenceConfig{Steps: K, Alpha: 0.9, Kernel: kern, Gamma: 0.7})
				if err != nil {
					t.Fatal(err)
				}
				if w := realWorst(t, m, ref); w > 1e-4 {
					t.Errorf("float32 max |f − f_ref| = %.3g, want <= 1e-4", w)
				}
			})
		}
	}
}

// realLoss is a build function: the likelihood's query loss of a
// real-valued GD model on a fixed random batch.
func realLoss(cfg Config, B int, seed uint64) graphtest.BuildFunc {
	x, y := realBatch(seed, B, cfg.N+1, cfg.D, cfg.DPrime)
	return func(s *graph.Scope) (*G.Node, error) {
		m, err := NewModel(s, cfg, B)
		if err != nil {
			return nil, err
		}
		if err := m.FeedReal(x, y); err != nil {
			return nil, err
		}
		return m.QueryLoss(), nil
	}
}

// TestGaussianGradients checks the gradients of every trainable parameter
// (log_alpha, the kernel's, Λ_m and P_m) of the real-valued models against
// central finite differences, float64 (relative error < 1e-6) and float32.
func TestGaussianGradients(t *testing.T) {
	const B, N, d = 2, 4, 3
	type tc struct {
		name string
		cfg  Config
	}
	var cases []tc
	for _, k := range layers.KernelNames() {
		for _, lit := range []bool{false, true} {
			cases = append(cases, tc{fmt.Sprintf("%s/literal=%v/K=2", k, lit),
				Config{D: d, DPrime: 2, N: N, Blocks: 2, Kernel: layers.Builtin(k, 0.7), Alpha: 0.8, Likelihood: Gaussian(), Literal: lit}})
		}
	}
	more := []Config{
		{Form: OneStep},
		{Blocks: 3, Bias: true},
		{Blocks: 2, Heads: 2},
		{Blocks: 2, Heads: 2, Literal: true},
		{Blocks: 2, Kernel: userKernel()},
		{Blocks: 2, Likelihood: tanhLikelihood{}},
	}
	for i, c := range more {
		c.D, c.DPrime, c.N, c.Alpha = d, 1, N, 0.8
		if c.Kernel == nil {
			c.Kernel = layers.RBF(0.7)
		}
		if c.Likelihood == nil {
			c.Likelihood = Gaussian()
		}
		cases = append(cases, tc{fmt.Sprintf("variant%d", i), c})
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			build := realLoss(c.cfg, B, uint64(200+i))
			worst := graphtest.CheckGrad(t, build, graphtest.Options{Seed: 1})
			worst32 := graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 1})
			t.Logf("max relative error: float64 %.2e, float32 %.2e", worst, worst32)
		})
	}
}

func TestGaussianConfigErrors(t *testing.T) {
	base := Config{D: 2, DPrime: 1, N: 3, Likelihood: Gaussian()}
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"categories", func(c *Config) { c.C = 3 }, "want 0"},
		{"lambda erase", func(c *Config) { c.Erase = EraseLambda }, "Erase"},
		{"zero column", func(c *Config) { c.ZeroColumn = true }, "ZeroColumn"},
		{"user literal", func(c *Config) { c.Likelihood = tanhLikelihood{}; c.Literal = true }, "Literal"},
		{"not real", func(c *Config) { c.Likelihood = namedOnly{} }, "neither"},
	}
	for _, c := range cases {
		cfg := base
		c.mod(&cfg)
		if _, err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, err := base.Validate(); err != nil {
		t.Errorf("valid Gaussian config: %v", err)
	}
}

type namedOnly struct{}

func (namedOnly) Name() string { return "named" }

func TestFeedReal(t *testing.T) {
	const B, N, d, dy = 2, 3, 2, 2
	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := NewModel(s, Config{D: d, DPrime: dy, N: N, Likelihood: Gaussian()}, B)
	if err != nil {
		t.Fatal(err)
	}
	x, y := realBatch(1, B, N+1, d, dy)
	if err := m.Feed(x, make([]int, B*(N+1))); err == nil || !strings.Contains(err.Error(), "FeedReal") {
		t.Errorf("Feed on a Gaussian model: err = %v, want one naming FeedReal", err)
	}
	if err := m.FeedContexts(x, make([]int, B*(N+1)), []int{0, 1}); err == nil || !strings.Contains(err.Error(), "FeedReal") {
		t.Errorf("FeedContexts on a Gaussian model: err = %v, want one naming FeedReal", err)
	}
	if set, err := m.PrepareContexts(x, make([]int, B*(N+1))); set != nil || err == nil || !strings.Contains(err.Error(), "FeedReal") {
		t.Errorf("PrepareContexts on a Gaussian model: set %v, err = %v, want an error naming FeedReal", set, err)
	}
	if err := m.FeedPrepared(nil, []int{0, 1}); err == nil || !strings.Contains(err.Error(), "FeedReal") {
		t.Errorf("FeedPrepared on a Gaussian model: err = %v, want one naming FeedReal", err)
	}
	var nilModel *Model
	if _, err := nilModel.PrepareContexts(x, nil); err == nil || !strings.Contains(err.Error(), "model is nil") {
		t.Errorf("PrepareContexts on a nil model: err = %v", err)
	}
	if err := nilModel.FeedPrepared(nil, nil); err == nil || !strings.Contains(err.Error(), "model is nil") {
		t.Errorf("FeedPrepared on a nil model: err = %v", err)
	}
	bad := func(what string, x, y []float64, want string) {
		if err := m.FeedReal(x, y); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want one containing %q", what, err, want)
		}
	}
	bad("short x", x[1:], y, "x has")
	bad("short y", x, y[1:], "y has")
	xn := append([]float64(nil), x...)
	xn[3] = math.NaN()
	bad("NaN x", xn, y, "x[3]")
	yn := append([]float64(nil), y...)
	yn[0] = math.Inf(1)
	bad("Inf context y", x, yn, "y[0]")
	// A NaN query target is "unknown": accepted, and never seen by the tokens.
	yq := append([]float64(nil), y...)
	yq[(N)*dy] = math.NaN()
	if err := m.FeedReal(x, yq); err != nil {
		t.Errorf("NaN query target: %v", err)
	}
	yv, _ := graph.Values(m.Y)
	for b := 0; b < B; b++ {
		for c := 0; c < dy; c++ {
			if v := yv[(b*(N+1)+N)*dy+c]; v != 0 {
				t.Errorf("context %d: the query's y reached the tokens: %v", b, v)
			}
		}
	}
	s2, _ := graph.NewScope(graph.Float64, 1)
	mc, _ := NewModel(s2, Config{D: d, DPrime: 2, C: 3, N: N}, B)
	if err := mc.FeedReal(x, y); err == nil {
		t.Errorf("FeedReal on a categorical model: no error")
	}
}

func TestGaussianParamNames(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	if _, err := NewModel(s, Config{D: 2, DPrime: 1, N: 3, Blocks: 2, Heads: 2, Likelihood: Gaussian()}, 1); err != nil {
		t.Fatal(err)
	}
	want := []string{"log_alpha", "kernel/log_gamma", "head0/lambda", "head0/p", "head1/lambda", "head1/p"}
	if got := s.ParamNames(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parameter names %v, want %v", got, want)
	}
}

// TestGaussianSizes: a Gaussian model's sizes are bounded like the
// categorical ones: refused at once, naming the field.
func TestGaussianSizes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		batch int
		want  string
	}{
		{"DPrime", Config{D: 3, DPrime: huge, N: 5}, 2, "DPrime = 1099511627776"},
		{"D", Config{D: huge, DPrime: 1, N: 5}, 2, "D = 1099511627776"},
		{"tokens", Config{D: 1 << 12, DPrime: 1, N: 1 << 10}, 1 << 10, "(tokens)"},
		{"batch", Config{D: 3, DPrime: 1, N: 5}, huge, "batch"},
		{"N", Config{D: 3, DPrime: 1, N: huge}, 2, "N = 1099511627776"},
		{"Blocks", Config{D: 3, DPrime: 1, N: 5, Blocks: huge}, 2, "Blocks"},
		{"Heads", Config{D: 3, DPrime: 1, N: 5, Heads: huge}, 2, "Heads"},
		{"Blocks·Heads", Config{D: 3, DPrime: 1, N: 5, Blocks: 64, Heads: 64}, 2, "Blocks·Heads"},
		{"kernel depth", Config{D: 3, DPrime: 1, N: 5, Kernel: nestedScaled(layers.MaxKernelDepth + 1)}, 2, "Kernel"},
	} {
		tc.cfg.Likelihood = Gaussian()
		s, _ := graph.NewScope(graph.Float64, 1)
		if m, err := NewModel(s, tc.cfg, tc.batch); m != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: NewModel: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
}

// nestedScaled is the linear kernel scaled depth times, nested.
func nestedScaled(depth int) layers.KernelSpec {
	var k layers.KernelSpec = layers.Linear()
	for i := 0; i < depth; i++ {
		k = layers.Scaled(1, k)
	}
	return k
}

// TestReferenceRealBounds: ReferenceReal refuses, at once and naming the
// argument, Steps beyond the GD models' limit and sizes whose f and
// E(Y | f) over all steps cannot be held, as Reference does.
func TestReferenceRealBounds(t *testing.T) {
	x, y := make([]float64, 2*3), make([]float64, 2*1)
	for _, tc := range []struct {
		name  string
		steps int
		want  string
	}{
		{"steps 2^40", 1 << 40, "cfg.Steps = 1099511627776"},
		{"steps 2^10+1", 1<<10 + 1, "cfg.Steps = 1025"},
	} {
		start := time.Now()
		_, err := ReferenceReal(x, y, 1, 2, 3, 1, nil, ReferenceConfig{Steps: tc.steps, Alpha: 1, Kernel: "linear"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: took %v to refuse", tc.name, d)
		}
	}
	if _, err := ReferenceReal(x, y, 1, 2, 3, 1, nil, ReferenceConfig{Steps: 1 << 10, Alpha: 1, Kernel: "linear"}); err != nil {
		t.Errorf("steps 2^10: %v", err)
	}
}
