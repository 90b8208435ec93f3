package gd

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
	familyModel = "gd"
	familyLM    = "gd_lm"
)

// SavedConfig returns the config object a checkpoint of m stores,
//
//	{"dtype": "float64", "gd": {...m.Cfg...}, "scope": "..."}
//
// for checkpoint.Save(dir, m.Scope(), cfg, opts) when the checkpoint
// also holds optimiser state; [Model.Save] writes the parameters alone. It
// fails if the kernel is a user kernel that is not registered
// (layers.RegisterKernel): such a model could not be loaded.
func (m *Model) SavedConfig() (json.RawMessage, error) {
	return modelfile.Marshal("gd", familyModel, m.s, m.Cfg)
}

// Save writes m's parameters, with their current values, and its config to
// the checkpoint directory dir (checkpoint.Save: atomic, one .npy file
// per parameter); [Load] rebuilds the model from it. After training on a
// device, sync the parameters to the host first.
func (m *Model) Save(dir string) error {
	cfg, err := m.SavedConfig()
	if err != nil {
		return err
	}
	return checkpoint.Save(dir, m.s, cfg, checkpoint.SaveOptions{})
}

// Load reads the checkpoint in dir (written by [Model.Save], or by hand as
// described in "Checkpoints" in the package documentation) and returns the
// model it holds, built for minibatches of batch contexts in a new scope of
// the checkpoint's dtype, with the saved parameter values. The config is
// decoded strictly and validated, and the parameters it implies (names,
// shapes, dtype) are checked against the checkpoint's manifest before
// anything is built; errors name the file, key or parameter at fault.
func Load(dir string, batch int) (*Model, error) {
	plan := func(cfg Config, dt tensor.Dtype) ([]modelfile.Param, error) {
		if err := cfg.checkSizes(batch); err != nil {
			return nil, err
		}
		return cfg.params(dt)
	}
	build := func(s *graph.Scope, cfg Config) (*Model, error) { return NewModel(s, cfg, batch) }
	return modelfile.Load("gd", dir, familyModel, plan, build)
}

// LoadConfig reads the checkpoint in dir as [Load] does and returns the
// model's validated config and dtype without building the model, e.g. to
// check inputs against the model's sizes before choosing a batch size.
func LoadConfig(dir string) (Config, tensor.Dtype, error) {
	sv, cfg, err := modelfile.ReadConfig[Config]("gd", dir, familyModel)
	if err != nil {
		return Config{}, tensor.Dtype{}, err
	}
	return cfg, sv.Dtype, nil
}

// params lists the parameters a model of the validated cfg creates, in
// creation order, with names relative to its scope; the kernel's are found
// by building the kernel alone.
func (cfg Config) params(dt tensor.Dtype) ([]modelfile.Param, error) {
	P := modelfile.P
	d, dp, C := cfg.D, cfg.DPrime, cfg.C
	var out []modelfile.Param
	switch {
	case cfg.Real(): // no W_e
	case cfg.ZeroColumn:
		out = append(out, P("we", dp, C-1))
	default:
		out = append(out, P("we", dp, C))
	}
	if !cfg.FixedAlpha {
		out = append(out, P("log_alpha"))
	}
	kp, err := modelfile.KernelParams(cfg.Kernel, dt, "kernel")
	if err != nil {
		return nil, err
	}
	out = append(out, kp...)
	if cfg.Heads > 1 {
		for h := 0; h < cfg.Heads; h++ {
			out = append(out, P(fmt.Sprintf("head%d/lambda", h), 1, d), P(fmt.Sprintf("head%d/p", h), dp, dp))
		}
	}
	return out, nil
}

// SavedConfig returns the config object a checkpoint of m stores,
// {"dtype": ..., "gd_lm": {...m.Cfg...}, "scope": ...}, with
// "text": {...} when m has a text codec ([LM.SetTextCodec]); see
// [Model.SavedConfig] and "Checkpoints" in the package documentation.
func (m *LM) SavedConfig() (json.RawMessage, error) {
	return modelfile.MarshalLM("gd", familyLM, m.s, m.Cfg, m.TextCodec())
}

