package gd

import (
	"fmt"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/kvcache"
	"github.com/gdattn/gdattn/kvcache/kvcachetest"
	"github.com/gdattn/gdattn/layers"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// squaredLinear is a user kernel, κ(q, k) = (q·k)², built from graph ops.
func squaredLinear() layers.KernelSpec {
	return layers.Custom("sqlinear", false, func(*graph.Scope) (layers.Kernel, error) {
		lin := layers.LinearKernel()
		return func(q, k *G.Node, mask *layers.Mask) (*G.Node, error) {
			w, err := lin(q, k, mask)
			if err != nil {
				return nil, err
			}
			return G.Square(w)
		}, nil
	})
}

// decoderScale redraws every parameter from N(0, std²) (λ_m around 1), so
// that the tests run away from the initialisation's symmetries.
func decoderScale(s *graph.Scope, std float64) error {
	for _, p := range s.Params() {
		v := make([]float64, p.Shape().TotalSize())
		for i := range v {
			v[i] = std * s.Rand().NormFloat64()
		}
		if err := graph.SetValue(p, v); err != nil {
			return err
		}
	}
	return nil
}

// TestLMDecoderMatchesGraph checks the cached decoder against the
// generation graph (the full recompute) for GD and GD + FF, every built-in
// kernel (fixed and learned g), a combination and a user kernel, full and
// diagonal P_m, Steps 1 to 3 with and without MeanE, in float64 (1e-12
// relative) and float32 (1e-5): contexts shorter than, equal to and longer
// than the window, one id at a time, in chunks and in batches of rows.
func TestLMDecoderMatchesGraph(t *testing.T) {
	const T, V = 5, 13
	type tc struct {
		name string
		cfg  LMConfig
	}
	var cases []tc
	for _, k := range layers.KernelNames() {
		cases = append(cases, tc{k + "/fixed", LMConfig{Kernel: layers.Builtin(k, 0.8).Fixed()}})
		cases = append(cases, tc{k + "/learned/ff", LMConfig{Kernel: layers.Builtin(k, 0.8), FF: true}})
	}
	cases = append(cases,
		tc{"sum", LMConfig{Kernel: layers.Sum(layers.RBF(0.7), layers.Scaled(0.3, layers.Linear()))}},
		tc{"user", LMConfig{Kernel: squaredLinear(), DiagP: true}},
		tc{"diagp/ff", LMConfig{DiagP: true, FF: true}},
	)
	for K := 2; K <= 3; K++ {
		cases = append(cases,
			tc{fmt.Sprintf("steps%d", K), LMConfig{Steps: K}},
			tc{fmt.Sprintf("steps%d/rbf/ff", K), LMConfig{Steps: K, Kernel: layers.RBF(0.5), FF: true}},
			tc{fmt.Sprintf("steps%d/meane", K), LMConfig{Steps: K, MeanE: true, DiagP: true}},
		)
	}
	for _, dt := range []tensor.Dtype{graph.Float64, graph.Float32} {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%v/%s", dt, c.name), func(t *testing.T) {
				s, err := graph.NewScope(dt, uint64(10+i))
				if err != nil {
					t.Fatal(err)
				}
				cfg := c.cfg
				cfg.Vocab, cfg.DPrime, cfg.Context, cfg.Heads, cfg.FFHidden = V, 6, T, 3, 7
				m, err := NewLM(s.Sub("lm"), cfg, LMOptions{Batch: 2, Next: true})
				if err != nil {
					t.Fatal(err)
				}
				if err := decoderScale(s, 0.6); err != nil {
					t.Fatal(err)
				}
				dec, err := m.NewDecoder()
				if err != nil {
					t.Fatal(err)
				}
				tol := 1e-12
				if dt == graph.Float32 {
					tol = 1e-5
				}
				kvcachetest.Check(t, dec, func(c [][]int) [][]float64 { return kvcachetest.GraphNext(t, m, c) }, T, V, tol)
			})
		}
	}
}

// TestLMDecoderCausal checks the invariant the cache rests on: the values
// cached for a prefix are, bit for bit, those of the prefix alone, whatever
// ids follow it (within the window), at every step.
func TestLMDecoderCausal(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 3)
	m, err := NewLM(s, LMConfig{Vocab: 9, DPrime: 4, Context: 8, Heads: 2, Steps: 3}, LMOptions{Batch: 1, Next: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := decoderScale(s, 0.6); err != nil {
		t.Fatal(err)
	}
	dec, err := m.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	prefix := []int{3, 1, 4}
	a, b := dec.NewRow(), dec.NewRow()
	if err := dec.Append([]kvcache.Row{a, b}, [][]int{prefix, append(append([]int(nil), prefix...), 1, 5, 8, 2)}, [][]float64{nil, nil}); err != nil {
		t.Fatal(err)
	}
	ra, rb := a.(*lmRow[float64]), b.(*lmRow[float64])
	for k := range ra.vals {
		if len(ra.vals[k]) != len(prefix)*4 {
			t.Fatalf("step %d: %d cached values, want %d", k, len(ra.vals[k]), len(prefix)*4)
		}
		for j, v := range ra.vals[k] {
			if rb.vals[k][j] != v {
				t.Fatalf("step %d: value %d of the prefix is %v alone, %v with later ids", k, j, v, rb.vals[k][j])
			}
		}
	}
}
