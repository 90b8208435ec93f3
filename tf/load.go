package tf

import (
	"encoding/json"
	"fmt"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/modelfile"
	"github.com/gdattn/gdattn/lmio"
	"gorgonia.org/tensor"
)

// Family keys of the checkpoint config object (see "Checkpoints" in the
// package documentation).
const (
	familyModel = "tf"
	familyGPT   = "tf_gpt"
)

// SavedConfig returns the config object a checkpoint of m stores,
//
//	{"dtype": "float64", "scope": "...", "tf": {...m.Cfg...}}
//
// for checkpoint.Save(dir, m.Scope(), cfg, opts) when the checkpoint
// also holds optimiser state; [Model.Save] writes the parameters alone. It
// fails if a kernel is a user kernel that is not registered
// (layers.RegisterKernel). Init is not saved: the checkpoint holds the
// parameters themselves.
func (m *Model) SavedConfig() (json.RawMessage, error) {
	return modelfile.Marshal("tf", familyModel, m.s, m.Cfg)
}

// Save writes m's parameters, with their current values, and its config to
// the checkpoint directory dir (checkpoint.Save); [Load] rebuilds the
// model from it.
func (m *Model) Save(dir string) error {
	cfg, err := m.SavedConfig()
	if err != nil {
		return err
	}
	return checkpoint.Save(dir, m.s, cfg, checkpoint.SaveOptions{})
}

// Load reads the checkpoint of a Trained TF in dir and returns the model,
// built for minibatches of batch contexts in a new scope of the
// checkpoint's dtype, with the saved parameter values. The config is
// decoded strictly and validated, and the parameters it implies are checked
// against the checkpoint's manifest before anything is built.
func Load(dir string, batch int) (*Model, error) {
	plan := func(cfg Config, dt tensor.Dtype) ([]modelfile.Param, error) {
		if err := cfg.checkSizes(batch); err != nil {
			return nil, err
		}
		return cfg.params(dt)
	}
	build := func(s *graph.Scope, cfg Config) (*Model, error) { return NewModel(s, cfg, batch) }
	return modelfile.Load("tf", dir, familyModel, plan, build)
}

// params lists the parameters a model of the validated cfg creates, in
// creation order, with names relative to its scope; the kernels' are found
// by building each kernel alone.
func (cfg Config) params(dt tensor.Dtype) ([]modelfile.Param, error) {
	P := modelfile.P
	D, dp := cfg.TokenDim(), cfg.DPrime
	var out []modelfile.Param
	if cfg.ZeroColumn {
		out = append(out, P("we", dp, cfg.C-1))
	} else {
		out = append(out, P("we", dp, cfg.C))
	}
	for l := 0; l < cfg.Layers; l++ {
		for h := 0; h < cfg.Heads; h++ {
			hs := fmt.Sprintf("layer%d/head%d", l, h)
			kp, err := modelfile.KernelParams(cfg.headKernel(h), dt, hs)
			if err != nil {
				return nil, err
			}
			out = append(out, kp...)
			out = append(out, P(hs+"/wq", D, cfg.DK), P(hs+"/wk", D, cfg.DK), P(hs+"/wv", D, D), P(hs+"/wo", D, D))
		}
		if cfg.Cross {
			cs := fmt.Sprintf("layer%d/cross", l)
			out = append(out, P(cs+"/wq", D, dp), P(cs+"/wk", dp, dp), P(cs+"/wv", dp, dp), P(cs+"/wo", dp, D))
		}
	}
	return append(out, P("readout/r", D, dp)), nil
}

// SavedConfig returns the config object a checkpoint of m stores,
// {"dtype": ..., "scope": ..., "tf_gpt": {...m.Cfg...}}, with "text": {...}
// when m has a text codec; see gd.LM.SavedConfig.
func (m *GPT) SavedConfig() (json.RawMessage, error) {
	return modelfile.MarshalLM("tf", familyGPT, m.s, m.Cfg, m.TextCodec())
}

// Save writes m's parameters, config and text codec to the checkpoint
// directory dir; see gd.LM.Save.
func (m *GPT) Save(dir string) error {
	cfg, err := m.SavedConfig()
	if err != nil {
		return err
	}
	return checkpoint.Save(dir, m.s, cfg, checkpoint.SaveOptions{Extra: modelfile.TextArrays(m.TextCodec())})
}

// Rebuild returns the same model (parameter values, text codec) as another
// graph built with opts; see gd.LM.Rebuild.
func (m *GPT) Rebuild(opts GPTOptions) (*GPT, error) {
	r, err := lmio.Rebuild(m.s, func(s *graph.Scope) (*GPT, error) { return NewGPT(s, m.Cfg, opts) })
	if err != nil {
		return nil, fmt.Errorf("tf: gpt: rebuild: %w", err)
	}
	return lmio.WithCodec(r, m.TextCodec())
}

// LoadGPT reads the checkpoint of a GPT in dir and returns the model, built
// with opts in a new scope of the checkpoint's dtype, with the saved
// parameter values and text codec, if any; see gd.LoadLM.
func LoadGPT(dir string, opts GPTOptions) (*GPT, error) {
	c, err := checkpoint.Read(dir)
	if err != nil {
		return nil, err
	}
	return GPTFromCheckpoint(c, opts)
}

// GPTFromCheckpoint returns the GPT of the checkpoint c, already read
// (checkpoint.Read), as [LoadGPT] does; see gd.LMFromCheckpoint.
func GPTFromCheckpoint(c *checkpoint.Checkpoint, opts GPTOptions) (*GPT, error) {
	sv, cfg, err := modelfile.ConfigFrom[GPTConfig]("tf", c, familyGPT)
	if err != nil {
		return nil, err
	}
	if err := cfg.checkSizes(opts.Batch); err != nil {
		return nil, sv.Errorf(err)
	}
	codec, err := sv.Codec(cfg.Vocab)
	if err != nil {
		return nil, err
	}
	m, err := modelfile.Build(sv, cfg.params(), func(s *graph.Scope) (*GPT, error) { return NewGPT(s, cfg, opts) })
	if err != nil {
		return nil, err
	}
	return lmio.WithCodec(m, codec)
}

// params lists the parameters a GPT of the validated cfg creates, in
// creation order, with names relative to its scope.
func (cfg GPTConfig) params() []modelfile.Param {
	P := modelfile.P
	V, T, d, F := cfg.Vocab, cfg.Context, cfg.DModel, cfg.FFHidden
	hd := d / cfg.Heads
	out := []modelfile.Param{P("wte/w", V, d), P("wpe", T, d)}
	for l := 0; l < cfg.Layers; l++ {
		b := fmt.Sprintf("h%d/", l)
		out = append(out, P(b+"ln_1/scale", d), P(b+"ln_1/bias", d))
		for h := 0; h < cfg.Heads; h++ {
			hs := fmt.Sprintf("%sattn/head%d/", b, h)
			out = append(out, P(hs+"wo", hd, d), P(hs+"wq", d, hd), P(hs+"wk", d, hd), P(hs+"wv", d, hd))
		}
		out = append(out, P(b+"ln_2/scale", d), P(b+"ln_2/bias", d),
			P(b+"mlp/w1", d, F), P(b+"mlp/b1", F), P(b+"mlp/w2", F, d), P(b+"mlp/b2", d))
	}
	return append(out, P("ln_f/scale", d), P("ln_f/bias", d))
}
