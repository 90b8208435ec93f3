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

// fusedKernels are the kernels the fused head (ops.HeadOp) computes.
var fusedKernels = []struct {
	name      string
	learnable bool
}{
	{KernelLinear, false},
	{KernelExp, false},
	{KernelExp, true},
	{KernelSoftmax, false},
	{KernelSoftmax, true},
}

// fusedHead builds a head with a Builtin kernel in s ("block0/attn").
func fusedHead(s *graph.Scope, kern string, learnable bool, keys KeyMode, tie bool) (*Attention, error) {
	hs := s.Sub("block0").Sub("attn")
	k, err := NewBuiltinKernel(hs.Sub(attnKernelScope), kern, KernelConfig{Gamma: kGamma, Learnable: learnable})
	if err != nil {
		return nil, err
	}
	cfg := AttentionConfig{DIn: aDIn, DK: aDK, DV: aDV, DOut: aDOut, Builtin: k, Keys: keys, TieQK: tie}
	return NewAttention(hs, cfg)
}

// TestFusedHeadForward compares the fused head with the plain-Go reference
// and checks that it is a single node.
func TestFusedHeadForward(t *testing.T) {
	zv := attnTokens()
	for _, kc := range fusedKernels {
		for _, keys := range []KeyMode{ContextKeys, AllKeys} {
			for _, dc := range testDtypes {
				name := fmt.Sprintf("%s/learn=%v/%v/%s", kc.name, kc.learnable, keys, dc.name)
				t.Run(name, func(t *testing.T) {
					s := newTestScope(t, dc.dt)
					a, err := fusedHead(s, kc.name, kc.learnable, keys, false)
					if err != nil {
						t.Fatal(err)
					}
					z := mustConst(t, s, "z", tensor.Shape{aB, aT, aDIn}, zv)
					out, err := a.Forward(z)
					if err != nil {
						t.Fatal(err)
					}
					if _, ok := out.Op().(*ops.HeadOp); !ok {
						t.Fatalf("output op %v, want the fused head", out.Op())
					}
					m, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true})
					if err != nil {
						t.Fatal(err)
					}
					defer m.Close()
					if err := m.Run(); err != nil {
						t.Fatal(err)
					}
					got, err := graph.Values(out)
					if err != nil {
						t.Fatal(err)
					}
					wq, wk, wv, wo := a.Matrices()
					vals := func(n *G.Node) []float64 {
						v, err := graph.Values(n)
						if err != nil {
							t.Fatal(err)
						}
						return v
					}
					want := refAttention(kc.name, kGamma, keys, rounded(dc.dt, zv), vals(wq), vals(wk), vals(wv), vals(wo), aB, aT, aDIn, aDK, aDV, aDOut)
					graphtest.AllClose(t, "fused head", got, want, dc.tol)
				})
			}
		}
	}
}

// TestFusedHeadGrad checks the gradients of the fused head with respect to
// its tokens (a parameter here), every matrix and a learnable g against
// finite differences, in float64 and float32, with and without tied W_Q =
// W_K.
func TestFusedHeadGrad(t *testing.T) {
	zv := attnTokens()
	maxErr := map[tensor.Dtype]float64{}
	for _, kc := range fusedKernels {
		for _, keys := range []KeyMode{ContextKeys, AllKeys} {
			for _, tie := range []bool{false, true} {
				build := func(s *graph.Scope) (*G.Node, error) {
					a, err := fusedHead(s, kc.name, kc.learnable, keys, tie)
					if err != nil {
						return nil, err
					}
					z, err := s.Param("z", tensor.Shape{aB, aT, aDIn}, graph.FromValues(zv))
					if err != nil {
						return nil, err
					}
					out, err := a.Forward(z)
					if err != nil {
						return nil, err
					}
					return weightedSum(s, "r", out)
				}
				for _, dc := range testDtypes {
					name := fmt.Sprintf("%s/learn=%v/%v/tie=%v/%s", kc.name, kc.learnable, keys, tie, dc.name)
					t.Run(name, func(t *testing.T) {
						e := graphtest.CheckGradDtype(t, dc.dt, build, graphtest.Options{Seed: 1})
						maxErr[dc.dt] = math.Max(maxErr[dc.dt], e)
					})
				}
			}
		}
	}
	t.Logf("max gradient-check error: float64 %.3g, float32 %.3g", maxErr[tensor.Float64], maxErr[tensor.Float32])
}
