package gd

import (
	"math"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
)

func TestConfigErrors(t *testing.T) {
	ok := Config{D: 3, DPrime: 2, C: 4, N: 5}
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"D", func(c *Config) { c.D = 0 }, "D = 0"},
		{"DPrime", func(c *Config) { c.DPrime = -1 }, "DPrime = -1"},
		{"C", func(c *Config) { c.C = 1 }, "C = 1"},
		{"N=0", func(c *Config) { c.N = 0 }, "N = 0"},
		{"kernel", func(c *Config) { c.Kernel = layers.Builtin("cosine", 1) }, `unknown kernel "cosine"`},
		{"blocks", func(c *Config) { c.Blocks = -2 }, "Blocks = -2"},
		{"onestep blocks", func(c *Config) { c.Form = OneStep; c.Blocks = 2 }, "OneStep"},
		{"form", func(c *Config) { c.Form = Form(7) }, "Form"},
		{"gamma NaN", func(c *Config) { c.Kernel = layers.Softmax(math.NaN()) }, "Gamma"},
		{"gamma negative", func(c *Config) { c.Kernel = layers.Softmax(-1) }, "Gamma"},
		{"alpha Inf", func(c *Config) { c.Alpha = math.Inf(1) }, "Alpha"},
		{"heads", func(c *Config) { c.Heads = -1 }, "Heads"},
		{"erase", func(c *Config) { c.Erase = Erase(5) }, "Erase"},
		{"lambda", func(c *Config) { c.Lambda = -3 }, "Lambda"},
		{"erase kernel", func(c *Config) { c.EraseKernel = "linear" }, "EraseKernel"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.mod(&cfg)
			s, _ := graph.NewScope(graph.Float64, 1)
			_, err := NewModel(s, cfg, 2)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewModel error = %v, want one containing %q", err, tc.want)
			}
		})
	}
	s, _ := graph.NewScope(graph.Float64, 1)
	if _, err := NewModel(s, ok, 0); err == nil || !strings.Contains(err.Error(), "batch") {
		t.Errorf("batch 0: error = %v, want one naming batch", err)
	}
}

func TestFeedErrors(t *testing.T) {
	const B, N, d, C = 2, 3, 2, 4
	T := N + 1
	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := NewModel(s, Config{D: d, DPrime: 2, C: C, N: N}, B)
	if err != nil {
		t.Fatal(err)
	}
	good := func() ([]float64, []int) {
		x, y := randomBatch(1, B, T, d, C)
		return x, y
	}
	cases := []struct {
		name string
		mod  func(x []float64, y []int) ([]float64, []int)
		want string
	}{
		{"x short", func(x []float64, y []int) ([]float64, []int) { return x[1:], y }, "x has 15 values"},
		{"y short", func(x []float64, y []int) ([]float64, []int) { return x, y[1:] }, "y has 7 labels"},
		{"NaN", func(x []float64, y []int) ([]float64, []int) { x[5] = math.NaN(); return x, y }, "x[5]"},
		{"Inf", func(x []float64, y []int) ([]float64, []int) { x[9] = math.Inf(-1); return x, y }, "x[9]"},
		{"label high", func(x []float64, y []int) ([]float64, []int) { y[1] = C; return x, y }, "y[1]"},
		{"label negative", func(x []float64, y []int) ([]float64, []int) { y[0] = -1; return x, y }, "y[0]"},
		{"query label", func(x []float64, y []int) ([]float64, []int) { y[T-1] = -2; return x, y }, "y[3]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x, y := tc.mod(good())
			err := m.Feed(x, y)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Feed error = %v, want one containing %q", err, tc.want)
			}
		})
	}
	x, y := good()
	y[T-1] = -1 // unknown query label is allowed
	if err := m.Feed(x, y); err != nil {
		t.Errorf("Feed with unknown query label: %v", err)
	}
}
