package ops_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// softXentTargets are (B, C) targets: one-hot rows, a row of a distribution
// (every third) and, with zero, an all-zero row (the last).
func softXentTargets(B, C int, zero bool) []float64 {
	t := make([]float64, B*C)
	for i := range B {
		switch {
		case zero && i == B-1:
		case i%3 == 1:
			for j := range C {
				t[i*C+j] = float64(j+1) / float64(C*(C+1)/2)
			}
		default:
			t[i*C+(i*7+3)%C] = 1
		}
	}
	return t
}

// softXentHot are (B, C) one-hot targets with a zero row (the second).
func softXentHot(B, C int) []float64 {
	t := make([]float64, B*C)
	for i := range B {
		if i != 1 {
			t[i*C+(i*5+2)%C] = 1
		}
	}
	return t
}

// softXentBuild builds the cross-entropy of logits 3·x (x a (B, C) param)
// against softXentTargets, by SoftmaxCrossEntropy when fused, else by the
// chain losses.CrossEntropy builds (log-softmax, product with the targets,
// sum, scaling by −1/B).
func softXentBuild(fused bool, B, C int) graphtest.BuildFunc {
	return softXentBuildOf(fused, B, C, softXentTargets(B, C, true))
}

// softXentBuildOf is softXentBuild with the targets given.
func softXentBuildOf(fused bool, B, C int, targets []float64) graphtest.BuildFunc {
	return func(s *graph.Scope) (*G.Node, error) {
		x, err := s.Param("x", tensor.Shape{B, C}, graph.Normal(1))
		if err != nil {
			return nil, err
		}
		tg, err := s.Const("targets", tensor.Shape{B, C}, targets)
		if err != nil {
			return nil, err
		}
		k := G.NewConstant(3.0)
		if s.Dtype() == tensor.Float32 {
			k = G.NewConstant(float32(3))
		}
		logits := G.Must(G.Mul(x, k))
		if fused {
			return ops.SoftmaxCrossEntropy(logits, tg)
		}
		lsm := G.Must(ops.LogSoftMax(logits))
		total := G.Must(G.Sum(G.Must(G.HadamardProd(lsm, tg))))
		m := G.NewConstant(-1 / float64(B))
		if s.Dtype() == tensor.Float32 {
			m = G.NewConstant(float32(-1 / float64(B)))
		}
		return G.Mul(total, m)
	}
}

// TestSoftmaxCrossEntropyGrad checks the fused op's gradient against finite
// differences, float64 and float32, with rows shorter than the fast
// exponential's eight lanes and rows of 25 (the GD model's C).
func TestSoftmaxCrossEntropyGrad(t *testing.T) {
	for _, c := range []struct{ B, C int }{{4, 3}, {5, 25}} {
		t.Run(fmt.Sprintf("B=%d/C=%d", c.B, c.C), func(t *testing.T) {
			build := softXentBuild(true, c.B, c.C)
			graphtest.CheckGrad(t, build, graphtest.Options{Seed: 5})
			graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 5})
			hot := softXentBuildOf(true, c.B, c.C, softXentHot(c.B, c.C))
			graphtest.CheckGrad(t, hot, graphtest.Options{Seed: 6})
			graphtest.CheckGrad32(t, hot, graphtest.Options{Seed: 6})
		})
	}
}

// TestSoftmaxCrossEntropyMatchesChain: the fused op's loss and gradient
// equal the chain's within 1e-12 (float64) and 1e-5 (float32), relative,
// with soft rows among the targets and with one-hot and zero rows only
// (the op's path for labels).
func TestSoftmaxCrossEntropyMatchesChain(t *testing.T) {
	for _, c := range []struct {
		B, C int
		dt   tensor.Dtype
		hot  bool
	}{{7, 3, tensor.Float64, false}, {7, 3, tensor.Float32, false}, {64, 25, tensor.Float64, false},
		{64, 25, tensor.Float32, false}, {9, 40, tensor.Float32, false},
		{7, 3, tensor.Float64, true}, {64, 25, tensor.Float64, true}, {64, 25, tensor.Float32, true}} {
		t.Run(fmt.Sprintf("B=%d/C=%d/%v/onehot=%v", c.B, c.C, c.dt, c.hot), func(t *testing.T) {
			tg := softXentTargets(c.B, c.C, true)
			if c.hot {
				tg = softXentHot(c.B, c.C)
			}
			l1, g1 := graphtest.Gradients(t, softXentBuildOf(true, c.B, c.C, tg), c.dt, 13)
			l2, g2 := graphtest.Gradients(t, softXentBuildOf(false, c.B, c.C, tg), c.dt, 13)
			tol := 1e-12
			if c.dt == tensor.Float32 {
				tol = 1e-5
			}
			if math.Abs(l1-l2) > tol*math.Abs(l2) {
				t.Errorf("loss %v, chain's %v", l1, l2)
			}
			for name, want := range g2 {
				// Relative to the largest gradient element, 1/B at most.
				scale := 0.0
				for _, v := range want {
					scale = max(scale, math.Abs(v))
				}
				got := make([]float64, len(want))
				for i := range want {
					got[i], want[i] = g1[name][i]/scale, want[i]/scale
				}
				graphtest.AllClose(t, name, got, want, tol)
			}
		})
	}
}

