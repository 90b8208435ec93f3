package main

import (
	"fmt"
	"io"
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
	return c, family, step, rc, checkRun(dir, family, rc)
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
