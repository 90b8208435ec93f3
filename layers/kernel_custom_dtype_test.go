package layers

import (
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestCustomKernelDtype: a user kernel adding a float64 constant fails in
// a float32 graph with an error naming the kernel and the dtype; with
// ScalarLike it builds in both dtypes.
func TestCustomKernelDtype(t *testing.T) {
	poly := func(one func(q *G.Node) *G.Node) KernelSpec {
		return Custom("poly2", false, func(*graph.Scope) (Kernel, error) {
			return func(q, k *G.Node, _ *Mask) (w *G.Node, err error) {
				defer graph.Recover(&err)
				dot := G.Must(ops.BatchedMatMul(q, k, false, true)) // (B, Tq, Tk)
				return G.Must(G.Square(G.Must(G.Add(dot, one(q))))), nil
			}, nil
		})
	}
	float64One := func(*G.Node) *G.Node { return G.NewConstant(1.0) }
	like := func(q *G.Node) *G.Node { return ScalarLike(q, 1) }
	for _, c := range []struct {
		name string
		dt   tensor.Dtype
		one  func(*G.Node) *G.Node
		want []string // nil: no error
	}{
		{"float64 constant, float32 model", graph.Float32, float64One, []string{`kernel "poly2"`, "float32", "ScalarLike"}},
		{"ScalarLike, float32", graph.Float32, like, nil},
		{"ScalarLike, float64", graph.Float64, like, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := graph.NewScope(c.dt, 1)
			if err != nil {
				t.Fatal(err)
			}
			k, _, err := InstantiateKernel(s.Sub("kernel"), poly(c.one))
			if err != nil {
				t.Fatal(err)
			}
			q, err := s.Input("q", tensor.Shape{1, 3, 2})
			if err != nil {
				t.Fatal(err)
			}
			_, err = k(q, q, nil)
			if c.want == nil {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to mention %q", err, w)
				}
			}
		})
	}
}
