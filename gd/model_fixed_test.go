package gd

import (
	"fmt"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
)

// TestFixedAlphaGamma: with FixedAlpha and FixedGamma the model builds (α
// is a graph constant: a product of two free Gorgonia constants fails with
// "No Graph Supplied"), trains W_e only, and still matches the reference.
func TestFixedAlphaGamma(t *testing.T) {
	const B, N, d, dp, C, K = 2, 4, 3, 2, 5, 2
	T := N + 1
	for _, form := range []Form{OneStep, Interleaved} {
		t.Run(form.String(), func(t *testing.T) {
			cfg := Config{D: d, DPrime: dp, C: C, N: N, Form: form, Blocks: K, Kernel: layers.RBF(0.7).Fixed(), Alpha: 2,
				FixedAlpha: true}
			steps := K
			if form == OneStep {
				cfg.Blocks, steps = 1, 1
			}
			x, y := randomBatch(4, B, T, d, C)
			m := runForward(t, cfg, B, 3, x, y)
			if got := fmt.Sprint(m.Scope().ParamNames()); got != "[we]" {
				t.Errorf("params = %s, want [we]", got)
			}
			we, _ := graph.Values(m.We)
			ref, err := Reference(x, y, B, T, d, we, dp, C, ReferenceConfig{Steps: steps, Alpha: 2, Kernel: "rbf", Gamma: 0.7})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := graph.Values(m.F[steps])
			if e := maxAbsDiff(got, ref.F[steps]); e > 1e-12 {
				t.Errorf("max |f - f_ref| = %.3g, want <= 1e-12", e)
			}
		})
	}
}
