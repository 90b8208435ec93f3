package main

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
	maxSteps   = 1 << 30 // training steps, -steps, -ckpt-every
	maxBatch   = 1 << 16 // sequences per step, -batch
	maxStories = 1 << 20 // -stories, -examples
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

// splitModes are the values of -split (data.ParseSplitMode).
var splitModes = []string{"auto", "eot", "paragraphs", "openers"}

// checkRun checks the config of the checkpoint in dir before anything is
// built from it: a usage error naming its config.json.
func checkRun(dir string, rc runConfig) error {
	file := filepath.Join(dir, "config.json")
	d, t := rc.Data, rc.Train
	if err := cli.InFile(file,
		cli.Check("model", rc.Model, cli.OneOf("gd", "gdff", "gpt")),
		cli.Check("dtype", rc.Dtype, cli.OneOf("float32", "float64")),
		cli.Check("data.corpus", d.Corpus, cli.NonEmpty),
		cli.Check("data.split", d.Split, cli.OneOf(splitModes...)),
		cli.Check("data.valid_frac", d.ValidFrac, cli.Fraction),
		cli.Check("data.test_frac", d.TestFrac, cli.Fraction),
		cli.Check("data.min_count", d.MinCount, cli.NonNegative),
		cli.Check("train.batch", t.Batch, cli.IntIn(1, maxBatch)),
		cli.Check("train.steps", t.Steps, cli.IntIn(1, maxSteps)),
		cli.Check("train.warmup", t.Warmup, cli.IntIn(0, t.Steps-1)),
		cli.Check("train.lr", t.LR, cli.Positive),
		cli.Check("train.min_lr", t.MinLR, cli.NonNegative),
		cli.Check("train.weight_decay", t.WeightDecay, cli.NonNegative),
		cli.Check("train.clip", t.Clip, cli.NonNegative),
		cli.Check("train.ckpt_every", t.CkptEvery, cli.IntIn(0, maxSteps)),
		cli.Check("train.eval_every", t.EvalEvery, cli.IntIn(0, maxSteps)),
		cli.Check("train.eval_batches", t.EvalBatches, cli.IntIn(0, maxSteps)),
	); err != nil {
		return err
	}
	if d.ValidFrac+d.TestFrac >= 1 {
		return cli.Usagef("%s: data.valid_frac %v + data.test_frac %v, want < 1", file, d.ValidFrac, d.TestFrac)
	}
	if (rc.GD != nil) == (rc.GPT != nil) || (rc.GPT != nil) != (rc.Model == "gpt") {
		return cli.Usagef("%s: model %q with gd %v and gpt %v configs, want the one of the model", file, rc.Model, rc.GD != nil, rc.GPT != nil)
	}
	return cli.InFile(file, checkSizes(rc))
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
