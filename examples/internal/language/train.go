package language

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/internal/cli"
	"github.com/gdattn/gdattn/train"
)

// loadData reads and tokenises the corpus of dc.
func loadData(dc dataConfig) (*data.TextData, error) {
	split, err := data.ParseSplitMode(dc.Split)
	if err != nil {
		return nil, err
	}
	stories, err := data.ReadCorpora(dc.Corpus, data.CorpusConfig{Split: split, Gutenberg: dc.Books})
	if err != nil {
		return nil, err
	}
	tok, err := data.NewGPT2Tokenizer()
	if err != nil {
		return nil, err
	}
	return data.NewTextData(stories, tok, data.TextDataConfig{
		Seed: dc.Seed, ValidFrac: dc.ValidFrac, TestFrac: dc.TestFrac, Restrict: dc.Restrict, MinCount: dc.MinCount,
	})
}

// lmConfig is the library's LM training config of rc: AdamW, warmup +
// cosine, clipping, evaluation and checkpoints every so many steps.
func lmConfig(rc runConfig, out string, dev *placement, log io.Writer) train.LMConfig {
	ts := rc.Train
	return train.LMConfig{
		Steps: ts.Steps, Warmup: ts.Warmup, LR: ts.LR, MinLR: ts.MinLR, WeightDecay: ts.WeightDecay, ClipNorm: ts.Clip,
		Seed: rc.Seed, EvalEvery: ts.EvalEvery, EvalBatches: ts.EvalBatches, Dir: out, CkptEvery: ts.CkptEvery, Run: rc,
		Progress: log, Label: rc.Model, TrainExecutor: dev.executor(true), EvalExecutor: dev.executor(false),
		Float32CrossEntropy: ts.Xent32,
	}
}

// readRun reads the checkpoint in dir, once (the model, its run config and
// the optimiser state all come from this read), decodes its run config and
// checks it; it returns the model family's key in the checkpoint and the
// step it was saved at.
func readRun(dir string) (*checkpoint.Checkpoint, string, int, runConfig, error) {
	var rc runConfig
	c, err := checkpoint.Read(dir)
	if err != nil {
		return nil, "", 0, rc, cli.Usage(err)
	}
	family, step, err := train.DecodeRun(c.Header(), &rc)
	if err != nil {
		return nil, "", 0, rc, cli.Usage(err)
	}
	if err := finiteParams(c); err != nil {
		return nil, "", 0, rc, err
	}
	return c, family, step, rc, checkRun(dir, family, rc)
}

// finiteParams refuses a checkpoint whose parameters hold NaN or ±Inf
// (a diverged or corrupt run): nothing it computes would mean anything.
func finiteParams(c *checkpoint.Checkpoint) error {
	names := make([]string, 0, len(c.Params))
	for name := range c.Params {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		a := c.Params[name]
		bad := func(i int, v float64) error {
			return cli.Usagef("checkpoint %s: parameter %q holds %v at element %d: not a usable model", c.Dir, name, v, i)
		}
		for i, v := range a.F64 {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return bad(i, v)
			}
		}
		for i, v := range a.F32 {
			if v != v || math.IsInf(float64(v), 0) {
				return bad(i, float64(v))
			}
		}
	}
	return nil
}

// resumeOut checks the checkpoint location of a resumed run: the resumed
// checkpoint itself, or a directory that does not exist yet or is empty;
// never another checkpoint, which the run would replace.
func resumeOut(out, resume string) error {
	oi, err := os.Stat(out)
	if err != nil {
		return nil // missing: OutCheckpoint checks the rest
	}
	if ri, err := os.Stat(resume); err == nil && os.SameFile(oi, ri) {
		return nil
	}
	if ents, err := os.ReadDir(out); err == nil && len(ents) == 0 {
		return nil
	}
	return cli.Usagef("-out: %s exists and is not the -resume checkpoint %s: a resumed run saves to its own checkpoint or to a new or empty directory, never over another", out, resume)
}

// checkVocab verifies that the data's vocabulary is the one the model
// (loaded from a checkpoint) was trained with.
func checkVocab(dir string, m lm, v *data.Vocab) error {
	c := m.TextCodec().Vocab
	if c.Restricted() != v.Restricted() || !slices.Equal(c.GPTIDs(), v.GPTIDs()) {
		return fmt.Errorf("checkpoint %s was trained with another vocabulary than this corpus gives (was the corpus changed?)", dir)
	}
	return nil
}
