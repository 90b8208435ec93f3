package ops_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// labelResChain is the chain LabelResiduals replaces: step·(w_{e,y} − w̄_e)
// over the context rows from GatherCols, the product by the mean column, its
// broadcast by the all-ones column, Slice, Sub and Mul.
func labelResChain(s *graph.Scope, we, ids, step *G.Node, B, N, C, dp int) (*G.Node, error) {
	T := N + 1
	wy := G.Must(ops.GatherCols(we, ids))
	wy = G.Must(ops.Slice(G.Must(ops.Reshape(wy, tensor.Shape{B, T, dp})), 1, 0, N))
	mv := make([]float64, C)
	for i := range mv {
		mv[i] = 1 / float64(C)
	}
	meanCol, err := s.Const("mean", tensor.Shape{C, 1}, mv)
	if err != nil {
		return nil, err
	}
	ov := make([]float64, B*N)
	for i := range ov {
		ov[i] = 1
	}
	ones, err := s.Const("ones", tensor.Shape{B * N, 1}, ov)
	if err != nil {
		return nil, err
	}
	ops.MarkData(meanCol, ones)
	wbar := G.Must(ops.MatMul(we, meanCol, false, false))
	e := G.Must(ops.Reshape(G.Must(ops.MatMul(ones, wbar, false, true)), tensor.Shape{B, N, dp}))
	return G.Mul(step, G.Must(G.Sub(wy, e)))
}

// labelResBuild builds Σ tanh(r) ⊙ c for r the residuals of W_e "we" and
// the step exp("ls"), fused or by the chain; ids hold −1 at the queries
// and at one context row.
func labelResBuild(fused bool, B, N, C, dp int) graphtest.BuildFunc {
	return func(s *graph.Scope) (*G.Node, error) {
		T := N + 1
		rng := rand.New(rand.NewPCG(3, 4))
		ids := intInput(s, "ids", B*T)
		v := ids.Value().Data().([]int)
		for r := range v {
			v[r] = rng.IntN(C)
			if r%T == N || r == 1 {
				v[r] = -1
			}
		}
		we, _ := s.Param("we", tensor.Shape{dp, C}, graph.Normal(1))
		ls, _ := s.Param("ls", tensor.Shape{}, graph.Constant(-0.3))
		step := G.Must(G.Exp(ls))
		var r *G.Node
		var err error
		if fused {
			r, err = ops.LabelResiduals(we, ids, step, N)
		} else {
			r, err = labelResChain(s, we, ids, step, B, N, C, dp)
		}
		if err != nil {
			return nil, err
		}
		c, _ := s.Const("c", tensor.Shape{B, N, dp}, graphtest.RandValues(s, B*N*dp))
		return G.Sum(G.Must(G.HadamardProd(G.Must(G.Tanh(r)), c)))
	}
}

// TestLabelResidualsGrad checks LabelResiduals' gradients w.r.t. W_e and
// the step against finite differences, float64 and float32, with d' ≤ 8
// and d' > 8 (the two paths of the sums).
func TestLabelResidualsGrad(t *testing.T) {
	for _, dp := range []int{3, 10} {
		t.Run(fmt.Sprintf("dprime=%d", dp), func(t *testing.T) {
			build := labelResBuild(true, 3, 5, 4, dp)
			graphtest.CheckGrad(t, build, graphtest.Options{Seed: 7})
			graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 7})
		})
	}
}

// TestLabelResidualsMatchesChain: the fused op's loss is the chain's bit
// for bit in float64 (and float32 at these sizes), its gradients equal
// within rounding.
func TestLabelResidualsMatchesChain(t *testing.T) {
	const B, N, C = 4, 9, 6
	for _, c := range []struct {
		dp int
		dt tensor.Dtype
	}{{5, tensor.Float64}, {5, tensor.Float32}, {11, tensor.Float64}, {11, tensor.Float32}} {
		dp, dt := c.dp, c.dt
		t.Run(fmt.Sprintf("dprime=%d/%v", dp, dt), func(t *testing.T) {
			l1, g1 := graphtest.Gradients(t, labelResBuild(true, B, N, C, dp), dt, 11)
			l2, g2 := graphtest.Gradients(t, labelResBuild(false, B, N, C, dp), dt, 11)
			if l1 != l2 {
				t.Errorf("loss %v, chain's %v", l1, l2)
			}
			tol := 1e-12
			if dt == tensor.Float32 {
				tol = 1e-5
			}
			for name, want := range g2 {
				graphtest.AllClose(t, name, g1[name], want, tol)
			}
		})
	}
}

// TestLabelResidualsErrors: bad inputs are refused by the constructor, an
// id outside [−1, C) by the run.
func TestLabelResidualsErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	we, _ := s.Param("we", tensor.Shape{3, 4}, graph.Normal(1))
	vec, _ := s.Input("vec", tensor.Shape{4})
	step, _ := s.Param("step", tensor.Shape{}, graph.Constant(0.5))
	ids := intInput(s, "ids", 6)
	for _, c := range []struct {
		name string
		run  func() (*G.Node, error)
		want string
	}{
		{"nil", func() (*G.Node, error) { return ops.LabelResiduals(nil, ids, step, 2) }, "nil"},
		{"rank", func() (*G.Node, error) { return ops.LabelResiduals(vec, ids, step, 2) }, "want (d', C)"},
		{"float ids", func() (*G.Node, error) { return ops.LabelResiduals(we, vec, step, 2) }, "int vector"},
		{"step", func() (*G.Node, error) { return ops.LabelResiduals(we, ids, we, 2) }, "scalar"},
		{"N", func() (*G.Node, error) { return ops.LabelResiduals(we, ids, step, 3) }, "whole sequences"},
		{"N zero", func() (*G.Node, error) { return ops.LabelResiduals(we, ids, step, 0) }, "whole sequences"},
	} {
		if n, err := c.run(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: node %v, err %v; want an error mentioning %q", c.name, n, err, c.want)
		}
	}
	r, err := ops.LabelResiduals(we, ids, step, 2)
	if err != nil {
		t.Fatal(err)
	}
	if dp, c, b, n := r.Op().(*ops.LabelResidualsOp).Dims(); dp != 3 || c != 4 || b != 2 || n != 2 {
		t.Errorf("Dims = %d, %d, %d, %d, want 3, 4, 2, 2", dp, c, b, n)
	}
	m, err := graph.NewMachine(s, G.Must(G.Sum(r)), graph.MachineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	v := ids.Value().Data().([]int)
	v[1] = 4
	if err := m.Run(); err == nil || !strings.Contains(err.Error(), "id 4 at position 1") {
		t.Errorf("id 4: err %v, want one naming it", err)
	}
	v[1] = 0
	if err := m.Run(); err != nil {
		t.Errorf("good ids after a bad one: %v", err)
	}
}
