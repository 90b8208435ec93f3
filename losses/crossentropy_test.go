package losses

import (
	"math"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/ops"
)

var dtypes = []tensor.Dtype{tensor.Float64, tensor.Float32}

// ceBuild builds CrossEntropy on hand-set logits (B, C) and targets (B, C).
func ceBuild(logits, targets []float64, B, C int) graphtest.BuildFunc {
	return func(s *graph.Scope) (*G.Node, error) {
		l, err := s.Const("logits", tensor.Shape{B, C}, logits)
		if err != nil {
			return nil, err
		}
		t, err := s.Const("targets", tensor.Shape{B, C}, targets)
		if err != nil {
			return nil, err
		}
		return CrossEntropy(l, t)
	}
}

func TestCrossEntropyValues(t *testing.T) {
	for _, tc := range []struct {
		name            string
		logits, targets []float64
		B, C            int
		want            float64
	}{
		// Row 0: logsumexp(1,2,3) - 3 = 0.40760596444438013; row 1: log 3.
		{"hand", []float64{1, 2, 3, 0, 0, 0}, []float64{0, 0, 1, 1, 0, 0}, 2, 3, 0.753109126556245},
		// logsumexp(1,2,3) - (0.2*1 + 0.3*2 + 0.5*3) = 3.40760596444438 - 2.3.
		{"soft", []float64{1, 2, 3}, []float64{0.2, 0.3, 0.5}, 1, 3, 1.10760596444438},
		// Stability: log(1 + e^-1000 + e^-2000) + 1000 = 1000 for label 1, ~0 for label 0.
		{"large", []float64{1000, 0, -1000, 1000, 0, -1000}, []float64{0, 1, 0, 1, 0, 0}, 2, 3, 500},
		{"one class", []float64{-7}, []float64{1}, 1, 1, 0},
	} {
		for _, dt := range dtypes {
			t.Run(tc.name+"/"+dt.String(), func(t *testing.T) {
				got := graphtest.Forward(t, ceBuild(tc.logits, tc.targets, tc.B, tc.C), dt, 1)
				tol := 1e-14
				if dt == tensor.Float32 {
					tol = 1e-6
				}
				graphtest.AllClose(t, "loss", got, []float64{tc.want}, tol)
			})
		}
	}
}

// ceParamBuild builds CrossEntropy(x W, onehot(labels)) with a (B, D) input x,
// a (D, C) parameter W and random labels, all drawn from the scope. With
// D = 0 the logits themselves are the parameter.
func ceParamBuild(B, D, C int) graphtest.BuildFunc {
	return func(s *graph.Scope) (*G.Node, error) {
		var logits *G.Node
		var err error
		if D == 0 {
			if logits, err = s.Param("logits", tensor.Shape{B, C}, graph.Normal(1.5)); err != nil {
				return nil, err
			}
		} else {
			w, err := s.Sub("head").Param("w", tensor.Shape{D, C}, graph.Normal(1))
			if err != nil {
				return nil, err
			}
			x, err := s.Input("x", tensor.Shape{B, D})
			if err != nil {
				return nil, err
			}
			if err := graph.SetValue(x, graphtest.RandValues(s, B*D)); err != nil {
				return nil, err
			}
			if logits, err = G.Mul(x, w); err != nil { // (B, C)
				return nil, err
			}
		}
		targets, err := s.Const("targets", tensor.Shape{B, C}, randOneHot(s, B, C))
		if err != nil {
			return nil, err
		}
		return CrossEntropy(logits, targets)
	}
}

func randLabels(s *graph.Scope, B, C int) []int {
	labels := make([]int, B)
	for i := range labels {
		labels[i] = s.Rand().IntN(C)
	}
	return labels
}

func randOneHot(s *graph.Scope, B, C int) []float64 {
	oh, err := OneHot(randLabels(s, B, C), C)
	if err != nil {
		panic(err) // programmer error in the test
	}
	return oh
}

func TestCrossEntropyGradient(t *testing.T) {
	for _, tc := range []struct {
		name    string
		B, D, C int
	}{
		{"logits", 4, 0, 5},
		{"linear", 6, 3, 4},
		{"binary", 3, 2, 2},
	} {
		t.Run(tc.name+"/float64", func(t *testing.T) {
			e := graphtest.CheckGrad(t, ceParamBuild(tc.B, tc.D, tc.C), graphtest.Options{Seed: 11})
			t.Logf("max rel error %.3g", e)
		})
		t.Run(tc.name+"/float32", func(t *testing.T) {
			e := graphtest.CheckGrad32(t, ceParamBuild(tc.B, tc.D, tc.C), graphtest.Options{Seed: 11})
			t.Logf("max rel error %.3g", e)
		})
	}
}

