package main

import (
	"fmt"
	"strings"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/losses"
	"github.com/gdattn/gdattn/tf"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// runConfig is everything that defines a run; it is stored in every
// checkpoint's config.json, so evaluate, generate and -resume rebuild the
// same model and data from it.
type runConfig struct {
	Model  string        `json:"model"` // gd, gdff or gpt
	Preset string        `json:"preset"`
	GD     *gd.LMConfig  `json:"gd,omitempty"`
	GPT    *tf.GPTConfig `json:"gpt,omitempty"`
	Data   dataConfig    `json:"data"`
	Train  trainSettings `json:"train"`
	Dtype  string        `json:"dtype"`
	Seed   uint64        `json:"seed"` // initialisation and minibatch draws
	Vocab  int           `json:"vocab"`
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

func presetNames() string { return "paper, small, tiny" }

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

// lm is what the harness needs of a language model (gd.LM and tf.GPT).
type lm interface {
	Scope() *graph.Scope
	Feed(ids, targets []int) error
	FeedNext(ids, lengths []int) error
	NumParams() (attention, rest int)
}

// model is a built language-model graph: its loss (training graphs) or next
// logits (generation graphs).
type model struct {
	lm
	loss, next *G.Node
	context    int
	batch      int
}

// buildModel builds rc's model for batches of batch sequences in a new
// scope; next selects the generation graph.
func buildModel(rc runConfig, batch int, next bool) (*model, error) {
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
		m, err := gd.NewLM(s.Sub(rc.Model), *rc.GD, gd.LMOptions{Batch: batch, Next: next})
		if err != nil {
			return nil, err
		}
		loss, err := lmLoss(m.Logits, m.Targets)
		if err != nil {
			return nil, err
		}
		return &model{lm: m, loss: loss, next: m.NextLogits, context: m.Cfg.Context, batch: batch}, nil
	case rc.GPT != nil:
		m, err := tf.NewGPT(s.Sub(rc.Model), *rc.GPT, tf.GPTOptions{Batch: batch, Next: next})
		if err != nil {
			return nil, err
		}
		loss, err := lmLoss(m.Logits, m.Targets)
		if err != nil {
			return nil, err
		}
		return &model{lm: m, loss: loss, next: m.NextLogits, context: m.Cfg.Context, batch: batch}, nil
	}
	return nil, fmt.Errorf("the run config has no model")
}

// lmLoss is a language model's training loss, the mean cross-entropy of its
// logits against its targets; nil for a generation graph (no logits).
func lmLoss(logits, targets *G.Node) (*G.Node, error) {
	if logits == nil {
		return nil, nil
	}
	return losses.SparseSoftmaxCrossEntropy(logits, targets)
}

// copyParams copies every parameter value of src into the parameter of the
// same name in dst.
func copyParams(dst, src *graph.Scope) error {
	for _, p := range src.Params() {
		q, ok := dst.Lookup(p.Name())
		if !ok {
			return fmt.Errorf("parameter %q missing from the target graph", p.Name())
		}
		v, err := graph.Values(p)
		if err != nil {
			return err
		}
		if err := graph.SetValue(q, v); err != nil {
			return err
		}
	}
	return nil
}

// decayMatrices is nanoGPT's weight-decay rule: decay every parameter of
// rank >= 2 (matrices and embeddings), not vectors (Λ_m, diagonal P_m,
// layer norms, biases).
func decayMatrices(_ string, shape tensor.Shape) bool { return shape.Dims() >= 2 }

// nextFunc returns a data.NextFunc running the generation graph g: contexts
// are cropped to their last T ids, padded with pad, and run in batches of
// g.batch.
func nextFunc(g *model, mc *graph.Machine, pad int) data.NextFunc {
	T, B := g.context, g.batch
	return func(ctxs [][]int) ([][]float64, error) {
		out := make([][]float64, 0, len(ctxs))
		for lo := 0; lo < len(ctxs); lo += B {
			ids := make([]int, B*T)
			lengths := make([]int, B)
			for i := range ids {
				ids[i] = pad
			}
			for b := 0; b < B; b++ {
				lengths[b] = 1
				if lo+b >= len(ctxs) {
					continue
				}
				c := ctxs[lo+b]
				if len(c) > T {
					c = c[len(c)-T:]
				}
				copy(ids[b*T:], c)
				lengths[b] = len(c)
			}
			if err := g.FeedNext(ids, lengths); err != nil {
				return nil, err
			}
			if err := mc.Run(); err != nil {
				return nil, err
			}
			vals, err := graph.Values(g.next)
			if err != nil {
				return nil, err
			}
			V := len(vals) / B
			for b := 0; b < B && lo+b < len(ctxs); b++ {
				out = append(out, vals[b*V:(b+1)*V])
			}
		}
		return out, nil
	}
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
