package train

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
)

// quad builds loss = sum((w - c)^2)/2 + b^2/2 with w a (2, 2) parameter, b a
// scalar parameter and c a constant; the gradient is (w - c, b).
type quad struct {
	s       *graph.Scope
	w, b, c *G.Node
	loss    *G.Node
	mach    *graph.Machine
}

func newQuad(t *testing.T, dt tensor.Dtype, w0 []float64) *quad {
	t.Helper()
	s := must(graph.NewScope(dt, 1))
	q := &quad{s: s}
	q.w = must(s.Sub("lin").Param("w", tensor.Shape{2, 2}, graph.FromValues(w0)))
	q.b = must(s.Param("b", tensor.Shape{}, graph.Constant(0.5)))
	q.c = must(s.Const("c", tensor.Shape{2, 2}, []float64{1, -2, 3, 0.5}))
	half := must(s.Const("half", tensor.Shape{}, []float64{0.5}))
	sq := G.Must(G.Sum(G.Must(G.Square(G.Must(G.Sub(q.w, q.c))))))
	q.loss = G.Must(G.Mul(half, G.Must(G.Add(sq, G.Must(G.Square(q.b))))))
	q.mach = must(graph.NewMachine(s, q.loss, graph.MachineOptions{}))
	t.Cleanup(func() { q.mach.Close() })
	return q
}

func TestAdamConverges(t *testing.T) {
	if testing.Short() {
		t.Skip("training test")
	}
	t.Run("float32", testAdamConverges[float32])
	t.Run("float64", testAdamConverges[float64])
}

func testAdamConverges[T float](t *testing.T) {
	for _, opt := range []string{"adam", "adamw"} {
		q := newQuad(t, dtypeOf[T](), []float64{0, 0, 0, 0})
		tr, err := NewTrainer(q.mach, Config{Optimizer: opt, Schedule: StepDecay(0.1, 100, 0.3)})
		if err != nil {
			t.Fatal(err)
		}
		var loss float64
		for i := 0; i < 400; i++ {
			if loss, err = tr.Step(); err != nil {
				t.Fatal(err)
			}
		}
		if loss > 1e-6 {
			t.Errorf("%s: loss after 400 steps %v, want < 1e-6", opt, loss)
		}
		if diff := cmp.Diff([]float64{1, -2, 3, 0.5}, must(graph.Values(q.w)), approx(1e-3)); diff != "" {
			t.Errorf("%s: w (-want +got):\n%s", opt, diff)
		}
		if tr.StepCount() != 400 {
			t.Errorf("StepCount %d, want 400", tr.StepCount())
		}
	}
}

// linear builds loss = sum(w * a) with a = (0.5, 3) fixed, so the gradient
// is a whatever w is.
func linear(t *testing.T, dt tensor.Dtype) (*graph.Machine, *G.Node) {
	t.Helper()
	s := must(graph.NewScope(dt, 1))
	w := must(s.Param("w", tensor.Shape{2}, graph.FromValues([]float64{1, -2})))
	a := must(s.Const("a", tensor.Shape{2}, []float64{0.5, 3}))
	loss := G.Must(G.Sum(G.Must(G.HadamardProd(w, a))))
	m := must(graph.NewMachine(s, loss, graph.MachineOptions{}))
	t.Cleanup(func() { m.Close() })
	return m, w
}

// halfSquare builds loss = sum(w^2)/2 with w0 = (1, -2), so the gradient
// is w itself.
func halfSquare(t *testing.T, dt tensor.Dtype) (*graph.Machine, *G.Node) {
	t.Helper()
	s := must(graph.NewScope(dt, 1))
	w := must(s.Param("w", tensor.Shape{2}, graph.FromValues([]float64{1, -2})))
	half := must(s.Const("half", tensor.Shape{2}, []float64{0.5, 0.5}))
	loss := G.Must(G.Sum(G.Must(G.HadamardProd(half, G.Must(G.Square(w))))))
	m := must(graph.NewMachine(s, loss, graph.MachineOptions{}))
	t.Cleanup(func() { m.Close() })
	return m, w
}

