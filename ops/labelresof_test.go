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

// labelResOfBuild builds Σ tanh(r) ⊙ c for r = step·(w_{e,y} − E) over the
// context rows, E = tanh(P) of a parameter P (B, N, d') and the step
// exp("ls"), with LabelResidualsOf (fused) or by the chain it replaces
// (GatherCols, Slice, Sub, Mul); ids hold −1 at the queries and at one
// context row.
func labelResOfBuild(fused bool, B, N, C, dp int) graphtest.BuildFunc {
	return func(s *graph.Scope) (*G.Node, error) {
		T := N + 1
		rng := rand.New(rand.NewPCG(5, 6))
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
		pe, _ := s.Param("pe", tensor.Shape{B, N, dp}, graph.Normal(1))
		step := G.Must(G.Exp(ls))
		e := G.Must(G.Tanh(pe))
		var r *G.Node
		var err error
		if fused {
			r, err = ops.LabelResidualsOf(we, ids, step, e, N)
		} else {
			wy := G.Must(ops.GatherCols(we, ids))
			wy = G.Must(ops.Slice(G.Must(ops.Reshape(wy, tensor.Shape{B, T, dp})), 1, 0, N))
			r, err = G.Mul(step, G.Must(G.Sub(wy, e)))
		}
		if err != nil {
			return nil, err
		}
		c, _ := s.Const("c", tensor.Shape{B, N, dp}, graphtest.RandValues(s, B*N*dp))
		return G.Sum(G.Must(G.HadamardProd(G.Must(G.Tanh(r)), c)))
	}
}

// TestLabelResidualsOfGrad checks LabelResidualsOf's gradients w.r.t. W_e,
// the step and the expectations against finite differences, float64 and
// float32, with d' ≤ 8 and d' > 8 (the two paths of the label sums).
func TestLabelResidualsOfGrad(t *testing.T) {
	for _, dp := range []int{3, 10} {
		t.Run(fmt.Sprintf("dprime=%d", dp), func(t *testing.T) {
			build := labelResOfBuild(true, 3, 5, 4, dp)
			graphtest.CheckGrad(t, build, graphtest.Options{Seed: 7})
			graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 7})
		})
	}
}

// TestLabelResidualsOfMatchesChain: the op's loss is the chain's bit for
// bit, float64 and float32, and so is the expectations' gradient; the
// gradients of W_e and the step are equal within rounding.
func TestLabelResidualsOfMatchesChain(t *testing.T) {
	const B, N, C = 4, 9, 6
	for _, c := range []struct {
		dp int
		dt tensor.Dtype
	}{{5, tensor.Float64}, {5, tensor.Float32}, {11, tensor.Float64}, {11, tensor.Float32}} {
		dp, dt := c.dp, c.dt
		t.Run(fmt.Sprintf("dprime=%d/%v", dp, dt), func(t *testing.T) {
			l1, g1 := graphtest.Gradients(t, labelResOfBuild(true, B, N, C, dp), dt, 11)
			l2, g2 := graphtest.Gradients(t, labelResOfBuild(false, B, N, C, dp), dt, 11)
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
			for i, want := range g2["pe"] {
				if g1["pe"][i] != want {
					t.Fatalf("dpe[%d] = %v, the chain's %v", i, g1["pe"][i], want)
				}
			}
		})
	}
}

// TestLabelResidualsOfErrors: bad inputs are refused by the constructor, an
// id outside [−1, C) by the run.
func TestLabelResidualsOfErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	we, _ := s.Param("we", tensor.Shape{3, 4}, graph.Normal(1))
	vec, _ := s.Input("vec", tensor.Shape{4})
	step, _ := s.Param("step", tensor.Shape{}, graph.Constant(0.5))
	e, _ := s.Param("e", tensor.Shape{2, 2, 3}, graph.Normal(1))
	badE, _ := s.Input("bad_e", tensor.Shape{2, 3, 3})
	ids := intInput(s, "ids", 6)
	for _, c := range []struct {
		name string
		run  func() (*G.Node, error)
		want string
	}{
		{"nil", func() (*G.Node, error) { return ops.LabelResidualsOf(we, ids, step, nil, 2) }, "nil"},
		{"rank", func() (*G.Node, error) { return ops.LabelResidualsOf(vec, ids, step, e, 2) }, "want (d', C)"},
		{"float ids", func() (*G.Node, error) { return ops.LabelResidualsOf(we, vec, step, e, 2) }, "int vector"},
		{"step", func() (*G.Node, error) { return ops.LabelResidualsOf(we, ids, we, e, 2) }, "scalar"},
		{"N", func() (*G.Node, error) { return ops.LabelResidualsOf(we, ids, step, e, 3) }, "whole sequences"},
		{"N zero", func() (*G.Node, error) { return ops.LabelResidualsOf(we, ids, step, e, 0) }, "whole sequences"},
		{"e shape", func() (*G.Node, error) { return ops.LabelResidualsOf(we, ids, step, badE, 2) }, "expectations"},
	} {
		if n, err := c.run(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: node %v, err %v; want an error mentioning %q", c.name, n, err, c.want)
		}
	}
	r, err := ops.LabelResidualsOf(we, ids, step, e, 2)
	if err != nil {
		t.Fatal(err)
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
	v[5] = -2 // a query row's id is checked too
	if err := m.Run(); err == nil || !strings.Contains(err.Error(), "id -2 at position 5") {
		t.Errorf("query id -2: err %v, want one naming it", err)
	}
	v[5] = 0
	if err := m.Run(); err != nil {
		t.Errorf("good ids after a bad one: %v", err)
	}
}
