package language

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/internal/cli"
	"github.com/gdattn/gdattn/train"
)

// TrainOptions are the settings of "language train": a model trained from
// a preset, or (Resume) a checkpoint trained further. Zero sizes take the
// preset's.
type TrainOptions struct {
	Model, Preset, Corpus, Split, Books, Kernel, Dtype string
	// Out is the checkpoint directory (empty: none); Resume the checkpoint
	// to resume (its config wins: only Steps, Out, Device, NoEval, Stories
	// and Decode apply).
	Out, Resume             string
	Steps, Batch, CkptEvery int
	DiagP, NoEval           bool
	// Xent32 computes the loss's softmax in float32 arithmetic
	// (train.LMConfig.Float32CrossEntropy; float32 models on the CPU).
	Xent32              bool
	Seed, DataSeed      uint64
	ValidFrac, TestFrac float64
	Stories             int
	Device              string
	Decode              data.DecodeConfig
	Stdout, Log         io.Writer // the report, the progress
}

// Train trains (or resumes) a model, checkpoints it and, unless NoEval,
// evaluates it on the test split and prints the report to o.Stdout. Bad
// input gives a usage error (cli.Usage) before any training.
func Train(o TrainOptions) error {
	var rc runConfig
	var family string
	var ck *checkpoint.Checkpoint // the resumed checkpoint, read once
	at := 0                       // its step
	var err error
	if o.Resume != "" {
		if ck, family, at, rc, err = readRun(o.Resume); err != nil {
			return err
		}
		if ck.Optim == nil {
			return cli.Usagef("-resume: checkpoint %s holds no optimiser state: it cannot be resumed", o.Resume)
		}
		if o.Out == "" {
			o.Out = o.Resume
		}
		if err := resumeOut(o.Out, o.Resume); err != nil {
			return err
		}
	} else {
		p := presets[o.Preset]
		rc = runConfig{Model: o.Model, Preset: o.Preset, Dtype: o.Dtype, Seed: o.Seed, Train: p.train,
			Data: dataConfig{Corpus: o.Corpus, Split: o.Split, Seed: o.DataSeed, ValidFrac: p.ValidFrac, TestFrac: p.TestFrac, Restrict: p.Restrict, MinCount: p.MinCount}}
		if o.Books != "" {
			dir := false
			for _, p := range strings.Split(o.Corpus, ",") {
				fi, err := os.Stat(strings.TrimSpace(p))
				dir = dir || err != nil || fi.IsDir() // a missing path is reported when the corpus is read
			}
			if !dir {
				return cli.Usagef("-books needs a Gutenberg directory in -corpus; %s has none", o.Corpus)
			}
			rc.Data.Books = strings.Split(o.Books, ",")
		}
		if o.ValidFrac > 0 {
			rc.Data.ValidFrac = o.ValidFrac
		}
		if o.TestFrac > 0 {
			rc.Data.TestFrac = o.TestFrac
		}
		if f := rc.Data.ValidFrac + rc.Data.TestFrac; f >= 1 {
			return cli.Usagef("-valid-frac %v + -test-frac %v = %v, want < 1 (0 takes the preset's)", rc.Data.ValidFrac, rc.Data.TestFrac, f)
		}
		if o.Batch > 0 {
			rc.Train.Batch = o.Batch
		}
		if o.CkptEvery > 0 {
			rc.Train.CkptEvery = o.CkptEvery
		}
		rc.Train.Xent32 = o.Xent32
	}
	if o.Steps > 0 {
		rc.Train.Steps = o.Steps
		rc.Train.Warmup = min(rc.Train.Warmup, o.Steps-1)
	}
	if err := cli.OutCheckpoint("out", o.Out); err != nil {
		return err
	}
	if o.Resume != "" && at >= rc.Train.Steps {
		return cli.Usagef("-steps: the run ends at step %d and the checkpoint %s is already at step %d: nothing to train or save (give -steps above %d; language evaluate evaluates it)", rc.Train.Steps, o.Resume, at, at)
	}
	ds, err := loadData(rc.Data)
	if err != nil {
		return cli.Usage(err)
	}
	rc.Vocab = ds.Codec.Vocab.Size()
	var m lm
	if o.Resume == "" {
		if err := modelConfigs(&rc, presets[rc.Preset], o.Kernel, o.DiagP); err != nil {
			return err
		}
		if err := checkSizes(rc); err != nil {
			return cli.Usagef("the run: %w", err)
		}
		if m, err = buildModel(rc, rc.Train.Batch, false); err != nil {
			return err
		}
	} else {
		if m, err = loadModel(ck, family, &rc, rc.Train.Batch, false); err != nil {
			return cli.Usage(err)
		}
		if err := checkVocab(o.Resume, m, ds.Codec.Vocab); err != nil {
			return cli.Usage(err)
		}
	}
	dev, err := openDevice(o.Device, o.Log)
	if err != nil {
		return err
	}
	defer dev.close()
	t, err := fit(rc, ds, m, ck, o.Out, dev, o.Log)
	if err != nil {
		return err
	}
	defer t.Close()
	if o.NoEval {
		return nil
	}
	r, err := evaluate(rc, ds, t, evalOptions{Stories: o.Stories, Decode: o.Decode, GenBatch: 64, Examples: 2}, o.Log)
	if err != nil {
		return err
	}
	r.print(o.Stdout, WithDefaults(o.Decode))
	return nil
}