func TestAdamHandComputed(t *testing.T) {
	t.Run("float32", testAdamHandComputed[float32])
	t.Run("float64", testAdamHandComputed[float64])
}

func testAdamHandComputed[T float](t *testing.T) {
	tol := tolOf[T]()
	if tol < 1e-7 {
		tol = 1e-15
	}
	// Python, same formulas as torch.optim.Adam(lr=0.1), g = w:
	//   t=1: m = 0.1 g, v = 0.001 g^2, mhat = g, vhat = g^2,
	//        w1 = w0 - 0.1 g/(|g| + 1e-8) = (0.900000001, -1.9000000005)
	//   t=2: m = 0.9 m + 0.1 w1, v = 0.999 v + 0.001 w1^2,
	//        w2 = w1 - 0.1 (m/0.19)/(sqrt(v/0.001999) + 1e-8)
	//        = (0.8004122297123382, -1.800166486621093)
	want := [][]float64{{0.900000001, -1.9000000005}, {0.8004122297123382, -1.800166486621093}}
	tests := []struct {
		name  string
		build func(*testing.T, tensor.Dtype) (*graph.Machine, *G.Node)
		cfg   Config
		steps [][]float64
	}{
		{"adam two steps", halfSquare, Config{LR: 0.1}, want},
		// AdamW, g = a = (0.5, 3): w1 = w0 (1 - 0.1*0.1) - 0.1 a/(|a| + 1e-8).
		{"adamw decay", linear, Config{Optimizer: "adamw", LR: 0.1, WeightDecay: 0.1}, [][]float64{{0.890000002, -2.0799999996666667}}},
		// Adam with L2: g' = a + 0.1 w0 = (0.6, 2.8), w1 = w0 - 0.1 g'/(|g'| + 1e-8).
		{"adam l2", linear, Config{LR: 0.1, WeightDecay: 0.1}, [][]float64{{0.9000000016666666, -2.0999999996428573}}},
		// A Decay filter that excludes w: plain Adam, w1 = w0 - 0.1 a/(|a| + 1e-8).
		{"adamw filtered", linear, Config{Optimizer: "adamw", LR: 0.1, WeightDecay: 0.1,
			Decay: func(string, tensor.Shape) bool { return false }}, [][]float64{{0.900000002, -2.0999999996666667}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, w := tc.build(t, dtypeOf[T]())
			tr, err := NewTrainer(m, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.steps {
				if _, err := tr.Step(); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, must(graph.Values(w)), approx(tol)); diff != "" {
					t.Errorf("after step %d (-want +got):\n%s", i+1, diff)
				}
			}
		})
	}
}

// refAdam is an independent Adam/AdamW with clipping, on float64 slices.
func refAdam(w, g, m, v []float64, step int, lr, wd, clip float64, adamw bool) {
	norm := 0.0
	for _, x := range g {
		norm += x * x
	}
	norm = math.Sqrt(norm)
	scale := 1.0
	if clip > 0 && norm > clip {
		scale = clip / norm
	}
	for i := range w {
		gi := g[i] * scale
		if !adamw {
			gi += wd * w[i]
		}
		m[i] = 0.9*m[i] + 0.1*gi
		v[i] = 0.999*v[i] + 0.001*gi*gi
		if adamw {
			w[i] *= 1 - lr*wd
		}
		mh := m[i] / (1 - math.Pow(0.9, float64(step)))
		vh := v[i] / (1 - math.Pow(0.999, float64(step)))
		w[i] -= lr * mh / (math.Sqrt(vh) + 1e-8)
	}
}