// Save writes m's parameters and config to the checkpoint directory dir,
// with its text codec's restricted vocabulary if it has one (the extra
// array "vocab/gpt_ids"): [LoadLM] rebuilds the model, codec included. See
// [Model.Save]; train.LMTrainer.Save adds the optimiser state.
func (m *LM) Save(dir string) error {
	cfg, err := m.SavedConfig()
	if err != nil {
		return err
	}
	return checkpoint.Save(dir, m.s, cfg, checkpoint.SaveOptions{Extra: modelfile.TextArrays(m.TextCodec())})
}

// Rebuild returns the same model (parameter values, text codec) as another
// graph built with opts, e.g. the generation graph (Next) of a trained
// model, in a new scope of m's dtype under m's scope path. It copies the
// host values of the parameters: after training on a device, sync them
// first (train.Trainer.SyncParams).
func (m *LM) Rebuild(opts LMOptions) (*LM, error) {
	r, err := lmio.Rebuild(m.s, func(s *graph.Scope) (*LM, error) { return NewLM(s, m.Cfg, opts) })
	if err != nil {
		return nil, fmt.Errorf("gd: lm: rebuild: %w", err)
	}
	return lmio.WithCodec(r, m.TextCodec())
}

// LoadLM reads the checkpoint of a GD language model in dir and returns
// the model, built with opts in a new scope of the checkpoint's dtype, with
// the saved parameter values and, if the checkpoint holds one (as those of
// examples/language and of train.LMTrainer do), its text codec
// ([LM.TextCodec]); the checks are those of [Load]. An optimiser state in
// the checkpoint is ignored (train.LMTrainer.Resume reads it).
func LoadLM(dir string, opts LMOptions) (*LM, error) {
	c, err := checkpoint.Read(dir)
	if err != nil {
		return nil, err
	}
	return LMFromCheckpoint(c, opts)
}

// LMFromCheckpoint returns the GD language model of the checkpoint c,
// already read (checkpoint.Read), as [LoadLM] does: a program that also
// resumes training from c (train.LMTrainer.ResumeFrom) reads the
// checkpoint once.
func LMFromCheckpoint(c *checkpoint.Checkpoint, opts LMOptions) (*LM, error) {
	sv, cfg, err := modelfile.ConfigFrom[LMConfig]("gd", c, familyLM)
	if err != nil {
		return nil, err
	}
	if err := cfg.checkSizes(opts.Batch); err != nil {
		return nil, sv.Errorf(err)
	}
	want, err := cfg.params(sv.Dtype)
	if err != nil {
		return nil, sv.Errorf(err)
	}
	codec, err := sv.Codec(cfg.Vocab)
	if err != nil {
		return nil, err
	}
	m, err := modelfile.Build(sv, want, func(s *graph.Scope) (*LM, error) { return NewLM(s, cfg, opts) })
	if err != nil {
		return nil, err
	}
	return lmio.WithCodec(m, codec)
}

// params lists the parameters a language model of the validated cfg
// creates, in creation order, with names relative to its scope.
func (cfg LMConfig) params(dt tensor.Dtype) ([]modelfile.Param, error) {
	P := modelfile.P
	V, T, d, M := cfg.Vocab, cfg.Context, cfg.DPrime, cfg.Heads
	out := []modelfile.Param{P("wte/w", V, d), P("wpe", T+1, d)}
	kp, err := modelfile.KernelParams(cfg.Kernel, dt, "kernel")
	if err != nil {
		return nil, err
	}
	out = append(out, kp...)
	for h := 0; h < M; h++ {
		out = append(out, P(fmt.Sprintf("head%d/lambda", h), d))
	}
	for h := 0; h < M; h++ {
		if cfg.DiagP {
			out = append(out, P(fmt.Sprintf("head%d/p", h), d))
		} else {
			out = append(out, P(fmt.Sprintf("head%d/p", h), d, d))
		}
	}
	if cfg.FF {
		F := cfg.FFHidden
		out = append(out, P("ff/ln/scale", d), P("ff/ln/bias", d),
			P("ff/mlp/w1", d, F), P("ff/mlp/b1", F), P("ff/mlp/w2", F, d), P("ff/mlp/b2", d))
	}
	return append(out, P("ln_f/scale", d), P("ln_f/bias", d)), nil
}