// fit trains the model m of rc on ds (from the checkpoint ck when it is
// not nil), saving checkpoints to out (empty: none), and returns its
// trainer, which the caller closes.
func fit(rc runConfig, ds *data.TextData, m lm, ck *checkpoint.Checkpoint, out string, dev *placement, log io.Writer) (*train.LMTrainer, error) {
	// Every input is checked: the first progress line.
	fmt.Fprintf(log, "corpus %s: %d stories, %d tokens; split %d/%d/%d stories; vocabulary %d ids (%d training tokens, %d held-out tokens unknown)\n",
		rc.Data.Corpus, ds.NumStories, ds.NumToks, len(ds.Train), len(ds.Valid), len(ds.Test), rc.Vocab, len(ds.TrainStream), ds.UnkHeld)
	t, err := train.NewLMTrainer(m, lmConfig(rc, out, dev, log))
	if err != nil {
		return nil, err
	}
	if ck != nil {
		if err := t.ResumeFrom(ck); err != nil {
			t.Close()
			return nil, err
		}
	}
	attn, rest := m.NumParams()
	fmt.Fprintf(log, "%s: %d attention + %d other parameters; %d steps of %d×%d tokens from step %d\n",
		modelLabel(rc), attn, rest, rc.Train.Steps, rc.Train.Batch, m.ContextLen(), t.Trainer().StepCount())
	if err := t.FitText(ds); err != nil {
		t.Close()
		return nil, err
	}
	if out != "" {
		fmt.Fprintf(log, "checkpoint: %s\n", out)
	}
	return t, nil
}

// WithDefaults fills the zero MaxNew and Beams of dc with the paper's 100
// and 3.
func WithDefaults(dc data.DecodeConfig) data.DecodeConfig {
	if dc.MaxNew == 0 {
		dc.MaxNew = 100
	}
	if dc.Beams == 0 {
		dc.Beams = 3
	}
	return dc
}

// EvaluateOptions are the settings of "language evaluate".
type EvaluateOptions struct {
	Ckpt, Corpus      string // Corpus: read instead of the checkpoint's
	Stories, Examples int
	Decode            data.DecodeConfig
	Stdout, Log       io.Writer
}

// EvaluateCheckpoint evaluates the checkpoint o.Ckpt on the test split of
// its corpus and prints the report to o.Stdout.
func EvaluateCheckpoint(o EvaluateOptions) error {
	ck, family, _, rc, err := readRun(o.Ckpt)
	if err != nil {
		return err
	}
	if o.Corpus != "" {
		rc.Data.Corpus = o.Corpus
	}
	ds, err := loadData(rc.Data)
	if err != nil {
		return cli.Usage(err)
	}
	m, err := loadModel(ck, family, &rc, rc.Train.Batch, false)
	if err != nil {
		return cli.Usage(err)
	}
	if err := checkVocab(o.Ckpt, m, ds.Codec.Vocab); err != nil {
		return cli.Usage(err)
	}
	cfg := lmConfig(rc, "", nil, nil)
	cfg.EvalOnly = true
	t, err := train.NewLMTrainer(m, cfg)
	if err != nil {
		return err
	}
	defer t.Close()
	r, err := evaluate(rc, ds, t, evalOptions{Stories: o.Stories, Decode: o.Decode, GenBatch: 64, Examples: o.Examples}, o.Log)
	if err != nil {
		return err
	}
	r.print(o.Stdout, WithDefaults(o.Decode))
	return nil
}

// GenerateOptions are the settings of "language generate".
type GenerateOptions struct {
	Ckpt, Prompt string
	// AllowUnk maps prompt tokens outside a restricted vocabulary to
	// <|unk|> instead of failing.
	AllowUnk    bool
	Decode      data.DecodeConfig
	Stdout, Log io.Writer // the text, the speed
}

// Generate continues o.Prompt with the checkpoint o.Ckpt and prints the
// prompt and its continuation to o.Stdout.
func Generate(o GenerateOptions) error {
	ck, family, _, rc, err := readRun(o.Ckpt)
	if err != nil {
		return err
	}
	m, err := loadModel(ck, family, &rc, 1, true)
	if err != nil {
		return cli.Usage(err)
	}
	codec := m.TextCodec()
	ids, err := codec.EncodeStrict(o.Prompt)
	if o.AllowUnk {
		ids, err = codec.Encode(o.Prompt)
	}
	if err != nil {
		return cli.Usagef("-prompt: %w (use -allow-unk to map them to %s)", err, data.UnkText)
	}
	if len(ids) == 0 {
		return cli.Usagef("-prompt: the prompt is empty")
	}
	g, err := train.NewGenerator(m)
	if err != nil {
		return err
	}
	defer g.Close()
	start := time.Now()
	outs, err := g.Generate([][]int{ids}, train.TextDecodeConfig(codec, o.Decode))
	if err != nil {
		return err
	}
	// The speed goes to the log: stdout is the text alone.
	if secs := time.Since(start).Seconds(); len(outs[0]) > 0 && secs > 0 {
		how := "full recompute"
		if g.Cached() {
			how = "key/value cache"
		}
		fmt.Fprintf(o.Log, "generated %d tokens in %.2f s: %.1f tokens/s (%s)\n", len(outs[0]), secs, float64(len(outs[0]))/secs, how)
	}
	text, err := codec.Decode(outs[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Stdout, "%s%s\n", o.Prompt, text)
	return nil
}
