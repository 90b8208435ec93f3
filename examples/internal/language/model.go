package language

import (
	"fmt"
	"strings"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
)

// runConfig is everything that defines a run. A checkpoint holds it in
// the library's schema (docs/checkpoints.md): the model's config under
// "gd_lm" or "tf_gpt" with its dtype, the text codec under "text" (gd.LoadLM
// and tf.LoadGPT read them), and the rest under "run" (train.LMConfig.Run),
// so that evaluate, generate and -resume rebuild the same model and data.
type runConfig struct {
	Model  string        `json:"model"` // gd, gdff or gpt
	Preset string        `json:"preset"`
	Data   dataConfig    `json:"data"`
	Train  trainSettings `json:"train"`
	Seed   uint64        `json:"seed"` // initialisation and minibatch draws

	// Stored by the model's own config object, not under "run".
	GD    *gd.LMConfig  `json:"-"`
	GPT   *tf.GPTConfig `json:"-"`
	Dtype string        `json:"-"`
	Vocab int           `json:"-"`
}

type dataConfig struct {
	Corpus    string   `json:"corpus"`
	Split     string   `json:"split"`
	Books     []string `json:"books,omitempty"`
	Seed      uint64   `json:"seed"`
	ValidFrac float64  `json:"valid_frac"`
	TestFrac  float64  `json:"test_frac"`
	Restrict  bool     `json:"restrict"`
	MinCount  int      `json:"min_count"`
}

type trainSettings struct {
	Batch       int     `json:"batch"`
	Steps       int     `json:"steps"`
	Warmup      int     `json:"warmup"`
	LR          float64 `json:"lr"`
	MinLR       float64 `json:"min_lr"`
	WeightDecay float64 `json:"weight_decay"`
	Clip        float64 `json:"clip"`
	CkptEvery   int     `json:"ckpt_every"`
	EvalEvery   int     `json:"eval_every"`
	EvalBatches int     `json:"eval_batches"`
	// Xent32 trains with the loss's softmax in float32 arithmetic
	// (train.LMConfig.Float32CrossEntropy); absent from the checkpoints of
	// runs without it.
	Xent32 bool `json:"xent32,omitempty"`
}

// preset holds the sizes of a named configuration.
type preset struct {
	D, Context, Heads   int
	Restrict            bool
	MinCount            int
	ValidFrac, TestFrac float64
	train               trainSettings
	note                string
}

// presets: "paper" is the paper's size (Section 5.3: d' = 512, 8 heads, 256
// positions, the full GPT-2 vocabulary of 50,258 ids), meant for a long run;
// "small" trains on the shared TinyStories file on 2 CPU cores in well under
// 20 minutes; "tiny" is for tests.
var presets = map[string]preset{
	"paper": {D: 512, Context: 256, Heads: 8, ValidFrac: 0.1, TestFrac: 0.1, train: trainSettings{
		Batch: 8, Steps: 20000, Warmup: 500, LR: 1e-3, MinLR: 1e-4, WeightDecay: 1e-2, Clip: 1,
		CkptEvery: 500, EvalEvery: 500, EvalBatches: 8,
	}, note: "d'=512, 8 heads, context 256, full vocabulary (50,258): minutes of CPU per step (RESULTS.md)"},
	"small": {D: 64, Context: 64, Heads: 4, Restrict: true, MinCount: 2, ValidFrac: 0.05, TestFrac: 0.26, train: trainSettings{
		Batch: 16, Steps: 1500, Warmup: 100, LR: 1e-3, MinLR: 1e-4, WeightDecay: 1e-2, Clip: 1,
		CkptEvery: 500, EvalEvery: 250, EvalBatches: 8,
	}, note: "d'=64, 4 heads, context 64, vocabulary restricted to training tokens seen twice; 26% of the stories held out for test, so that the shared TinyStories file (784 stories) gives the paper's 200 test stories"},
	"tiny": {D: 8, Context: 16, Heads: 2, Restrict: true, MinCount: 1, ValidFrac: 0.1, TestFrac: 0.1, train: trainSettings{
		Batch: 4, Steps: 20, Warmup: 2, LR: 1e-3, MinLR: 1e-4, WeightDecay: 1e-2, Clip: 1,
		CkptEvery: 10, EvalEvery: 10, EvalBatches: 2,
	}, note: "for tests"},
}

