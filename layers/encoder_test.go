package layers

import (
	"encoding/json"
	"fmt"
	"testing"

	"gorgonia.org/tensor"
)

func TestTokenFormText(t *testing.T) {
	for _, tc := range []struct {
		f    TokenForm
		name string
		dim  int // TokenDim(2, 3)
	}{
		{FormInterleaved, "interleaved", 11},
		{FormOneStep, "one-step", 8},
	} {
		b, err := json.Marshal(tc.f)
		if err != nil || string(b) != `"`+tc.name+`"` {
			t.Errorf("json.Marshal(%v) = %s, %v, want %q", int(tc.f), b, err, tc.name)
		}
		var back TokenForm
		if err := json.Unmarshal(b, &back); err != nil || back != tc.f {
			t.Errorf("json.Unmarshal(%s) = %v, %v, want %v", b, back, err, tc.f)
		}
		if got := tc.f.TokenDim(2, 3); got != tc.dim {
			t.Errorf("%v.TokenDim(2, 3) = %d, want %d", tc.f, got, tc.dim)
		}
	}
	var f TokenForm
	errContains(t, json.Unmarshal([]byte(`"onestep"`), &f), `unknown token form "onestep"`, "one-step")
	if _, err := json.Marshal(TokenForm(7)); err == nil {
		t.Errorf("json.Marshal(TokenForm(7)): no error")
	}
}

func TestNewEncoderErrors(t *testing.T) {
	ok := EncoderConfig{D: 2, DPrime: 3, C: 4, N: 5}
	for _, tc := range []struct {
		name  string
		mod   func(*EncoderConfig)
		batch int
		want  string
	}{
		{"form", func(c *EncoderConfig) { c.Form = 3 }, 1, "Form"},
		{"D", func(c *EncoderConfig) { c.D = 0 }, 1, "D = 0"},
		{"DPrime", func(c *EncoderConfig) { c.DPrime = -1 }, 1, "DPrime = -1"},
		{"C", func(c *EncoderConfig) { c.C = 1 }, 1, "C = 1"},
		{"N", func(c *EncoderConfig) { c.N = 0 }, 1, "N = 0"},
		{"batch", func(c *EncoderConfig) {}, 0, "batch = 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.mod(&cfg)
			s := newTestScope(t, tensor.Float64)
			e, err := NewEncoder(s, cfg, tc.batch)
			if e != nil {
				t.Errorf("got an encoder with the error")
			}
			errContains(t, err, "layers: encoder: ", tc.want)
		})
	}
	if _, err := NewEncoder(nil, ok, 1); err == nil {
		t.Errorf("nil scope: no error")
	}
}

// TestEncoderShapes pins the token widths, the parameter and the inputs of
// both forms.
func TestEncoderShapes(t *testing.T) {
	for _, tc := range []struct {
		cfg    EncoderConfig
		tokens string
		we     string
	}{
		{EncoderConfig{Form: FormInterleaved, D: 2, DPrime: 3, C: 4, N: 5}, "(2, 6, 11)", "we (3, 4)"},
		{EncoderConfig{Form: FormOneStep, D: 2, DPrime: 3, C: 4, N: 5}, "(2, 6, 8)", "we (3, 4)"},
		{EncoderConfig{Form: FormOneStep, D: 2, DPrime: 3, C: 4, N: 5, ZeroColumn: true}, "(2, 6, 8)", "we (3, 3)"},
	} {
		s := newTestScope(t, tensor.Float64)
		e, err := NewEncoder(s, tc.cfg, 2)
		if err != nil {
			t.Fatal(err)
		}
		p := s.Params()[0]
		if got := fmt.Sprint(e.Tokens.Shape()); got != tc.tokens || e.TokenDim() != e.Tokens.Shape()[2] {
			t.Errorf("%v: tokens %s (TokenDim %d), want %s", tc.cfg.Form, got, e.TokenDim(), tc.tokens)
		}
		if got := fmt.Sprintf("%s %v", p.Name(), p.Shape()); got != tc.we {
			t.Errorf("%v: parameter %s, want %s", tc.cfg.Form, got, tc.we)
		}
	}
}
