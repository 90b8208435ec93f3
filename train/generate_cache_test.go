package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/tf"
)

// genModel builds a small generation graph of each family (window 6,
// vocabulary 17) with parameters redrawn from N(0, 0.5²), so that the
// logits are far from uniform.
func genModels(t testing.TB) map[string]LM {
	t.Helper()
	const V, T = 17, 6
	out := map[string]LM{}
	for name, build := range map[string]func(*graph.Scope) (LM, error){
		"gd": func(s *graph.Scope) (LM, error) {
			return gd.NewLM(s, gd.LMConfig{Vocab: V, DPrime: 8, Context: T, Heads: 2}, gd.LMOptions{Batch: 3, Next: true})
		},
		"gd-ff-2": func(s *graph.Scope) (LM, error) {
			return gd.NewLM(s, gd.LMConfig{Vocab: V, DPrime: 8, Context: T, Heads: 2, FF: true, Steps: 2}, gd.LMOptions{Batch: 3, Next: true})
		},
		"gpt": func(s *graph.Scope) (LM, error) {
			return tf.NewGPT(s, tf.GPTConfig{Vocab: V, DModel: 8, Context: T, Heads: 2, Layers: 2}, tf.GPTOptions{Batch: 3, Next: true})
		},
	} {
		s, err := graph.NewScope(graph.Float64, 7)
		if err != nil {
			t.Fatal(err)
		}
		m, err := build(s.Sub(name))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range s.Params() {
			v := make([]float64, p.Shape().TotalSize())
			for i := range v {
				v[i] = 0.5 * s.Rand().NormFloat64()
			}
			if err := graph.SetValue(p, v); err != nil {
				t.Fatal(err)
			}
		}
		out[name] = m
	}
	return out
}

// genPrompts are prompts shorter than, equal to and longer than the window
// of 6.
func genPrompts() [][]int {
	rng := rand.New(rand.NewPCG(3, 4))
	var out [][]int
	for _, n := range []int{1, 3, 6, 9} {
		p := make([]int, n)
		for i := range p {
			p[i] = rng.IntN(17)
		}
		out = append(out, p)
	}
	return out
}

// TestGeneratorCacheMatchesRecompute: the cached Generator gives the full
// recompute's logits (1e-12 relative) and the same greedy, sampled and
// beam sequences, for a batch of prompts shorter than, equal to and longer
// than the window, generating past the window.
func TestGeneratorCacheMatchesRecompute(t *testing.T) {
	for name, m := range genModels(t) {
		t.Run(name, func(t *testing.T) {
			cached, err := NewGenerator(m)
			if err != nil {
				t.Fatal(err)
			}
			full, err := NewGeneratorOptions(m, GeneratorOptions{Recompute: true})
			if err != nil {
				t.Fatal(err)
			}
			defer full.Close()
			if !cached.Cached() || full.Cached() {
				t.Fatalf("Cached() = %v, %v; want true, false", cached.Cached(), full.Cached())
			}
			// Logits along a greedy path, compared at every step.
			worst := 0.0
			check := func(ctx [][]int) ([][]float64, error) {
				a, err := cached.Next(ctx)
				if err != nil {
					return nil, err
				}
				b, err := full.Next(ctx)
				if err != nil {
					return nil, err
				}
				for i := range a {
					for j := range a[i] {
						e := math.Abs(a[i][j]-b[i][j]) / math.Max(1, math.Abs(b[i][j]))
						worst = math.Max(worst, e)
					}
				}
				if worst > 1e-12 {
					return nil, fmt.Errorf("logits differ by %.3g relative", worst)
				}
				return a, nil
			}
			for _, strat := range []string{data.DecodeGreedy, data.DecodeSample, data.DecodeBeam} {
				cfg := data.DecodeConfig{Strategy: strat, MaxNew: 12, Seed: 5, Beams: 3, Stop: data.StopNever(), Temperature: 1.5}
				if _, err := data.Generate(check, genPrompts(), cfg); err != nil {
					t.Fatalf("%s: %v", strat, err)
				}
				a, err := cached.Generate(genPrompts(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				b, err := full.Generate(genPrompts(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				for i := range a {
					if !slices.Equal(a[i], b[i]) {
						t.Errorf("%s, prompt %d: cached %v, recompute %v", strat, i, a[i], b[i])
					}
				}
			}
			t.Logf("worst relative logit difference %.2e", worst)
			if err := cached.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestGeneratorConcurrent: goroutines each with their own Generator over
// one model give the sequential results (cached and recompute, both
// families; run under -race), and a Generator shared by goroutines refuses
// the calls that overlap with a clear error instead of mixing them.
func TestGeneratorConcurrent(t *testing.T) {
	cfg := data.DecodeConfig{Strategy: data.DecodeSample, MaxNew: 10, Seed: 9, Stop: data.StopNever()}
	for name, m := range genModels(t) {
		for _, recompute := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/recompute=%v", name, recompute), func(t *testing.T) {
				opts := GeneratorOptions{Recompute: recompute}
				g, err := NewGeneratorOptions(m, opts)
				if err != nil {
					t.Fatal(err)
				}
				want, err := g.Generate(genPrompts(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				const workers = 4
				got := make([][][]int, workers)
				errs := make([]error, workers)
				var wg sync.WaitGroup
				for w := 0; w < workers; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						own, err := NewGeneratorOptions(m, opts)
						if err != nil {
							errs[w] = err
							return
						}
						defer own.Close()
						for r := 0; r < 3 && err == nil; r++ {
							got[w], err = own.Generate(genPrompts(), cfg)
						}
						errs[w] = err
					}()
				}
				wg.Wait()
				for w := range got {
					if errs[w] != nil {
						t.Fatal(errs[w])
					}
					for i := range want {
						if !slices.Equal(got[w][i], want[i]) {
							t.Fatalf("goroutine %d, prompt %d: %v, sequential %v", w, i, got[w][i], want[i])
						}
					}
				}
				// One Generator shared: overlapping calls are refused, the
				// others give the sequential results.
				var refused, ok sync.Map
				for w := 0; w < workers; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for r := 0; r < 5; r++ {
							out, err := g.Generate(genPrompts(), cfg)
							switch {
							case err != nil && strings.Contains(err.Error(), "in use by another goroutine"):
								refused.Store(w*10+r, true)
							case err != nil:
								t.Errorf("shared Generator: %v", err)
							case !slices.EqualFunc(out, want, slices.Equal):
								t.Errorf("shared Generator gave %v, sequential %v", out, want)
							default:
								ok.Store(w*10+r, true)
							}
						}
					}()
				}
				wg.Wait()
				if err := g.Close(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestGeneratorRefusesOverlap: a call made while another runs on the same
// Generator is refused (deterministically: the busy flag is held).
func TestGeneratorRefusesOverlap(t *testing.T) {
	for name, m := range genModels(t) {
		g, err := NewGenerator(m)
		if err != nil {
			t.Fatal(err)
		}
		g.busy.Store(true)
		if _, err := g.Next([][]int{{1}}); err == nil || !strings.Contains(err.Error(), "in use") {
			t.Errorf("%s: Next during another call: %v, want the in-use error", name, err)
		}
		if err := g.Close(); err == nil {
			t.Errorf("%s: Close during a call gave no error", name)
		}
		g.busy.Store(false)
		for _, bad := range [][][]int{{{}}, {{17}}, {{-1, 2}}} {
			if _, err := g.Next(bad); err == nil {
				t.Errorf("%s: Next(%v) gave no error", name, bad)
			}
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
