package gd

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/gdattn/gdattn/internal/strictjson"
	"github.com/gdattn/gdattn/layers"
)

// The JSON forms of Config and LMConfig: every field under its tag, with
// the enums as strings and the kernel as its layers JSON form (see "Config
// schema" in the package documentation). The aliases drop the methods, so
// that the embedded fields marshal plainly; the outer fields shadow the
// embedded ones of the same key.
type (
	configAlias   Config
	lmConfigAlias LMConfig
)

type configJSON struct {
	configAlias
	Likelihood *string         `json:"likelihood"`
	Form       *string         `json:"form"`
	Erase      *string         `json:"erase"`
	Kernel     json.RawMessage `json:"kernel"`
}

type lmConfigJSON struct {
	lmConfigAlias
	Kernel json.RawMessage `json:"kernel"`
}

// MarshalJSON writes cfg in the documented schema: "likelihood"
// "categorical" or "gaussian" (a Gaussian config has no "c"), "form"
// "interleaved" or "one-step", "erase" "exact" or "lambda", "kernel" the
// layers JSON form of the kernel (null for the default). A user kernel that
// is not registered with layers.RegisterKernel, or a user likelihood,
// cannot be saved and is an error.
func (cfg Config) MarshalJSON() ([]byte, error) {
	lik := cfg.LikelihoodName()
	if _, err := ParseLikelihood(lik); err != nil || (cfg.Likelihood != nil && !isCategorical(cfg.Likelihood) && !isGaussian(cfg.Likelihood)) {
		return nil, fmt.Errorf("gd: config: key \"likelihood\": the user likelihood %q cannot be saved (only \"categorical\" and \"gaussian\")", lik)
	}

	form, err := cfg.Form.MarshalText()
	if err != nil {
		return nil, fmt.Errorf("gd: config: key \"form\": %w", err)
	}
	erase, err := cfg.Erase.MarshalText()
	if err != nil {
		return nil, fmt.Errorf("gd: config: key \"erase\": %w", err)
	}
	kern, err := marshalKernel(cfg.Kernel)
	if err != nil {
		return nil, fmt.Errorf("gd: config: key \"kernel\": %w", err)
	}
	f, e := string(form), string(erase)
	out, err := json.Marshal(configJSON{configAlias: configAlias(cfg), Likelihood: &lik, Form: &f, Erase: &e, Kernel: kern})
	if err != nil || !cfg.Real() {
		return out, err
	}
	// A real-valued likelihood has no categories: drop "c" (its zero value).
	if cfg.C != 0 || !bytes.Contains(out, []byte(`,"c":0,`)) {
		return nil, fmt.Errorf("gd: config: key \"c\": %d with the %s likelihood, want 0", cfg.C, lik)
	}
	return bytes.Replace(out, []byte(`,"c":0,`), []byte(","), 1), nil
}

// UnmarshalJSON reads a config written by MarshalJSON. Missing keys keep
// their zero value (the documented default); unknown keys, unknown enum
// names and invalid kernels are errors naming the key. WeInit is left nil.
func (cfg *Config) UnmarshalJSON(data []byte) error {
	var j configJSON
	if err := strictjson.Decode(data, &j); err != nil {
		return fmt.Errorf("gd: config: %w", err)
	}
	out := Config(j.configAlias)
	out.Likelihood = nil
	if j.Likelihood != nil {
		l, err := ParseLikelihood(*j.Likelihood)
		if err != nil {
			return fmt.Errorf("gd: config: key \"likelihood\": %w", err)
		}
		if !isCategorical(l) {
			out.Likelihood = l
		}
	}
	if j.Form != nil {
		f, err := layers.ParseTokenForm(*j.Form)
		if err != nil {
			return fmt.Errorf("gd: config: key \"form\": %w", err)
		}
		out.Form = f
	}
	if j.Erase != nil {
		e, err := ParseErase(*j.Erase)
		if err != nil {
			return fmt.Errorf("gd: config: key \"erase\": %w", err)
		}
		out.Erase = e
	}
	k, err := unmarshalKernel(j.Kernel, false)
	if err != nil {
		return fmt.Errorf("gd: config: key \"kernel\": %w", err)
	}
	out.Kernel = k
	*cfg = out
	return nil
}

// MarshalJSON writes cfg in the documented schema; the kernel is written
// as in Config.MarshalJSON.
func (cfg LMConfig) MarshalJSON() ([]byte, error) {
	kern, err := marshalKernel(cfg.Kernel)
	if err != nil {
		return nil, fmt.Errorf("gd: lm config: key \"kernel\": %w", err)
	}
	return json.Marshal(lmConfigJSON{lmConfigAlias: lmConfigAlias(cfg), Kernel: kern})
}

// UnmarshalJSON reads a config written by MarshalJSON, refusing unknown keys
// and invalid kernels. A bare kernel name ("kernel": "softmax") means that
// kernel with g fixed at 1, the language model's historical meaning (and
// that of configs saved before kernels were values). EmbedInit is left nil.
func (cfg *LMConfig) UnmarshalJSON(data []byte) error {
	var j lmConfigJSON
	if err := strictjson.Decode(data, &j); err != nil {
		return fmt.Errorf("gd: lm config: %w", err)
	}
	out := LMConfig(j.lmConfigAlias)
	k, err := unmarshalKernel(j.Kernel, true)
	if err != nil {
		return fmt.Errorf("gd: lm config: key \"kernel\": %w", err)
	}
	out.Kernel = k
	*cfg = out
	return nil
}

// marshalKernel is the JSON form of k, null for nil (the default kernel).
func marshalKernel(k layers.KernelSpec) (json.RawMessage, error) {
	if k == nil {
		return json.RawMessage("null"), nil
	}
	return layers.MarshalKernel(k)
}

// unmarshalKernel reads a kernel's JSON form; null or absent is nil. With
// fixedNames a bare built-in name means g fixed at 1.
func unmarshalKernel(raw json.RawMessage, fixedNames bool) (layers.KernelSpec, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	k, err := layers.UnmarshalKernel(raw)
	if err != nil {
		return nil, err
	}
	if b, ok := k.(layers.BuiltinSpec); ok && fixedNames && raw[0] == '"' {
		k = b.Fixed()
	}
	return k, nil
}