// PresetNames are the names of the presets, in the order the flags list them.
var PresetNames = []string{"paper", "small", "tiny"}

// modelConfigs fills rc.GD or rc.GPT for rc.Model from the preset sizes.
func modelConfigs(rc *runConfig, p preset, kernel string, diagP bool) error {
	switch rc.Model {
	case "gd", "gdff":
		rc.GD = &gd.LMConfig{Vocab: rc.Vocab, DPrime: p.D, Context: p.Context, Heads: p.Heads, Kernel: layers.Builtin(kernel, 1).Fixed(), FF: rc.Model == "gdff", DiagP: diagP}
	case "gpt":
		rc.GPT = &tf.GPTConfig{Vocab: rc.Vocab, Context: p.Context, DModel: p.D, Heads: p.Heads}
	default:
		return fmt.Errorf("unknown -model %q (want gd, gdff or gpt)", rc.Model)
	}
	return nil
}

// lm is a language model of the library (gd.LM or tf.GPT).
type lm interface {
	train.LM
	NumParams() (attention, rest int)
}

// buildModel builds rc's model for batches of batch sequences in a new
// scope seeded with rc.Seed; next selects the generation graph.
func buildModel(rc runConfig, batch int, next bool) (lm, error) {
	dt, err := graph.ParseDtype(rc.Dtype)
	if err != nil {
		return nil, err
	}
	s, err := graph.NewScope(dt, rc.Seed)
	if err != nil {
		return nil, err
	}
	switch {
	case rc.GD != nil:
		return gd.NewLM(s.Sub(rc.Model), *rc.GD, gd.LMOptions{Batch: batch, Next: next})
	case rc.GPT != nil:
		return tf.NewGPT(s.Sub(rc.Model), *rc.GPT, tf.GPTOptions{Batch: batch, Next: next})
	}
	return nil, fmt.Errorf("the run config has no model")
}

// loadModel builds the model of the checkpoint c (family: the key readRun
// returned) for batches of batch sequences, and fills rc's model config,
// dtype and vocabulary size from it.
func loadModel(c *checkpoint.Checkpoint, family string, rc *runConfig, batch int, next bool) (lm, error) {
	dir := c.Dir
	var m lm
	switch family {
	case "gd_lm":
		g, err := gd.LMFromCheckpoint(c, gd.LMOptions{Batch: batch, Next: next})
		if err != nil {
			return nil, err
		}
		rc.GD, rc.GPT, m = &g.Cfg, nil, g
	case "tf_gpt":
		g, err := tf.GPTFromCheckpoint(c, tf.GPTOptions{Batch: batch, Next: next})
		if err != nil {
			return nil, err
		}
		rc.GD, rc.GPT, m = nil, &g.Cfg, g
	default:
		return nil, fmt.Errorf("checkpoint %s holds no language model", dir)
	}
	if m.TextCodec() == nil {
		return nil, fmt.Errorf("checkpoint %s holds no text codec (\"text\")", dir)
	}
	rc.Dtype, rc.Vocab = m.Scope().Dtype().String(), m.VocabSize()
	return m, nil
}

// rebuild returns m as another graph (batch, next) with the same parameters.
func rebuild(m lm, batch int, next bool) (lm, error) {
	switch m := m.(type) {
	case *gd.LM:
		return m.Rebuild(gd.LMOptions{Batch: batch, Next: next})
	case *tf.GPT:
		return m.Rebuild(tf.GPTOptions{Batch: batch, Next: next})
	}
	return nil, fmt.Errorf("unknown model type %T", m)
}

// modelLabel names the model of rc in reports, with the GD models' kernel.
func modelLabel(rc runConfig) string {
	kernel := "softmax"
	if rc.GD != nil && rc.GD.Kernel != nil {
		kernel = rc.GD.Kernel.Name()
	}
	switch name := rc.Model; name {
	case "gd":
		return "GD (" + kernel + ", 1 step)"
	case "gdff":
		return "GD + FF (" + kernel + ")"
	case "gpt":
		return "GPT (1 layer)"
	default:
		return strings.ToUpper(name)
	}
}