// TestCrossEntropyAnalyticGradient pins dL/dlogits = (softmax(logits) - targets) / B.
func TestCrossEntropyAnalyticGradient(t *testing.T) {
	const B, C = 3, 4
	logits := []float64{0.5, -1, 2, 0, 3, 3, -2, 1, 0, 0, 0, 0}
	targets := []float64{0, 0, 1, 0, 0.5, 0.5, 0, 0, 1, 0, 0, 0} // row 1 is soft
	build := func(s *graph.Scope) (*G.Node, error) {
		l, err := s.Param("logits", tensor.Shape{B, C}, graph.FromValues(logits))
		if err != nil {
			return nil, err
		}
		tg, err := s.Const("targets", tensor.Shape{B, C}, targets)
		if err != nil {
			return nil, err
		}
		return CrossEntropy(l, tg)
	}
	p, err := Softmax(logits, C)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, B*C)
	for i := range want {
		want[i] = (p[i] - targets[i]) / B
	}
	for _, dt := range dtypes {
		t.Run(dt.String(), func(t *testing.T) {
			_, grads := graphtest.Gradients(t, build, dt, 1)
			tol := 1e-15
			if dt == tensor.Float32 {
				tol = 1e-7
			}
			graphtest.AllClose(t, "dL/dlogits", grads["logits"], want, tol)
		})
	}
}

