package language

import (
	"fmt"
	"path/filepath"

	"github.com/gdattn/gdattn/internal/cli"
)

// Limits of the sizes a command line or a checkpoint's config may ask for:
// far above the paper's (vocabulary 50,258, d' = 512, context 256, 8
// heads, batch 8, 20,000 steps), low enough that a typo or a crafted
// config.json cannot make the model's construction hang or exhaust memory
// before its parameters are checked against the saved ones.
const (
	MaxSteps   = 1 << 30 // training steps, -steps, -ckpt-every
	MaxBatch   = 1 << 16 // sequences per step, -batch
	MaxStories = 1 << 20 // -stories, -examples
	maxVocab   = 1 << 17 // token ids
	maxWidth   = 4096    // d' (d_model)
	maxContext = 1 << 14 // positions
	maxHeads   = 256
	maxDepth   = 64      // GD steps, GPT layers
	maxHidden  = 1 << 16 // feed-forward width
	// maxEmbed bounds Vocab·d' (the embedding, and the head's weights);
	// maxLogits bounds Batch·Context·Vocab (the logits of one step).
	maxEmbed  = 1 << 28
	maxLogits = 1 << 31
)

// SplitModes are the values of -split (data.ParseSplitMode).
var SplitModes = []string{"auto", "eot", "paragraphs", "openers"}

// checkRun checks the run config (the "run" object) of the checkpoint in
// dir, whose model has the family key family, before anything is built or
// read from it: a usage error naming its config.json. The model's own config
// is checked by gd.LoadLM or tf.LoadGPT (and then the sizes, by checkSizes).
func checkRun(dir, family string, rc runConfig) error {
	file := filepath.Join(dir, "config.json")
	d, t := rc.Data, rc.Train
	if err := cli.InFile(file,
		cli.Check("run.model", rc.Model, cli.OneOf("gd", "gdff", "gpt")),
		cli.Check("run.preset", rc.Preset, cli.OneOf("paper", "small", "tiny")),
		cli.Check("run.data.corpus", d.Corpus, cli.NonEmpty),
		cli.Check("run.data.split", d.Split, cli.OneOf(SplitModes...)),
		cli.Check("run.data.valid_frac", d.ValidFrac, cli.Fraction),
		cli.Check("run.data.test_frac", d.TestFrac, cli.Fraction),
		cli.Check("run.data.min_count", d.MinCount, cli.NonNegative),
		cli.Check("run.train.batch", t.Batch, cli.IntIn(1, MaxBatch)),
		cli.Check("run.train.steps", t.Steps, cli.IntIn(1, MaxSteps)),
		cli.Check("run.train.warmup", t.Warmup, cli.IntIn(0, t.Steps-1)),
		cli.Check("run.train.lr", t.LR, cli.Positive),
		cli.Check("run.train.min_lr", t.MinLR, cli.NonNegative),
		cli.Check("run.train.weight_decay", t.WeightDecay, cli.NonNegative),
		cli.Check("run.train.clip", t.Clip, cli.NonNegative),
		cli.Check("run.train.ckpt_every", t.CkptEvery, cli.IntIn(0, MaxSteps)),
		cli.Check("run.train.eval_every", t.EvalEvery, cli.IntIn(0, MaxSteps)),
		cli.Check("run.train.eval_batches", t.EvalBatches, cli.IntIn(0, MaxSteps)),
	); err != nil {
		return err
	}
	if d.ValidFrac+d.TestFrac >= 1 {
		return cli.Usagef("%s: run.data.valid_frac %v + run.data.test_frac %v, want < 1", file, d.ValidFrac, d.TestFrac)
	}
	if want := map[string]string{"gd": "gd_lm", "gdff": "gd_lm", "gpt": "tf_gpt"}[rc.Model]; family != want {
		return cli.Usagef("%s: run.model %q with a %q model config, want %q", file, rc.Model, family, want)
	}
	return nil
}

// checkSizes checks the model config of rc (its library's own checks, then
// the limits) and the size of one step's logits.
func checkSizes(rc runConfig) error {
	var vocab, width, context int
	var rest []error // the checks of the model's other sizes
	switch {
	case rc.GD != nil:
		c, err := rc.GD.Validate()
		if err != nil {
			return err
		}
		vocab, width, context = c.Vocab, c.DPrime, c.Context
		rest = []error{
			cli.Check("gd.heads", c.Heads, cli.IntIn(1, maxHeads)),
			cli.Check("gd.steps", c.Steps, cli.IntIn(1, maxDepth)),
			cli.Check("gd.ff_hidden", c.FFHidden, cli.IntIn(1, maxHidden)),
		}
	case rc.GPT != nil:
		c, err := rc.GPT.Validate()
		if err != nil {
			return err
		}
		vocab, width, context = c.Vocab, c.DModel, c.Context
		rest = []error{
			cli.Check("gpt.heads", c.Heads, cli.IntIn(1, maxHeads)),
			cli.Check("gpt.layers", c.Layers, cli.IntIn(1, maxDepth)),
			cli.Check("gpt.ff_hidden", c.FFHidden, cli.IntIn(1, maxHidden)),
		}
	default:
		return fmt.Errorf("no model config")
	}
	if err := cli.First(append([]error{
		cli.Check("vocab", vocab, cli.IntIn(2, maxVocab)),
		cli.Check("d'", width, cli.IntIn(1, maxWidth)),
		cli.Check("context", context, cli.IntIn(1, maxContext)),
	}, rest...)...); err != nil {
		return err
	}
	// Each factor is bounded above, so the products cannot overflow.
	if vocab*width > maxEmbed {
		return fmt.Errorf("vocabulary %d × d' %d = %d embedding entries, more than %d", vocab, width, vocab*width, maxEmbed)
	}
	if n := rc.Train.Batch * context * vocab; n > maxLogits {
		return fmt.Errorf("batch %d × context %d × vocabulary %d = %d logits per step, more than %d", rc.Train.Batch, context, vocab, n, maxLogits)
	}
	return nil
}
