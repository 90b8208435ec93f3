package tf

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
// with an error naming the field (issue 12).
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
		{"DK", func(c *Config) { c.DK = huge }, 2, "DK = 1099511627776"},
		{"Layers", func(c *Config) { c.Layers = huge }, 2, "Layers"},
		{"Heads", func(c *Config) { c.Heads = huge }, 2, "Heads"},
		{"batch", func(c *Config) {}, huge, "batch"},
		{"kernel weights", func(c *Config) { c.N = 1 << 16 }, 1 << 4, "Layers·Heads·batch·(N+1)·N"},
		{"attention matrices", func(c *Config) { c.D, c.Heads = 1<<16, 16 }, 1, "Layers·Heads·D·(2·DK+2·D)"},
		// One tensor just past graph.MaxElements (2^31), all of them far
		// below 2^34: refused here, naming the fields, not by graph.Scope.
		{"labels tensor", func(c *Config) { c.N, c.C = 1, 1<<12 }, 1<<19 + 1, "batch·(N+1)·C (labels) = 524289·2·4096 elements exceeds the limit of 2^31 elements per tensor (graph.MaxElements)"},
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

func TestNewGPTSizes(t *testing.T) {
	ok := GPTConfig{Vocab: 5, Context: 3, DModel: 4, Heads: 2}
	for _, tc := range []struct {
		name  string
		mod   func(*GPTConfig)
		batch int
		want  string
	}{
		{"Vocab", func(c *GPTConfig) { c.Vocab = huge }, 1, "Vocab = 1099511627776"},
		{"Context", func(c *GPTConfig) { c.Context = math.MaxInt }, 1, "Context = 9223372036854775807"},
		{"DModel", func(c *GPTConfig) { c.DModel = huge }, 1, "DModel = 1099511627776"},
		{"FFHidden", func(c *GPTConfig) { c.FFHidden = huge }, 1, "FFHidden = 1099511627776"},
		{"Layers", func(c *GPTConfig) { c.Layers = huge }, 1, "Layers"},
		{"Heads", func(c *GPTConfig) { c.Heads = huge }, 1, "Layers·Heads"},
		{"batch", func(c *GPTConfig) {}, huge, "batch"},
		{"logits", func(c *GPTConfig) { c.Vocab, c.Context = 1<<20, 1<<10 }, 1 << 10, "batch·Context·Vocab"},
		{"attention", func(c *GPTConfig) { c.Context = 1 << 14 }, 1 << 8, "batch·Context·Context"},
		{"wte tensor", func(c *GPTConfig) { c.Vocab, c.DModel = 1<<16, 1<<15+2 }, 1, "Vocab·DModel (wte) = 65536·32770 elements exceeds the limit of 2^31 elements per tensor (graph.MaxElements)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.mod(&cfg)
			s, _ := graph.NewScope(graph.Float64, 1)
			start := time.Now()
			m, err := NewGPT(s, cfg, GPTOptions{Batch: tc.batch})
			if m != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewGPT: %v, want an error naming %q", err, tc.want)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("NewGPT took %v to refuse", d)
			}
		})
	}
	if _, err := NewGPT(nil, ok, GPTOptions{Batch: 1}); err == nil || !strings.Contains(err.Error(), "scope is nil") {
		t.Errorf("nil scope: error %v, want one saying the scope is nil", err)
	}
}

// TestNewRegressorSizes: the Regressor's sizes, layers and heads are
// bounded like the other models' (internal/bounds): refused at once, with
// an error naming the field, before any parameter is created.
func TestNewRegressorSizes(t *testing.T) {
	ok := RegressorConfig{D: 3, DY: 2, N: 5}
	for _, tc := range []struct {
		name  string
		mod   func(*RegressorConfig)
		batch int
		want  string
	}{
		{"D", func(c *RegressorConfig) { c.D = huge }, 2, "D = 1099511627776"},
		{"DY", func(c *RegressorConfig) { c.DY = huge }, 2, "DY = 1099511627776"},
		{"N", func(c *RegressorConfig) { c.N = math.MaxInt }, 2, "N = 9223372036854775807"},
		{"Layers", func(c *RegressorConfig) { c.Layers = huge }, 2, "Layers"},
		{"Heads", func(c *RegressorConfig) { c.Heads = huge }, 2, "Heads"},
		{"Layers·Heads", func(c *RegressorConfig) { c.Layers, c.Heads = 64, 64 }, 2, "Layers·Heads"},
		{"batch", func(c *RegressorConfig) {}, huge, "batch"},
		{"kernel weights", func(c *RegressorConfig) { c.N = 1 << 16 }, 1 << 4, "Layers·Heads·batch·(N+1)·N"},
		{"attention matrices", func(c *RegressorConfig) { c.D, c.Heads = 1<<16, 16 }, 1, "Layers·Heads·4·D·D"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.mod(&cfg)
			s, _ := graph.NewScope(graph.Float64, 1)
			start := time.Now()
			m, err := NewRegressor(s, cfg, tc.batch)
			if m != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewRegressor: %v, want an error naming %q", err, tc.want)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("NewRegressor took %v to refuse", d)
			}
			if ps := s.ParamNames(); len(ps) != 0 {
				t.Errorf("a refused NewRegressor created parameters %v", ps)
			}
		})
	}
}
