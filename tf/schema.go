package tf

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/gdattn/gdattn/internal/strictjson"
	"github.com/gdattn/gdattn/layers"
)

// The JSON forms of Config and GPTConfig (see "Config schema" in the
// package documentation). The aliases drop the methods; the outer fields
// shadow the embedded ones of the same key.
type (
	configAlias    Config
	gptConfigAlias GPTConfig
)

type configJSON struct {
	configAlias
	Kernel      json.RawMessage   `json:"kernel"`
	HeadKernels []json.RawMessage `json:"head_kernels"`
}

// MarshalJSON writes cfg in the documented schema: "kernel" in its layers
// JSON form (null for the default) and "head_kernels" a list of such forms
// (null entries: Kernel). A user kernel that is not registered with
// layers.RegisterKernel cannot be saved and is an error. Init, WInit and
// WeInit are not saved.
func (cfg Config) MarshalJSON() ([]byte, error) {
	kern, err := marshalKernel(cfg.Kernel)
	if err != nil {
		return nil, fmt.Errorf("tf: config: key \"kernel\": %w", err)
	}
	j := configJSON{configAlias: configAlias(cfg), Kernel: kern}
	for h, k := range cfg.HeadKernels {
		b, err := marshalKernel(k)
		if err != nil {
			return nil, fmt.Errorf("tf: config: key \"head_kernels\"[%d]: %w", h, err)
		}
		j.HeadKernels = append(j.HeadKernels, b)
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads a config written by MarshalJSON. Missing keys keep
// their zero value (the documented default); unknown keys and invalid
// kernels are errors naming the key. Init, WInit and WeInit are left nil.
func (cfg *Config) UnmarshalJSON(data []byte) error {
	var j configJSON
	if err := strictjson.Decode(data, &j); err != nil {
		return fmt.Errorf("tf: config: %w", err)
	}
	out := Config(j.configAlias)
	k, err := unmarshalKernel(j.Kernel)
	if err != nil {
		return fmt.Errorf("tf: config: key \"kernel\": %w", err)
	}
	out.Kernel, out.HeadKernels = k, nil
	for h, raw := range j.HeadKernels {
		k, err := unmarshalKernel(raw)
		if err != nil {
			return fmt.Errorf("tf: config: key \"head_kernels\"[%d]: %w", h, err)
		}
		out.HeadKernels = append(out.HeadKernels, k)
	}
	*cfg = out
	return nil
}

// UnmarshalJSON reads a GPT config, refusing unknown keys.
func (cfg *GPTConfig) UnmarshalJSON(data []byte) error {
	var j gptConfigAlias
	if err := strictjson.Decode(data, &j); err != nil {
		return fmt.Errorf("tf: gpt config: %w", err)
	}
	*cfg = GPTConfig(j)
	return nil
}

// marshalKernel is the JSON form of k, null for nil (the default kernel).
func marshalKernel(k layers.KernelSpec) (json.RawMessage, error) {
	if k == nil {
		return json.RawMessage("null"), nil
	}
	return layers.MarshalKernel(k)
}

// unmarshalKernel reads a kernel's JSON form; null or absent is nil.
func unmarshalKernel(raw json.RawMessage) (layers.KernelSpec, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	return layers.UnmarshalKernel(raw)
}
