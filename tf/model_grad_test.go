package tf

import (
	"fmt"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/losses"
	G "gorgonia.org/gorgonia"
)

// modelLoss returns a build function: the mean cross-entropy of the query
// labels for a TF on a fixed random batch.
func modelLoss(cfg Config, B int, seed uint64) graphtest.BuildFunc {
	x, y := randomBatch(seed, B, cfg.N+1, cfg.D, cfg.C)
	return func(s *graph.Scope) (*G.Node, error) {
		m, err := NewModel(s, cfg, B)
		if err != nil {
			return nil, err
		}
		if err := m.Feed(x, y); err != nil {
			return nil, err
		}
		return losses.CrossEntropy(m.Logits, m.Target)
	}
}

// TestModelGradients checks the gradient of the cross-entropy with respect
// to every parameter (every element of every matrix in the 1-layer cases, a
// seeded sample of 12 elements per parameter in the 2-layer ones, to keep
// the test fast) against finite differences, in float64 (relative error
// < 1e-6) and float32 (< 1e-3), for every kernel, 1 and 2 layers, with and
// without cross-attention, 2 heads, from the random (Glorot) start (the GD
// start, where W_Q = W_K, is TestModelGradientsGDStart in package tf_test).
func TestModelGradients(t *testing.T) {
	const B, N, d, dp, C = 2, 3, 2, 2, 3
	type tc struct {
		name string
		cfg  Config
		max  int // graphtest.Options.MaxElems
	}
	var cases []tc
	for _, k := range layers.KernelNames() {
		for _, L := range []int{1, 2} {
			for _, cross := range []bool{false, true} {
				cfg := Config{D: d, DPrime: dp, C: C, N: N, Layers: L, Heads: 2, Cross: cross, Kernel: layers.Builtin(k, 0.7)}
				if k == layers.KernelExp {
					// Unnormalised exp(g q·k) of random layers compounds: at
					// g = 0.7 with Glorot weights the 2-layer cross loss is
					// 1.7e18 and its finite differences lose all precision;
					// at g = 0.1 with weights in ±0.5 it is O(1).
					cfg.Kernel, cfg.WInit = layers.Exp(0.1), graph.Uniform(-0.5, 0.5)
				}
				max := 0
				if L == 2 {
					max = 12
				}
				cases = append(cases, tc{fmt.Sprintf("%s/L=%d/cross=%v", k, L, cross), cfg, max})
			}
		}
	}
	cases = append(cases,
		tc{"softmax/DK=3/zerocolumn", Config{D: d, DPrime: dp, C: C, N: N, DK: 3, ZeroColumn: true}, 0},
	)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			build := modelLoss(c.cfg, B, uint64(100+i))
			opts := graphtest.Options{Seed: 1, MaxElems: c.max}
			worst := graphtest.CheckGrad(t, build, opts)
			worst32 := graphtest.CheckGrad32(t, build, opts)
			t.Logf("max relative error: float64 %.2e, float32 %.2e", worst, worst32)
		})
	}
}
