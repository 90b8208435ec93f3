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

// TestKernelDataWeights checks BuiltinKernel.DataWeights: the same weights
// as the kernel function, no gradient nodes for q and k, and the gradient of
// a learnable g against finite differences (float64, float32), masked or
// not.
func TestKernelDataWeights(t *testing.T) {
	qv, kv := kernelData()
	maxErr := map[tensor.Dtype]float64{}
	for _, tc := range kernelCases {
		if !tc.learnable {
			continue
		}
		for _, masked := range []bool{false, true} {
			build := func(s *graph.Scope) (*G.Node, error) {
				q, err := s.Const("q", tensor.Shape{kB, kTq, kD}, qv)
				if err != nil {
					return nil, err
				}
				k, err := s.Const("k", tensor.Shape{kB, kTk, kD}, kv)
				if err != nil {
					return nil, err
				}
				bk, err := NewBuiltinKernel(s.Sub("kernel"), tc.kernel, KernelConfig{Gamma: kGamma, Learnable: true})
				if err != nil {
					return nil, err
				}
				var mask *Mask
				if masked {
					if mask, err = NewMask(s, "mask", kB, kTq, kTk, kVisible); err != nil {
						return nil, err
					}
				}
				w, err := bk.DataWeights(q, k, mask)
				if err != nil {
					return nil, err
				}
				if op, ok := w.Op().(*ops.KernelOp); !ok || !op.DataQK() || op.DiffWRT(op.Arity())[0] {
					return nil, fmt.Errorf("weights op %v: want a data kernel op", w.Op())
				}
				ref, err := bk.Kernel(q, k, mask)
				if err != nil {
					return nil, err
				}
				// Both enter the loss: the values must agree (checked
				// below) and the gradient of g sums both paths.
				l1, err := weightedSum(s, "r", w)
				if err != nil {
					return nil, err
				}
				d := G.Must(G.Sub(w, ref))
				return G.Add(l1, G.Must(G.Sum(G.Must(G.Square(d)))))
			}
			for _, dc := range testDtypes {
				t.Run(fmt.Sprintf("%s/masked=%v/%s", tc.name, masked, dc.name), func(t *testing.T) {
					e := graphtest.CheckGradDtype(t, dc.dt, build, graphtest.Options{Seed: 1})
					maxErr[dc.dt] = math.Max(maxErr[dc.dt], e)
				})
			}
		}
	}
	// Values: DataWeights equals the kernel function.
	for _, tc := range kernelCases {
		s := newTestScope(t, tensor.Float64)
		q := mustConst(t, s, "q", tensor.Shape{kB, kTq, kD}, qv)
		k := mustConst(t, s, "k", tensor.Shape{kB, kTk, kD}, kv)
		bk, err := NewBuiltinKernel(s.Sub("kernel"), tc.kernel, KernelConfig{Gamma: kGamma, Learnable: tc.learnable})
		if err != nil {
			t.Fatal(err)
		}
		w1, err := bk.DataWeights(q, k, nil)
		if err != nil {
			t.Fatal(err)
		}
		w2, err := bk.Kernel(q, k, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Run(); err != nil {
			t.Fatal(err)
		}
		v1, _ := graph.Values(w1)
		v2, _ := graph.Values(w2)
		graphtest.AllClose(t, tc.name, v1, v2, 0)
		m.Close()
	}
	t.Logf("max gradient-check error: float64 %.3g, float32 %.3g", maxErr[tensor.Float64], maxErr[tensor.Float32])
}