func TestTrainerMatchesReference(t *testing.T) {
	w0 := []float64{4, -3, 0.25, 10}
	tests := []struct {
		name string
		cfg  Config
	}{
		{"adam", Config{LR: 0.05}},
		{"adam clip", Config{LR: 0.05, ClipNorm: 1}},
		{"adamw clip decay", Config{Optimizer: "adamw", LR: 0.05, ClipNorm: 2, WeightDecay: 0.3}},
		{"adam l2 clip", Config{LR: 0.05, ClipNorm: 0.5, WeightDecay: 0.1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newQuad(t, graph.Float64, w0)
			tr, err := NewTrainer(q.mach, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			// Reference state over all parameters: w (4 values) then b.
			w := append(append([]float64{}, w0...), 0.5)
			m, v := make([]float64, 5), make([]float64, 5)
			c := []float64{1, -2, 3, 0.5}
			for step := 1; step <= 20; step++ {
				g := make([]float64, 5)
				for i := range c {
					g[i] = w[i] - c[i]
				}
				g[4] = w[4]
				refAdam(w, g, m, v, step, tc.cfg.LR, tc.cfg.WeightDecay, tc.cfg.ClipNorm, tc.cfg.Optimizer == "adamw")
				if _, err := tr.Step(); err != nil {
					t.Fatal(err)
				}
				got := append(must(graph.Values(q.w)), must(graph.Values(q.b))...)
				if diff := cmp.Diff(w, got, approx(1e-12)); diff != "" {
					t.Fatalf("step %d (-want +got):\n%s", step, diff)
				}
			}
		})
	}
}

func TestClipGlobalNorm(t *testing.T) {
	tests := []struct {
		name     string
		grads    [][]float64
		max      float64
		want     [][]float64
		wantNorm float64
	}{
		{"clipped", [][]float64{{3}, {4}}, 1, [][]float64{{0.6}, {0.8}}, 5},
		{"below", [][]float64{{3}, {4}}, 10, [][]float64{{3}, {4}}, 5},
		{"equal", [][]float64{{3, 0}, {4}}, 5, [][]float64{{3, 0}, {4}}, 5},
		{"off", [][]float64{{3}, {4}}, 0, [][]float64{{3}, {4}}, 5},
		{"zeros", [][]float64{{0, 0}, {}}, 1, [][]float64{{0, 0}, {}}, 0},
		{"huge", [][]float64{{3e200, -4e200}}, 1, [][]float64{{0.6, -0.8}}, 5e200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			norm := ClipGlobalNorm(tc.grads, tc.max)
			if !cmp.Equal(norm, tc.wantNorm, approx(1e-14)) {
				t.Errorf("norm got %v, want %v", norm, tc.wantNorm)
			}
			if diff := cmp.Diff(tc.want, tc.grads, approx(1e-14)); diff != "" {
				t.Errorf("grads (-want +got):\n%s", diff)
			}
			if n := GlobalNorm(tc.grads); tc.max > 0 && n > tc.max*(1+1e-14) {
				t.Errorf("norm after clipping %v > %v", n, tc.max)
			}
		})
	}
}

