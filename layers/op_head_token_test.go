package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestFusedHeadTokenGrad checks the fused head's gradients (tokens, every
// matrix, a learnable g) against finite differences, in float64 and
// float32, at a batch large enough for the paths of the token-sized
// products (B·T and B at least 16 rows: ops' tokenGemm) and the softmax
// rows of many queries at once: the full head, its query row, and the
// regrouped query row, softmax kernel.
func TestFusedHeadTokenGrad(t *testing.T) {
	const b, tt = 16, 3
	rng := rand.New(rand.NewPCG(21, 22))
	zv := make([]float64, b*tt*aDIn)
	for i := range zv {
		zv[i] = rng.NormFloat64()
	}
	maxErr := map[tensor.Dtype]float64{}
	for _, mode := range []string{"full", "query", "regrouped"} {
		build := func(s *graph.Scope) (*G.Node, error) {
			hs := s.Sub("block0").Sub("attn")
			k, err := NewBuiltinKernel(hs.Sub(attnKernelScope), KernelSoftmax, KernelConfig{Gamma: kGamma, Learnable: true})
			if err != nil {
				return nil, err
			}
			a, err := NewAttention(hs, AttentionConfig{DIn: aDIn, DK: aDK, DV: aDV, DOut: aDOut, Builtin: k, Keys: ContextKeys, RegroupQuery: mode == "regrouped"})
			if err != nil {
				return nil, err
			}
			z, err := s.Param("z", tensor.Shape{b, tt, aDIn}, graph.FromValues(zv))
			if err != nil {
				return nil, err
			}
			var out *G.Node
			if mode == "full" {
				out, err = a.Forward(z)
			} else {
				out, err = a.ForwardQuery(z)
			}
			if err != nil {
				return nil, err
			}
			return weightedSum(s, "r", out)
		}
		for _, dc := range testDtypes {
			t.Run(fmt.Sprintf("%s/%s", mode, dc.name), func(t *testing.T) {
				e := graphtest.CheckGradDtype(t, dc.dt, build, graphtest.Options{Seed: 1})
				maxErr[dc.dt] = math.Max(maxErr[dc.dt], e)
			})
		}
	}
	t.Logf("max gradient-check error: float64 %.3g, float32 %.3g", maxErr[tensor.Float64], maxErr[tensor.Float32])
}
