package layers

import (
	"fmt"
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/ops"
)

// Sizes of the DataApply tests: large enough for the eight-row kernels of
// the narrow products (and their row tails).
const xaB, xaTq, xaTk, xaD, xaP = 2, 11, 10, 3, 5

// TestKernelDataApply checks BuiltinKernel.DataApply against DataWeights
// followed by ops.BatchedMatMul: the same loss of the output and the same
// gradients of the values and of g, bit for bit (float64 and float32, every named
// kernel, fixed and learnable g, Tq queries and a single one: the GD models'
// query row, whose op keeps its raw scores for the backward pass).
func TestKernelDataApply(t *testing.T) {
	rng := newTestRand()
	qv, kv, vv := randn(rng, xaB*xaTq*xaD, 1), randn(rng, xaB*xaTk*xaD, 1), randn(rng, xaB*xaTk*xaP, 1)
	for _, tq := range []int{xaTq, 1} {
		for _, tc := range kernelCases {
			for _, dc := range testDtypes {
				t.Run(fmt.Sprintf("%s/%s/tq=%d", tc.name, dc.name, tq), func(t *testing.T) {
					var outs, dvs, dgs [2][]float64
					for i, fused := range []bool{false, true} {
						s := newTestScope(t, dc.dt)
						q := mustConst(t, s, "q", tensor.Shape{xaB, tq, xaD}, qv[:xaB*tq*xaD])
						k := mustConst(t, s, "k", tensor.Shape{xaB, xaTk, xaD}, kv)
						v, err := s.Param("v", tensor.Shape{xaB, xaTk, xaP}, graph.FromValues(vv))
						if err != nil {
							t.Fatal(err)
						}
						bk, err := NewBuiltinKernel(s.Sub("kernel"), tc.kernel, KernelConfig{Gamma: kGamma, Learnable: tc.learnable})
						if err != nil {
							t.Fatal(err)
						}
						var out *G.Node
						if fused {
							out, err = bk.DataApply(q, k, v)
						} else {
							var w *G.Node
							if w, err = bk.DataWeights(q, k, nil); err == nil {
								out, err = ops.BatchedMatMul(w, v, false, false)
							}
						}
						if err != nil {
							t.Fatal(err)
						}
						loss, err := weightedSum(s, "r", out)
						if err != nil {
							t.Fatal(err)
						}
						m, err := graph.NewMachine(s, loss, graph.MachineOptions{})
						if err != nil {
							t.Fatal(err)
						}
						if err := m.Run(); err != nil {
							t.Fatal(err)
						}
						// The loss (the output's values themselves may be
						// overwritten in place by the product that follows).
						outs[i], _ = graph.Values(loss)
						if dvs[i], err = graph.GradValues(v); err != nil {
							t.Fatal(err)
						}
						if tc.learnable {
							for _, p := range s.Params() {
								if p != v {
									if dgs[i], err = graph.GradValues(p); err != nil {
										t.Fatal(err)
									}
								}
							}
						}
						m.Close()
					}
					for _, c := range []struct {
						name string
						a, b []float64
					}{{"loss", outs[0], outs[1]}, {"dv", dvs[0], dvs[1]}, {"dg", dgs[0], dgs[1]}} {
						if len(c.a) != len(c.b) {
							t.Fatalf("%s: %d and %d values", c.name, len(c.a), len(c.b))
						}
						for j := range c.a {
							if math.Float64bits(c.a[j]) != math.Float64bits(c.b[j]) {
								t.Fatalf("%s[%d]: fused %v, unfused %v", c.name, j, c.b[j], c.a[j])
							}
						}
					}
					if tc.learnable && len(dgs[1]) != 1 {
						t.Fatalf("dg: %d values, want 1", len(dgs[1]))
					}
				})
			}
		}
	}
}

// TestKernelDataApplyGrad checks the gradients of DataApply's op (values
// and a learnable g) against finite differences, float64 and float32, with
// Tq queries and a single one.
func TestKernelDataApplyGrad(t *testing.T) {
	rng := newTestRand()
	qv, kv, vv := randn(rng, xaB*xaTq*xaD, 1), randn(rng, xaB*xaTk*xaD, 1), randn(rng, xaB*xaTk*xaP, 1)
	maxErr := map[tensor.Dtype]float64{}
	for _, tq := range []int{xaTq, 1} {
		for _, tc := range kernelCases {
			build := func(s *graph.Scope) (*G.Node, error) {
				q, err := s.Const("q", tensor.Shape{xaB, tq, xaD}, qv[:xaB*tq*xaD])
				if err != nil {
					return nil, err
				}
				k, err := s.Const("k", tensor.Shape{xaB, xaTk, xaD}, kv)
				if err != nil {
					return nil, err
				}
				v, err := s.Param("v", tensor.Shape{xaB, xaTk, xaP}, graph.FromValues(vv))
				if err != nil {
					return nil, err
				}
				bk, err := NewBuiltinKernel(s.Sub("kernel"), tc.kernel, KernelConfig{Gamma: kGamma, Learnable: tc.learnable})
				if err != nil {
					return nil, err
				}
				out, err := bk.DataApply(q, k, v)
				if err != nil {
					return nil, err
				}
				if _, ok := out.Op().(*ops.KernelApplyOp); !ok {
					return nil, fmt.Errorf("output op %v: want a kernel apply op", out.Op())
				}
				return weightedSum(s, "r", out)
			}
			for _, dc := range testDtypes {
				t.Run(fmt.Sprintf("%s/%s/tq=%d", tc.name, dc.name, tq), func(t *testing.T) {
					e := graphtest.CheckGradDtype(t, dc.dt, build, graphtest.Options{Seed: 1})
					maxErr[dc.dt] = math.Max(maxErr[dc.dt], e)
				})
			}
		}
	}
	t.Logf("max gradient-check error: float64 %.3g, float32 %.3g", maxErr[tensor.Float64], maxErr[tensor.Float32])
}