func TestSchedules(t *testing.T) {
	tests := []struct {
		name  string
		s     Schedule
		steps []int
		want  []float64
	}{
		{"constant", ConstantLR(0.01), []int{0, 1, 1000}, []float64{0.01, 0.01, 0.01}},
		// 0.1 * 0.5^floor(step/10)
		{"step decay", StepDecay(0.1, 10, 0.5), []int{0, 9, 10, 25, 30}, []float64{0.1, 0.1, 0.05, 0.025, 0.0125}},
		// warmup: 1e-3*(step+1)/5 for step < 4; cosine from 1e-3 at step 4
		// to 1e-4 at step 14: midpoint step 9 gives (1e-3+1e-4)/2.
		{"warmup cosine", WarmupCosine(1e-3, 4, 14, 1e-4), []int{0, 3, 4, 9, 14, 15, 100},
			[]float64{2e-4, 8e-4, 1e-3, 5.5e-4, 1e-4, 1e-4, 1e-4}},
		{"cosine no warmup", WarmupCosine(1, 0, 4, 0), []int{0, 1, 2, 3, 4},
			[]float64{1, 0.5 + 0.5*math.Cos(math.Pi/4), 0.5, 0.5 + 0.5*math.Cos(3*math.Pi/4), 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := make([]float64, len(tc.steps))
			for i, s := range tc.steps {
				got[i] = tc.s(s)
			}
			if diff := cmp.Diff(tc.want, got, approx(1e-12)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for name, s := range map[string]Schedule{
		"negative lr":     ConstantLR(-1),
		"nan lr":          ConstantLR(math.NaN()),
		"zero every":      StepDecay(0.1, 0, 0.5),
		"negative factor": StepDecay(0.1, 10, -1),
		"total <= warmup": WarmupCosine(1, 5, 5, 0),
		"min > lr":        WarmupCosine(1, 1, 5, 2),
	} {
		if v := s(0); !math.IsNaN(v) {
			t.Errorf("%s: got %v, want NaN", name, v)
		}
	}
}

func TestTrainerSchedule(t *testing.T) {
	// The schedule sees the number of updates made so far.
	var seen []int
	m, _ := linear(t, graph.Float64)
	tr := must(NewTrainer(m, Config{Schedule: func(step int) float64 { seen = append(seen, step); return 0.1 }}))
	seen = nil
	for i := 0; i < 3; i++ {
		must(tr.Step())
	}
	if diff := cmp.Diff([]int{0, 1, 2}, seen); diff != "" {
		t.Errorf("schedule steps (-want +got):\n%s", diff)
	}
	if got := tr.LR(); got != 0.1 {
		t.Errorf("LR() = %v", got)
	}
}

func TestNewTrainerErrors(t *testing.T) {
	m, _ := linear(t, graph.Float64)
	s := must(graph.NewScope(graph.Float64, 1))
	w := must(s.Param("w", tensor.Shape{2}, nil))
	fwd := must(graph.NewMachine(s, G.Must(G.Sum(w)), graph.MachineOptions{NoGrad: true}))
	tests := []struct {
		name string
		m    *graph.Machine
		cfg  Config
		want string
	}{
		{"nil machine", nil, Config{LR: 1}, "computes no gradients"},
		{"forward machine", fwd, Config{LR: 1}, "computes no gradients"},
		{"optimizer", m, Config{Optimizer: "sgd", LR: 1}, `Optimizer "sgd"`},
		{"no lr", m, Config{}, "LR 0: want a finite value > 0"},
		{"negative lr", m, Config{LR: -1}, "LR -1"},
		{"beta1", m, Config{LR: 1, Beta1: 1}, "Beta1 1: want 0 < Beta1 < 1"},
		{"beta2", m, Config{LR: 1, Beta2: -0.5}, "Beta2 -0.5"},
		{"eps", m, Config{LR: 1, Eps: -1}, "Eps -1"},
		{"decay", m, Config{LR: 1, WeightDecay: math.NaN()}, "WeightDecay NaN"},
		{"clip", m, Config{LR: 1, ClipNorm: -1}, "ClipNorm -1"},
		{"progress", m, Config{LR: 1, ProgressEvery: -1}, "ProgressEvery -1"},
		{"bad schedule", m, Config{Schedule: StepDecay(1, 0, 0.5)}, "Schedule gives learning rate NaN at step 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewTrainer(tc.m, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestNaNGuard(t *testing.T) {
	t.Run("float32", testNaNGuard[float32])
	t.Run("float64", testNaNGuard[float64])
}

// testNaNGuard trains loss = sum(sqrt(p + x)) + sum(log(q)) and breaks it
// at step 3 in three ways.
func testNaNGuard[T float](t *testing.T) {
	tests := []struct {
		name string
		// breakIt feeds the minibatch (or sets values) that makes step 3
		// fail.
		breakIt func(p, q, x *G.Node)
		want    string
	}{
		{
			// log of a negative input: the loss is NaN (its gradient 1/q
			// is finite).
			name:    "loss NaN",
			breakIt: func(p, q, x *G.Node) { must(0, graph.SetValue(q, []float64{-1})) },
			want:    "train: step 3: loss is NaN; parameters not updated",
		},
		{
			// sqrt(0) = 0 is finite but its gradient 1/(2 sqrt(0)) is +Inf.
			name: "gradient Inf",
			breakIt: func(p, q, x *G.Node) {
				pv := must(graph.Values(p))
				must(0, graph.SetValue(x, []float64{1, -pv[1]}))
			},
			want: `train: step 3: gradient of "net/p" is +Inf at element 1; parameters not updated`,
		},
		{
			name:    "input NaN",
			breakIt: func(p, q, x *G.Node) { must(0, graph.SetValue(x, []float64{math.NaN(), 1})) },
			want:    "step 3: loss is NaN",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := must(graph.NewScope(dtypeOf[T](), 1))
			p := must(s.Sub("net").Param("p", tensor.Shape{2}, graph.FromValues([]float64{2, 3})))
			q := must(s.Param("q", tensor.Shape{}, graph.Constant(2)))
			x := must(s.Input("x", tensor.Shape{2}))
			loss := G.Must(G.Add(G.Must(G.Sum(G.Must(G.Sqrt(G.Must(G.Add(p, x)))))), G.Must(G.Log(q))))
			m := must(graph.NewMachine(s, loss, graph.MachineOptions{}))
			defer m.Close()
			tr := must(NewTrainer(m, Config{LR: 0.01}))
			must(0, graph.SetValue(x, []float64{1, 1}))
			for i := 0; i < 2; i++ {
				if _, err := tr.Step(); err != nil {
					t.Fatal(err)
				}
			}
			tc.breakIt(p, q, x)
			before := State{}
			pv, qv := must(graph.Values(p)), must(graph.Values(q))
			before = mustState(tr)
			_, err := tr.Step()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want it to contain %q", err, tc.want)
			}
			if diff := cmp.Diff(pv, must(graph.Values(p))); diff != "" {
				t.Errorf("p changed (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(qv, must(graph.Values(q))); diff != "" {
				t.Errorf("q changed (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(before, mustState(tr)); diff != "" {
				t.Errorf("optimiser state changed (-before +after):\n%s", diff)
			}
			if tr.StepCount() != 2 {
				t.Errorf("StepCount %d, want 2", tr.StepCount())
			}
		})
	}
}

func TestStateRoundTrip(t *testing.T) {
	t.Run("float32", testStateRoundTrip[float32])
	t.Run("float64", testStateRoundTrip[float64])
}

func testStateRoundTrip[T float](t *testing.T) {
	cfg := Config{Optimizer: "adamw", Schedule: WarmupCosine(0.1, 3, 20, 0.01), WeightDecay: 0.01, ClipNorm: 1}
	w0 := []float64{4, -3, 0.25, 10}
	// Run A: 5 steps, snapshot, 5 more.
	a := newQuad(t, dtypeOf[T](), w0)
	ta := must(NewTrainer(a.mach, cfg))
	for i := 0; i < 5; i++ {
		must(ta.Step())
	}
	st := mustState(ta)
	wSnap, bSnap := must(graph.Values(a.w)), must(graph.Values(a.b))
	var lossA []float64
	for i := 0; i < 5; i++ {
		lossA = append(lossA, must(ta.Step()))
	}
	// Run B: a fresh model restored from the snapshot gives identical
	// numbers.
	b := newQuad(t, dtypeOf[T](), w0)
	tb := must(NewTrainer(b.mach, cfg))
	must(0, graph.SetValue(b.w, wSnap))
	must(0, graph.SetValue(b.b, bSnap))
	if err := tb.SetState(st); err != nil {
		t.Fatal(err)
	}
	var lossB []float64
	for i := 0; i < 5; i++ {
		lossB = append(lossB, must(tb.Step()))
	}
	if diff := cmp.Diff(lossA, lossB); diff != "" {
		t.Errorf("losses (-A +B):\n%s", diff)
	}
	if diff := cmp.Diff(mustState(ta), mustState(tb)); diff != "" {
		t.Errorf("states (-A +B):\n%s", diff)
	}
	for _, n := range [][2]*G.Node{{a.w, b.w}, {a.b, b.b}} {
		if diff := cmp.Diff(must(graph.Values(n[0])), must(graph.Values(n[1]))); diff != "" {
			t.Errorf("%s (-A +B):\n%s", n[0].Name(), diff)
		}
	}
	// State is a copy.
	st.M["lin/w"][0] = 1e9
	if mustState(ta).M["lin/w"][0] == 1e9 {
		t.Error("State aliases the trainer's moments")
	}
}

func TestSetStateErrors(t *testing.T) {
	q := newQuad(t, graph.Float64, []float64{0, 0, 0, 0})
	tr := must(NewTrainer(q.mach, Config{LR: 0.1}))
	must(tr.Step())
	good := mustState(tr)
	clone := func(f func(*State)) State {
		st := State{Step: good.Step, M: map[string][]float64{}, V: map[string][]float64{}}
		for k, v := range good.M {
			st.M[k] = append([]float64{}, v...)
			st.V[k] = append([]float64{}, good.V[k]...)
		}
		f(&st)
		return st
	}
	tests := []struct {
		name string
		st   State
		want string
	}{
		{"negative step", clone(func(s *State) { s.Step = -1 }), "Step -1"},
		{"missing", clone(func(s *State) { delete(s.V, "b") }), `V lacks parameter "b"`},
		{"extra", clone(func(s *State) { s.M["head/w"] = []float64{1} }), `M has unknown parameter(s) ["head/w"]`},
		{"size", clone(func(s *State) { s.M["lin/w"] = []float64{1} }), `M["lin/w"] has 1 values, want 4`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tr.SetState(tc.st)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want it to contain %q", err, tc.want)
			}
			if diff := cmp.Diff(good, mustState(tr)); diff != "" {
				t.Errorf("state changed by a failed SetState (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProgressLines(t *testing.T) {
	q := newQuad(t, graph.Float64, []float64{0, 0, 0, 0})
	var buf bytes.Buffer
	tr := must(NewTrainer(q.mach, Config{LR: 0.001, Progress: &buf, ProgressEvery: 2, Total: 5, Label: "quad"}))
	// A fake clock: every call advances 250ms. The first Step reads it to
	// start, and every Step reads it once when reporting, so each step takes
	// 250ms: 4 step/s, and the ETA at step 2 is 3 steps = 0.75s ~ 1s.
	clock := time.Unix(0, 0)
	tr.prog.now = func() time.Time { clock = clock.Add(250 * time.Millisecond); return clock }
	var losses []float64
	for i := 0; i < 5; i++ {
		losses = append(losses, must(tr.Step()))
	}
	want := fmt.Sprintf("quad step 2/5 loss %.4f lr 0.001 4.0 step/s eta 1s\n"+
		"quad step 4/5 loss %.4f lr 0.001 4.0 step/s eta 0s\n"+
		"quad step 5/5 loss %.4f lr 0.001 4.0 step/s\n", losses[1], losses[3], losses[4])
	if got := buf.String(); got != want {
		t.Errorf("progress:\n got %q\nwant %q", got, want)
	}
}

func TestProgressBar(t *testing.T) {
	// The terminal path, rendered into a buffer.
	var buf bytes.Buffer
	p := newProgress(Config{Progress: &buf, ProgressEvery: 100, Total: 3, Label: "bar"}, true)
	for i := 1; i <= 3; i++ {
		p.begin(i - 1)
		p.report(i, 0.5, 1e-3)
	}
	if got := buf.String(); !strings.Contains(got, "bar loss 0.5000 lr 0.001") || !strings.Contains(got, "3/3") {
		t.Errorf("bar output %q lacks the description or the count", got)
	}
	if isTerminal(&buf) {
		t.Error("a bytes.Buffer is not a terminal")
	}
}
