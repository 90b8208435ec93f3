package tf

import (
	"encoding/json"
	"fmt"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/modelfile"
	"github.com/gdattn/gdattn/internal/strictjson"
	"gorgonia.org/tensor"
)

// familyRegressor is the checkpoint config's key of a Regressor.
const familyRegressor = "tf_regressor"

type regressorConfigAlias RegressorConfig

type regressorConfigJSON struct {
	regressorConfigAlias
	Kernel json.RawMessage `json:"kernel"`
}

// MarshalJSON writes cfg with the keys of its field tags, the kernel in its
// layers JSON form (null for the default, linear); a user kernel that is
// not registered (layers.RegisterKernel) is an error. WInit is not saved.
func (cfg RegressorConfig) MarshalJSON() ([]byte, error) {
	kern, err := marshalKernel(cfg.Kernel)
	if err != nil {
		return nil, fmt.Errorf("tf: regressor config: key \"kernel\": %w", err)
	}
	return json.Marshal(regressorConfigJSON{regressorConfigAlias: regressorConfigAlias(cfg), Kernel: kern})
}

// UnmarshalJSON reads a config written by MarshalJSON, refusing unknown
// keys and invalid kernels; missing keys keep their zero value (the
// documented default).
func (cfg *RegressorConfig) UnmarshalJSON(data []byte) error {
	var j regressorConfigJSON
	if err := strictjson.Decode(data, &j); err != nil {
		return fmt.Errorf("tf: regressor config: %w", err)
	}
	out := RegressorConfig(j.regressorConfigAlias)
	k, err := unmarshalKernel(j.Kernel)
	if err != nil {
		return fmt.Errorf("tf: regressor config: key \"kernel\": %w", err)
	}
	out.Kernel = k
	*cfg = out
	return nil
}

// SavedConfig returns the config object a checkpoint of m stores,
// {"dtype": ..., "scope": ..., "tf_regressor": {...m.Cfg...}}; see
// [Model.SavedConfig].
func (m *Regressor) SavedConfig() (json.RawMessage, error) {
	return modelfile.Marshal("tf", familyRegressor, m.s, m.Cfg)
}

// Save writes m's parameters and config to the checkpoint directory dir
// (checkpoint.Save); [LoadRegressor] rebuilds the model from it.
func (m *Regressor) Save(dir string) error {
	cfg, err := m.SavedConfig()
	if err != nil {
		return err
	}
	return checkpoint.Save(dir, m.s, cfg, checkpoint.SaveOptions{})
}

// LoadRegressor reads the checkpoint of a Regressor in dir and returns the
// model, built for minibatches of batch contexts in a new scope of the
// checkpoint's dtype, with the saved parameter values; the checks are
// those of [Load].
func LoadRegressor(dir string, batch int) (*Regressor, error) {
	plan := func(cfg RegressorConfig, dt tensor.Dtype) ([]modelfile.Param, error) {
		if err := cfg.checkSizes(batch); err != nil {
			return nil, err
		}
		return cfg.params(dt)
	}
	build := func(s *graph.Scope, cfg RegressorConfig) (*Regressor, error) { return NewRegressor(s, cfg, batch) }
	return modelfile.Load("tf", dir, familyRegressor, plan, build)
}

// params lists the parameters a Regressor of the validated cfg creates, in
// creation order, with names relative to its scope.
func (cfg RegressorConfig) params(dt tensor.Dtype) ([]modelfile.Param, error) {
	P := modelfile.P
	D := cfg.TokenDim()
	var out []modelfile.Param
	for l := 0; l < cfg.Layers; l++ {
		for h := 0; h < cfg.Heads; h++ {
			hs := fmt.Sprintf("layer%d/head%d", l, h)
			kp, err := modelfile.KernelParams(cfg.Kernel, dt, hs)
			if err != nil {
				return nil, err
			}
			out = append(out, kp...)
			out = append(out, P(hs+"/wq", D, D), P(hs+"/wk", D, D), P(hs+"/wv", D, D), P(hs+"/wo", D, D))
		}
	}
	return append(out, P("readout", D, cfg.DY)), nil
}
