package gd

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gdattn/gdattn/graph"
)

// huge is 2^40: a size that overflows nothing on its own but cannot be
// allocated (or built as graph nodes) in any product.
const huge = 1 << 40

// TestNewModelSizes: sizes that cannot fit in memory are refused at once,
// with an error naming the field, instead of panicking in makeslice,
// exhausting memory or building a graph for hours (issue 12).
func TestNewModelSizes(t *testing.T) {
	ok := Config{D: 3, DPrime: 2, C: 4, N: 5}
	for _, tc := range []struct {
		name  string
		mod   func(*Config)
		batch int
		want  string
	}{
		{"D", func(c *Config) { c.D = huge }, 2, "D = 1099511627776"},
		{"DPrime", func(c *Config) { c.DPrime = huge }, 2, "DPrime = 1099511627776"},
		{"C", func(c *Config) { c.C = huge }, 2, "C = 1099511627776"},
		{"N", func(c *Config) { c.N = math.MaxInt }, 2, "N = 9223372036854775807"},
		{"Blocks", func(c *Config) { c.Blocks = huge }, 2, "Blocks"},
		{"Heads", func(c *Config) { c.Heads = huge }, 2, "Heads"},
		{"Blocks·Heads", func(c *Config) { c.Blocks, c.Heads = 1<<9, 1<<9 }, 2, "Blocks·Heads"},
		{"batch", func(c *Config) {}, huge, "batch"},
		{"batch·N", func(c *Config) { c.N = 1 << 20 }, 1 << 20, "batch·(N+1)·C"},
		{"DPrime²", func(c *Config) { c.D, c.DPrime = 1<<20, 1<<20 }, 1, "Heads·DPrime·DPrime (p)"},
		{"DPrime·C", func(c *Config) { c.DPrime, c.C = 1<<20, 1<<20 }, 1, "DPrime·C"},
		{"literal", func(c *Config) { c.D, c.Blocks, c.Literal = 1<<16, 1<<10, true }, 1, "Blocks·8·D·D"},
		// One tensor just past graph.MaxElements (2^31), all of them far
		// below 2^34: refused here, naming the fields, not by graph.Scope.
		{"labels tensor", func(c *Config) { c.N, c.C = 1, 1<<12 }, 1<<19 + 1, "batch·(N+1)·C (labels) = 524289·2·4096 elements exceeds the limit of 2^31 elements per tensor (graph.MaxElements)"},
		{"we tensor", func(c *Config) { c.DPrime, c.C = 1<<16, 1<<15+1 }, 1, "DPrime·C (we) = 65536·32769 elements exceeds the limit of 2^31 elements per tensor (graph.MaxElements)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.mod(&cfg)
			s, _ := graph.NewScope(graph.Float64, 1)
			start := time.Now()
			m, err := NewModel(s, cfg, tc.batch)
			if m != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewModel: %v, want an error naming %q", err, tc.want)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("NewModel took %v to refuse", d)
			}
			if ps := s.ParamNames(); len(ps) != 0 {
				t.Errorf("a refused NewModel created parameters %v", ps)
			}
		})
	}
	if _, err := NewModel(nil, ok, 2); err == nil || !strings.Contains(err.Error(), "scope is nil") {
		t.Errorf("nil scope: error %v, want one saying the scope is nil", err)
	}
}

func TestNewLMSizes(t *testing.T) {
	ok := LMConfig{Vocab: 5, DPrime: 2, Context: 3, Heads: 1}
	for _, tc := range []struct {
		name  string
		mod   func(*LMConfig)
		batch int
		want  string
	}{
		{"Vocab", func(c *LMConfig) { c.Vocab = huge }, 1, "Vocab = 1099511627776"},
		{"DPrime", func(c *LMConfig) { c.DPrime = huge }, 1, "DPrime = 1099511627776"},
		{"Context", func(c *LMConfig) { c.Context = math.MaxInt }, 1, "Context = 9223372036854775807"},
		{"FFHidden", func(c *LMConfig) { c.FFHidden, c.FF = huge, true }, 1, "FFHidden = 1099511627776"},
		{"Heads", func(c *LMConfig) { c.Heads = huge }, 1, "Heads"},
		{"Steps", func(c *LMConfig) { c.Steps = huge }, 1, "Steps"},
		{"batch", func(c *LMConfig) {}, huge, "batch"},
		{"Vocab·DPrime", func(c *LMConfig) { c.Vocab, c.DPrime = 1<<20, 1<<20 }, 1, "Vocab·DPrime"},
		{"logits", func(c *LMConfig) { c.Vocab, c.Context = 1<<20, 1<<10 }, 1 << 10, "batch·Context·Vocab"},
		{"kernels", func(c *LMConfig) { c.Context, c.Heads = 1<<16, 16 }, 1 << 4, "Heads·batch·(Context+1)·Context"},
		{"wte tensor", func(c *LMConfig) { c.Vocab, c.DPrime = 1<<16, 1<<15+1 }, 1, "Vocab·DPrime (wte) = 65536·32769 elements exceeds the limit of 2^31 elements per tensor (graph.MaxElements)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.mod(&cfg)
			s, _ := graph.NewScope(graph.Float64, 1)
			start := time.Now()
			m, err := NewLM(s, cfg, LMOptions{Batch: tc.batch})
			if m != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewLM: %v, want an error naming %q", err, tc.want)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("NewLM took %v to refuse", d)
			}
		})
	}
	if _, err := NewLM(nil, ok, LMOptions{Batch: 1}); err == nil || !strings.Contains(err.Error(), "scope is nil") {
		t.Errorf("nil scope: error %v, want one saying the scope is nil", err)
	}
}

func TestConstructionSizes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		steps, d, n int
		want        string
	}{
		{"steps", huge, 2, 3, "steps"},
		{"d", 1, huge, 3, "d = 1099511627776"},
		{"matrix", 1, 1 << 20, 3, "(d+3·dPrime)²"},
	} {
		if _, err := Construction(Interleaved, tc.steps, tc.d, 2, tc.n, 1, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Construction error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}
