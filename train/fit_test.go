package train_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
)

// The library's in-context models are train.Models.
var (
	_ train.Model = (*gd.Model)(nil)
	_ train.Model = (*tf.Model)(nil)
)

// idModel is a minimal in-context classifier that records which contexts
// every minibatch holds: logits = xq·W with xq (B, d) the query's
// covariates and W (d, C) a parameter. The test sets give context c the
// covariates c+1 everywhere, so the first covariate of a fed context is its
// index + 1.
type idModel struct {
	s          *graph.Scope
	batch, T   int
	xq, target *G.Node
	logits     *G.Node
	feeds      [][]int // the context indices of every Feed
}

const idD, idC = 1, 2

func newIDModel(t *testing.T, batch, T int, w []float64) *idModel {
	t.Helper()
	s, err := graph.NewScope(graph.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	m := &idModel{s: s, batch: batch, T: T}
	W := mustT(t)(s.Param("w", tensor.Shape{idD, idC}, graph.FromValues(w)))
	m.xq = mustT(t)(s.Input("xq", tensor.Shape{batch, idD}))
	m.target = mustT(t)(s.Input("target", tensor.Shape{batch, idC}))
	m.logits = G.Must(G.Mul(m.xq, W))
	return m
}

func mustT(t *testing.T) func(n *G.Node, err error) *G.Node {
	return func(n *G.Node, err error) *G.Node {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
}

func (m *idModel) Scope() *graph.Scope  { return m.s }
func (m *idModel) BatchSize() int       { return m.batch }
func (m *idModel) QueryLogits() *G.Node { return m.logits }
func (m *idModel) QueryTarget() *G.Node { return m.target }
func (m *idModel) Feed(x []float64, y []int) error {
	xq := make([]float64, m.batch*idD)
	tg := make([]float64, m.batch*idC)
	var ids []int
	for k := 0; k < m.batch; k++ {
		row := x[(k*m.T+m.T-1)*idD : (k*m.T+m.T)*idD]
		copy(xq[k*idD:], row)
		ids = append(ids, int(x[k*m.T*idD])-1)
		if l := y[k*m.T+m.T-1]; l >= 0 {
			tg[k*idC+l] = 1
		}
	}
	m.feeds = append(m.feeds, ids)
	if err := graph.SetValue(m.xq, xq); err != nil {
		return err
	}
	return graph.SetValue(m.target, tg)
}

// idSet returns n contexts of T positions whose covariates are c+1 for
// context c, labelled c%2.
func idSet(n, T int) *data.Batch {
	b := &data.Batch{B: n, T: T, D: idD, C: idC, X: make([]float64, n*T*idD), Y: make([]int, n*T)}
	for c := 0; c < n; c++ {
		for j := 0; j < T*idD; j++ {
			b.X[c*T*idD+j] = float64(c + 1)
		}
		for j := 0; j < T; j++ {
			b.Y[c*T+j] = c % 2
		}
	}
	return b
}

// TestFitPartialMinibatch: with 5 contexts and minibatches of 2, every epoch
// makes 3 steps, the last minibatch filled up with the first context of the
// epoch's order (no context dropped), the orders drawn from PCG(Seed, 0x5eed).
func TestFitPartialMinibatch(t *testing.T) {
	const n, batch, epochs, seed = 5, 2, 3, 7
	m := newIDModel(t, batch, 2, []float64{0.1, -0.1})
	r, err := train.NewRunner(m, train.RunnerConfig{Optim: train.Config{LR: 0.01}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var losses []float64
	if err := r.Fit(idSet(n, 2), train.FitConfig{Epochs: epochs, Seed: seed,
		AfterEpoch: func(_ int, l float64) error { losses = append(losses, l); return nil }}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var want [][]int
	for ep := 0; ep < epochs; ep++ {
		p := rng.Perm(n)
		want = append(want, []int{p[0], p[1]}, []int{p[2], p[3]}, []int{p[4], p[0]})
	}
	if diff := cmp.Diff(want, m.feeds); diff != "" {
		t.Errorf("minibatches (-want +got):\n%s", diff)
	}
	for ep := 0; ep < epochs; ep++ {
		seen := map[int]bool{}
		for _, f := range m.feeds[3*ep : 3*ep+3] {
			for _, c := range f {
				seen[c] = true
			}
		}
		if len(seen) != n {
			t.Errorf("epoch %d saw contexts %v, want all %d", ep+1, seen, n)
		}
	}
	if got, want := r.Trainer().StepCount(), train.Steps(n, batch, epochs); got != want || want != 9 {
		t.Errorf("%d steps, Steps() = %d, want 9", got, want)
	}
	if len(losses) != epochs {
		t.Errorf("AfterEpoch called %d times, want %d", len(losses), epochs)
	}
}

// TestPredictPadding: the last minibatch of Predict is padded with the last
// context and only the real contexts' rows come back, equal to predicting
// each context alone.
func TestPredictPadding(t *testing.T) {
	w := []float64{0.5, -0.25}
	m := newIDModel(t, 2, 2, w)
	r, err := train.NewRunner(m, train.RunnerConfig{EvalOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	set := idSet(3, 2)
	set.Y[2*2+1] = -1 // an unknown query label is fine for Predict
	got, err := r.Predict(set)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]int{{0, 1}, {2, 2}}, m.feeds); diff != "" {
		t.Errorf("minibatches (-want +got):\n%s", diff)
	}
	var want []float64
	for c := 0; c < 3; c++ {
		// softmax((c+1)·w)
		z0, z1 := float64(c+1)*w[0], float64(c+1)*w[1]
		e0, e1 := math.Exp(z0), math.Exp(z1)
		want = append(want, e0/(e0+e1), e1/(e0+e1))
	}
	if diff := cmp.Diff(want, got, cmpApprox(1e-14)); diff != "" {
		t.Errorf("probabilities (-want +got):\n%s", diff)
	}
}

func cmpApprox(tol float64) cmp.Option {
	return cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) <= tol*(1+math.Abs(b)) })
}

// TestPredictNonFinite is issue 12's -eval case: huge finite inputs (1e200)
// overflow the GD model to NaN probabilities. Predict and Evaluate return an
// error naming the context instead of the probabilities.
func TestPredictNonFinite(t *testing.T) {
	task, err := data.NewSynthetic(data.DefaultSyntheticConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	set, err := task.Sample(5, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := gd.NewModel(s, gd.Config{D: 10, DPrime: 5, C: 25, N: 10}, 4)
	if err != nil {
		t.Fatal(err)
	}
	r, err := train.NewRunner(m, train.RunnerConfig{EvalOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Predict(set); err != nil {
		t.Fatalf("ordinary inputs: %v", err)
	}
	for j := 0; j < set.T*set.D; j++ {
		set.X[3*set.T*set.D+j] = 1e200 // context 3
	}
	probs, err := r.Predict(set)
	if err == nil || !strings.Contains(err.Error(), "context 3: the query probability of class") || probs != nil {
		t.Errorf("Predict: got %d values and error %v, want none and an error naming context 3", len(probs), err)
	}
	if _, err := r.Evaluate(set); err == nil || !strings.Contains(err.Error(), "context 3") {
		t.Errorf("Evaluate: got error %v, want one naming context 3", err)
	}
}

func TestRunnerErrors(t *testing.T) {
	m := newIDModel(t, 2, 2, []float64{0, 0})
	fit, err := train.NewRunner(m, train.RunnerConfig{Optim: train.Config{LR: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	defer fit.Close()
	evalOnly, err := train.NewRunner(m, train.RunnerConfig{EvalOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer evalOnly.Close()
	unlabelled := idSet(3, 2)
	unlabelled.Y[1*2+1] = -1
	wrongC := idSet(3, 2)
	wrongC.C = 3
	badLabel := idSet(3, 2)
	badLabel.Y[0] = 7
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"nil model", func() error { _, err := train.NewRunner(nil, train.RunnerConfig{}); return err }, "model is nil"},
		{"no learning rate", func() error { _, err := train.NewRunner(m, train.RunnerConfig{}); return err }, "LR 0"},
		{"fit eval-only", func() error { return evalOnly.Fit(idSet(3, 2), train.FitConfig{Epochs: 1}) }, "EvalOnly"},
		{"no epochs", func() error { return fit.Fit(idSet(3, 2), train.FitConfig{}) }, "Epochs = 0"},
		{"nil set", func() error { return fit.Fit(nil, train.FitConfig{Epochs: 1}) }, "nil"},
		{"empty set", func() error { return fit.Fit(&data.Batch{T: 2, D: 1, C: 2}, train.FitConfig{Epochs: 1}) }, "empty context set"},
		{"unknown query label", func() error { return fit.Fit(unlabelled, train.FitConfig{Epochs: 1}) }, "context 1 has no query label"},
		{"class count", func() error { return fit.Fit(wrongC, train.FitConfig{Epochs: 1}) }, "C = 3 classes, the model 2"},
		{"label out of range", func() error { _, err := fit.Predict(badLabel); return err }, "Y[0] = 7"},
		{"evaluate unknown label", func() error { _, err := fit.Evaluate(unlabelled); return err }, "context 1 has no query label"},
		{"curve every 0", func() error {
			_, err := fit.FitCurve(idSet(3, 2), idSet(3, 2), train.FitConfig{Epochs: 1}, 0)
			return err
		}, "every = 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	if n := fit.Trainer().StepCount(); n != 0 {
		t.Errorf("failed Fit calls made %d steps", n)
	}
}

func TestFitCurve(t *testing.T) {
	task, err := data.NewSynthetic(data.DefaultSyntheticConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	trainSet, _ := task.Sample(8, rand.New(rand.NewPCG(1, 1)))
	test, _ := task.Sample(6, rand.New(rand.NewPCG(1, 2)))
	tests := []struct {
		name          string
		epochs, every int
		want          []int
	}{
		{"every epoch", 2, 1, []int{1, 2}},
		{"every 3rd and the last", 4, 3, []int{3, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := graph.NewScope(graph.Float64, 1)
			m, err := gd.NewModel(s, gd.Config{D: 10, DPrime: 5, C: 25, N: 10}, 4)
			if err != nil {
				t.Fatal(err)
			}
			cfg := train.FitConfig{Epochs: tc.epochs, Seed: 1}
			calls := 0
			cfg.AfterEpoch = func(int, float64) error { calls++; return nil }
			r, err := train.NewRunner(m, train.RunnerConfig{Optim: train.Config{LR: 1e-2, Total: train.Steps(8, 4, tc.epochs)}})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			curve, err := r.FitCurve(trainSet, test, cfg, tc.every)
			if err != nil {
				t.Fatal(err)
			}
			if calls != tc.epochs {
				t.Errorf("AfterEpoch called %d times, want %d", calls, tc.epochs)
			}
			var got []int
			for _, e := range curve {
				got = append(got, e.Epoch)
				if e.N != 6 || !(e.TrainLoss > 0) || !(e.NLL > 0) {
					t.Errorf("epoch %d: %+v", e.Epoch, e)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("evaluated after epochs %v, want %v", got, tc.want)
			}
			final, _ := r.Evaluate(test)
			if last := curve[len(curve)-1]; last.Top1 != final.Top1 || last.NLL != final.NLL {
				t.Errorf("last curve point %v, evaluation after training %v", last.Metrics, final)
			}
			if !(final.Oracle > 0 && final.Oracle <= 1) {
				t.Errorf("oracle %v: the synthetic task knows its probabilities", final.Oracle)
			}
		})
	}
}