// TestSoftmaxCrossEntropyRuns: a machine run twice on new logits gives the
// second logits' loss and gradient (the kept exponentials are this run's),
// a row whose zero-target logit is −∞ keeps a finite loss, and a row 100
// below the others keeps its precision; a +∞ logit gives a loss that is
// not finite, without failing.
func TestSoftmaxCrossEntropyRuns(t *testing.T) {
	for _, dt := range []tensor.Dtype{graph.Float64, graph.Float32} {
		t.Run(fmt.Sprint(dt), func(t *testing.T) {
			const B, C = 3, 13
			s, _ := graph.NewScope(dt, 1)
			x, _ := s.Param("x", tensor.Shape{B, C}, graph.Normal(1))
			tg, _ := s.Const("targets", tensor.Shape{B, C}, softXentTargets(B, C, false))
			loss, err := ops.SoftmaxCrossEntropy(x, tg)
			if err != nil {
				t.Fatal(err)
			}
			m, err := graph.NewMachine(s, loss, graph.MachineOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			want := func(xv []float64) (float64, []float64) {
				tv := softXentTargets(B, C, false)
				l, g := 0.0, make([]float64, B*C)
				for i := range B {
					mx := math.Inf(-1)
					for _, v := range xv[i*C : (i+1)*C] {
						mx = max(mx, v)
					}
					s := 0.0
					for _, v := range xv[i*C : (i+1)*C] {
						s += math.Exp(v - mx)
					}
					for j := range C {
						if tv[i*C+j] != 0 {
							l -= tv[i*C+j] * (xv[i*C+j] - mx - math.Log(s)) / B
						}
						g[i*C+j] = (math.Exp(xv[i*C+j]-mx)/s - tv[i*C+j]) / B
					}
				}
				return l, g
			}
			for run := range 2 {
				xv := graphtest.RandValues(s, B*C)
				if run == 1 {
					xv[0*C+5] = math.Inf(-1) // row 0's target is column 3
					for j := range C {
						xv[2*C+j] -= 100 // far below the other rows: shifted by its own maximum
					}
				}
				if err := graph.SetValue(x, xv); err != nil {
					t.Fatal(err)
				}
				if err := m.Run(); err != nil {
					t.Fatal(err)
				}
				l, err := graph.Scalar(loss)
				if err != nil {
					t.Fatal(err)
				}
				gv, err := graph.GradValues(x)
				if err != nil {
					t.Fatal(err)
				}
				wl, wg := want(xv)
				tol := 1e-12
				if dt == graph.Float32 {
					tol = 1e-6
				}
				if math.IsNaN(l) || math.Abs(l-wl) > tol*math.Abs(wl) {
					t.Errorf("run %d: loss %v, want %v", run, l, wl)
				}
				graphtest.AllClose(t, fmt.Sprintf("run %d: gradient", run), gv, wg, tol)
			}
			// A +∞ logit: no failure, a loss that is not finite.
			xv := graphtest.RandValues(s, B*C)
			xv[C+4] = math.Inf(1)
			if err := graph.SetValue(x, xv); err != nil {
				t.Fatal(err)
			}
			if err := m.Run(); err != nil {
				t.Fatal(err)
			}
			if l, err := graph.Scalar(loss); err != nil || !(math.IsNaN(l) || math.IsInf(l, 0)) {
				t.Errorf("a +Inf logit: loss %v, %v; want NaN or ±Inf", l, err)
			}
		})
	}
}

// TestSoftmaxCrossEntropyErrors: bad inputs are refused by the constructor.
func TestSoftmaxCrossEntropyErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	x, _ := s.Param("x", tensor.Shape{3, 4}, graph.Normal(1))
	vec, _ := s.Input("vec", tensor.Shape{4})
	other, _ := s.Input("other", tensor.Shape{3, 5})
	s32, _ := graph.NewScope(graph.Float32, 1)
	x32, _ := s32.Param("x", tensor.Shape{3, 4}, graph.Normal(1))
	s2, _ := graph.NewScope(graph.Float64, 1)
	x2, _ := s2.Param("x", tensor.Shape{3, 4}, graph.Normal(1))
	for _, c := range []struct {
		name        string
		logits, tgt *G.Node
		want        string
	}{
		{"nil", nil, x, "nil"},
		{"rank", vec, vec, "(B, C) matrix"},
		{"shape", x, other, "shape"},
		{"dtype", x, x32, "dtype"},
		{"graph", x, x2, "different graphs"},
	} {
		if n, err := ops.SoftmaxCrossEntropy(c.logits, c.tgt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: node %v, err %v; want an error mentioning %q", c.name, n, err, c.want)
		}
	}
}

// BenchmarkSoftmaxCrossEntropy times the fused loss's forward and backward
// pass on the GD model's query logits (B = 512, C = 25, one-hot targets),
// with the product by 3 before it, against the chain
// losses.CrossEntropy builds.
func BenchmarkSoftmaxCrossEntropy(b *testing.B) {
	for _, fused := range []bool{true, false} {
		for _, dt := range []tensor.Dtype{graph.Float32, graph.Float64} {
			b.Run(fmt.Sprintf("fused=%v/%v", fused, dt), func(b *testing.B) {
				s, _ := graph.NewScope(dt, 1)
				loss, err := softXentBuildOf(fused, 512, 25, softXentHot(512, 25))(s)
				if err != nil {
					b.Fatal(err)
				}
				m, err := graph.NewMachine(s, loss, graph.MachineOptions{ReuseGrads: true})
				if err != nil {
					b.Fatal(err)
				}
				defer m.Close()
				for b.Loop() {
					if err := m.Run(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