// TestCrossEntropyBesideSoftmax is the regression test for Gorgonia's
// SoftMax/LogSoftMax hash collision: with a softmax of the same logits in the
// graph, the loss must still be the cross-entropy.
func TestCrossEntropyBesideSoftmax(t *testing.T) {
	s, err := graph.NewScope(tensor.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	logits := []float64{0.5, -1, 2, 3, 0, -2}
	l, _ := s.Param("logits", tensor.Shape{2, 3}, graph.FromValues(logits))
	tg, _ := s.Const("targets", tensor.Shape{2, 3}, []float64{1, 0, 0, 0, 1, 0})
	if _, err := ops.SoftMax(l); err != nil {
		t.Fatal(err)
	}
	loss, err := CrossEntropy(l, tg)
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(s.Graph())
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	got, _ := graph.Scalar(loss)
	lse := func(a, b, c float64) float64 { return math.Log(math.Exp(a) + math.Exp(b) + math.Exp(c)) }
	want := ((lse(0.5, -1, 2) - 0.5) + (lse(3, 0, -2) - 0)) / 2
	if math.Abs(got-want) > 1e-12 {
		t.Errorf("CrossEntropy beside a SoftMax = %v, want %v", got, want)
	}
}

func mustConst(t *testing.T, s *graph.Scope, name string, shape tensor.Shape, v []float64) *G.Node {
	t.Helper()
	n, err := s.Const(name, shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCrossEntropyBadInput(t *testing.T) {
	s, err := graph.NewScope(tensor.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	other, err := graph.NewScope(tensor.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	l := mustConst(t, s, "logits", tensor.Shape{2, 3}, make([]float64, 6))
	tg := mustConst(t, s, "targets", tensor.Shape{2, 3}, make([]float64, 6))
	l3 := mustConst(t, s, "logits3", tensor.Shape{2, 2, 3}, make([]float64, 12))
	l1 := mustConst(t, s, "logits1", tensor.Shape{3}, make([]float64, 3))
	t23 := mustConst(t, s, "t32", tensor.Shape{3, 2}, make([]float64, 6))
	f32 := G.NewMatrix(s.Graph(), tensor.Float32, G.WithShape(2, 3), G.WithName("f32"), G.WithInit(G.Zeroes()))
	i64 := G.NewMatrix(s.Graph(), tensor.Int, G.WithShape(2, 3), G.WithName("ints"), G.WithInit(G.Zeroes()))
	otg := mustConst(t, other, "targets", tensor.Shape{2, 3}, make([]float64, 6))
	for _, tc := range []struct {
		name            string
		logits, targets *G.Node
		want            string
	}{
		{"nil logits", nil, tg, "logits is nil"},
		{"nil targets", l, nil, "targets is nil"},
		{"rank 3", l3, l3, "reshape (B, T, C)"},
		{"rank 1", l1, l1, "want (B, C)"},
		{"shape", l, t23, `targets "t32" has shape (3, 2)`},
		{"dtype", l, f32, "dtype float32"},
		{"int dtype", i64, i64, "unsupported dtype"},
		{"graphs", l, otg, "different graphs"},
	} {
		for _, f := range []struct {
			name string
			fn   func(logits, targets *G.Node) (*G.Node, error)
		}{{"CrossEntropy", CrossEntropy}, {"FusedCrossEntropy", FusedCrossEntropy}} {
			t.Run(f.name+"/"+tc.name, func(t *testing.T) {
				got, err := f.fn(tc.logits, tc.targets)
				if err == nil || got != nil {
					t.Fatalf("got (%v, %v), want an error", got, err)
				}
				if !strings.HasPrefix(err.Error(), "losses: "+f.name+": ") || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %q, want it to mention %q", err, tc.want)
				}
			})
		}
	}
}

func TestOneHot(t *testing.T) {
	got, err := OneHot([]int{2, 0, 1}, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0, 0, 1, 1, 0, 0, 0, 1, 0}
	graphtest.AllClose(t, "OneHot", got, want, 0)
	for _, tc := range []struct {
		name   string
		labels []int
		C      int
		want   string
	}{
		{"C zero", []int{0}, 0, "C = 0"},
		{"empty", nil, 3, "labels is empty"},
		{"negative", []int{0, -1}, 3, "labels[1] = -1"},
		{"too big", []int{0, 1, 3}, 3, "labels[2] = 3, want 0 <= label < C = 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := OneHot(tc.labels, tc.C); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestSoftmax(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name   string
		logits []float64
		C      int
		want   []float64
	}{
		// exp(v - logsumexp(1,2,3)).
		{"hand", []float64{1, 2, 3}, 3, []float64{0.09003057317038048, 0.2447284710547977, 0.665240955774822}},
		{"rows", []float64{0, 0, 5, 5}, 2, []float64{0.5, 0.5, 0.5, 0.5}},
		{"large", []float64{1000, 0}, 2, []float64{1, 0}}, // e^-1000 underflows to 0
		{"masked", []float64{-inf, 0}, 2, []float64{0, 1}},
		{"one class", []float64{-3, 7}, 1, []float64{1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Softmax(tc.logits, tc.C)
			if err != nil {
				t.Fatal(err)
			}
			graphtest.AllClose(t, "softmax", got, tc.want, 1e-15)
		})
	}
	for _, tc := range []struct {
		name   string
		logits []float64
		C      int
		want   string
	}{
		{"C zero", []float64{1}, 0, "C = 0"},
		{"empty", nil, 2, "logits has 0 values"},
		{"ragged", []float64{1, 2, 3}, 2, "logits has 3 values, want a positive multiple of C = 2"},
		{"nan", []float64{1, math.NaN()}, 2, "logits[1] = NaN"},
		{"+inf", []float64{1, 2, inf, 0}, 2, "logits[2] = +Inf"},
		{"all -inf", []float64{0, 1, -inf, -inf}, 2, "row 1 is entirely -Inf"},
	} {
		t.Run("bad/"+tc.name, func(t *testing.T) {
			if _, err := Softmax(tc.logits, tc.C); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestFusedCrossEntropyMatches: FusedCrossEntropy's loss and its gradient
// with respect to the logits equal CrossEntropy's within rounding, float64
// and float32, on one-hot, soft and all-zero target rows.
func TestFusedCrossEntropyMatches(t *testing.T) {
	const B, C = 4, 5
	logits := []float64{0.5, -1, 2, 3, 0, -2, 1.5, 0.25, -0.75, 4, 30, -30, 0, 1, 2, 0.1, 0.2, 0.3, 0.4, 0.5}
	targets := []float64{0, 0, 1, 0, 0, 0.25, 0, 0.5, 0.25, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}
	run := func(dt tensor.Dtype, loss func(logits, targets *G.Node) (*G.Node, error)) (float64, []float64) {
		s, err := graph.NewScope(dt, 1)
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.Param("logits", tensor.Shape{B, C}, graph.FromValues(logits))
		if err != nil {
			t.Fatal(err)
		}
		tg := mustConst(t, s, "targets", tensor.Shape{B, C}, targets)
		out, err := loss(l, tg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := G.Grad(out, l); err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(s.Graph())
		defer vm.Close()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		v, _ := graph.Scalar(out)
		gv, err := graph.GradValues(l)
		if err != nil {
			t.Fatal(err)
		}
		return v, gv
	}
	for _, dt := range dtypes {
		tol := 1e-12
		if dt == tensor.Float32 {
			tol = 1e-5
		}
		want, wantG := run(dt, CrossEntropy)
		got, gotG := run(dt, FusedCrossEntropy)
		if math.Abs(got-want) > tol*math.Max(1, math.Abs(want)) {
			t.Errorf("%v: FusedCrossEntropy = %v, CrossEntropy = %v", dt, got, want)
		}
		for i := range wantG {
			if math.Abs(gotG[i]-wantG[i]) > tol {
				t.Errorf("%v: dL/dlogits[%d] = %v, CrossEntropy's %v", dt, i, gotG[i], wantG[i])
			}
		}
	}
}
