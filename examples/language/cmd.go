package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/examples/internal/device"
	"github.com/gdattn/gdattn/internal/cli"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/train"
)

func (o *decodeOpts) config() data.DecodeConfig {
	return data.DecodeConfig{Strategy: o.strategy, MaxNew: o.maxNew, Beams: o.beams, Temperature: o.temperature, TopK: o.topK, Seed: o.seed}
}

// parse parses the flags of a subcommand into fs and checks them against
// rules (see package cli): -h prints the subcommand's usage.
func parse(fs *flag.FlagSet, args []string, rules cli.Rules, what string) (cli.Set, error) {
	err := cli.Parse(fs, args, func(w io.Writer) {
		fmt.Fprintf(w, "Usage: language %s [flags]\n\n%s\n\nFlags:\n", fs.Name(), what)
		cli.PrintDefaults(fs, w)
	})
	if err != nil {
		return nil, err
	}
	return cli.Given(fs), cli.Validate(fs, rules)
}

// resumeIgnores are the train flags a resumed run takes from its checkpoint.
var resumeIgnores = []string{"model", "preset", "corpus", "split", "books", "batch", "ckpt-every", "kernel", "diag-p",
	"dtype", "seed", "data-seed", "valid-frac", "test-frac"}

// cmdTrain trains a model from a preset (or resumes a checkpoint), saves it
// and evaluates it on the test split.
func cmdTrain(args []string) error {
	fs := cli.NewFlagSet("train")
	modelName := fs.String("model", "gd", "gd (GD, softmax kernel), gdff (GD + feed-forward) or gpt (1-layer Transformer)")
	presetName := fs.String("preset", "small", "model and training sizes: "+presetNames())
	corpus := fs.String("corpus", defaultCorpus, "plain-text corpus file, or the directory of scripts/fetch-gutenberg.sh; several, comma-separated, are combined (e.g. TinyStories and Gutenberg children's books)")
	split := fs.String("split", "auto", "how the corpus is cut into stories: auto, eot, paragraphs or openers")
	books := fs.String("books", "", "with a Gutenberg directory as -corpus: comma-separated books to read, e.g. bryant-stories,carroll-alice (empty: all)")
	out := fs.String("out", "", "checkpoint directory (saved every -ckpt-every steps and at the end); empty: no checkpoint")
	resume := fs.String("resume", "", "resume training from this checkpoint (its config wins: only -steps, -out, -device, -no-eval, -stories and the decoding flags apply)")
	steps := fs.Int("steps", 0, fmt.Sprintf("training steps, 0..%d (0: the preset's)", maxSteps))
	batch := fs.Int("batch", 0, fmt.Sprintf("sequences per step, 0..%d (0: the preset's)", maxBatch))
	ckptEvery := fs.Int("ckpt-every", 0, fmt.Sprintf("checkpoint every K steps, 0..%d (0: the preset's)", maxSteps))
	kernel := fs.String("kernel", "softmax", "with -model gd or gdff: GD kernel: softmax, linear, rbf, exp or laplacian")
	diagP := fs.Bool("diag-p", false, "with -model gd or gdff: diagonal head merges P_m (the paper's 8K attention parameters) instead of full d'×d' ones")
	dtype := fs.String("dtype", "float32", "float32 or float64")
	seed := fs.Uint64("seed", 1, "initialisation and minibatch seed")
	dataSeed := fs.Uint64("data-seed", 1, "seed of the train/validation/test split")
	validFrac := fs.Float64("valid-frac", 0, "fraction of the stories held out for validation, in [0, 1) (0: the preset's)")
	testFrac := fs.Float64("test-frac", 0, "fraction of the stories held out for test, in [0, 1) (0: the preset's); with -valid-frac below 1 in all")
	noEval := fs.Bool("no-eval", false, "skip the test evaluation after training (then -stories and the decoding flags do not apply)")
	stories := fs.Int("stories", 200, fmt.Sprintf("test stories to continue in the evaluation, 1..%d (the paper: 200)", maxStories))
	devName := fs.String("device", "cpu", "where the graphs run: "+device.Names)
	dec := decodeFlags(fs, data.DecodeBeam)
	set, err := parse(fs, args, decodeRules(cli.Rules{
		"model": cli.OneOf("gd", "gdff", "gpt"), "preset": cli.OneOf("paper", "small", "tiny"), "corpus": cli.NonEmpty,
		"split": cli.OneOf(splitModes...), "books": cli.Optional(cli.List(cli.NonEmpty)), "out": cli.Any, "resume": cli.Any,
		"steps": cli.IntIn(0, maxSteps), "batch": cli.IntIn(0, maxBatch), "ckpt-every": cli.IntIn(0, maxSteps),
		"kernel": cli.OneOf(layers.KernelNames()...), "diag-p": cli.Any, "dtype": cli.OneOf("float32", "float64"),
		"seed": cli.Any, "data-seed": cli.Any, "valid-frac": cli.Fraction, "test-frac": cli.Fraction, "no-eval": cli.Any,
		"stories": cli.IntIn(1, maxStories), "device": cli.OneOf("cpu", "cuda", "emulator"),
	}), "Trains a language model, checkpoints it and evaluates it on the test split.")
	if err != nil {
		return err
	}
	err = cli.First(
		cli.NotWith(set, *resume != "", "-resume", resumeIgnores...),
		cli.NotWith(set, *noEval, "-no-eval", append([]string{"stories"}, decodeFlagNames...)...),
		cli.Needs(set, *modelName != "gpt", "-model gd or gdff", "kernel", "diag-p"),
		dec.check(set),
	)
	if err != nil {
		return err
	}
	var rc runConfig
	var family string
	var ck *checkpoint.Checkpoint // the resumed checkpoint, read once
	at := 0                       // its step
	if *resume != "" {
		if ck, family, at, rc, err = readRun(*resume); err != nil {
			return err
		}
		if ck.Optim == nil {
			return cli.Usagef("-resume: checkpoint %s holds no optimiser state: it cannot be resumed", *resume)
		}
		if *out == "" {
			*out = *resume
		}
		if err := resumeOut(*out, *resume); err != nil {
			return err
		}
	} else {
		p := presets[*presetName]
		rc = runConfig{Model: *modelName, Preset: *presetName, Dtype: *dtype, Seed: *seed, Train: p.train,
			Data: dataConfig{Corpus: *corpus, Split: *split, Seed: *dataSeed, ValidFrac: p.ValidFrac, TestFrac: p.TestFrac, Restrict: p.Restrict, MinCount: p.MinCount}}
		if *books != "" {
			dir := false
			for _, p := range strings.Split(*corpus, ",") {
				fi, err := os.Stat(strings.TrimSpace(p))
				dir = dir || err != nil || fi.IsDir() // a missing path is reported when the corpus is read
			}
			if !dir {
				return cli.Usagef("-books needs a Gutenberg directory in -corpus; %s has none", *corpus)
			}
			rc.Data.Books = strings.Split(*books, ",")
		}
		if *validFrac > 0 {
			rc.Data.ValidFrac = *validFrac
		}
		if *testFrac > 0 {
			rc.Data.TestFrac = *testFrac
		}
		if f := rc.Data.ValidFrac + rc.Data.TestFrac; f >= 1 {
			return cli.Usagef("-valid-frac %v + -test-frac %v = %v, want < 1 (0 takes the preset's)", rc.Data.ValidFrac, rc.Data.TestFrac, f)
		}
		if *batch > 0 {
			rc.Train.Batch = *batch
		}
		if *ckptEvery > 0 {
			rc.Train.CkptEvery = *ckptEvery
		}
	}
	if *steps > 0 {
		rc.Train.Steps = *steps
		rc.Train.Warmup = min(rc.Train.Warmup, *steps-1)
	}
	if err := cli.OutCheckpoint("out", *out); err != nil {
		return err
	}
	if *resume != "" {
		if at >= rc.Train.Steps {
			return cli.Usagef("-steps: the run ends at step %d and the checkpoint %s is already at step %d: nothing to train or save (give -steps above %d; language evaluate evaluates it)", rc.Train.Steps, *resume, at, at)
		}
	}
	ds, err := loadData(rc.Data)
	if err != nil {
		return cli.Usage(err)
	}
	rc.Vocab = ds.Codec.Vocab.Size()
	var m lm
	if *resume == "" {
		if err := modelConfigs(&rc, presets[rc.Preset], *kernel, *diagP); err != nil {
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
		if err := checkVocab(*resume, m, ds.Codec.Vocab); err != nil {
			return cli.Usage(err)
		}
	}
	// Every input is checked: the first progress line.
	fmt.Fprintf(os.Stderr, "corpus %s: %d stories, %d tokens; split %d/%d/%d stories; vocabulary %d ids (%d training tokens, %d held-out tokens unknown)\n",
		rc.Data.Corpus, ds.NumStories, ds.NumToks, len(ds.Train), len(ds.Valid), len(ds.Test), rc.Vocab, len(ds.TrainStream), ds.UnkHeld)
	dev, err := openDevice(*devName)
	if err != nil {
		return err
	}
	defer dev.close()
	t, err := train.NewLMTrainer(m, lmConfig(rc, *out, dev, os.Stderr))
	if err != nil {
		return err
	}
	defer t.Close()
	if ck != nil {
		if err := t.ResumeFrom(ck); err != nil {
			return err
		}
		ck = nil // the model and the trainer hold what it held
	}
	attn, rest := m.NumParams()
	fmt.Fprintf(os.Stderr, "%s: %d attention + %d other parameters; %d steps of %d×%d tokens from step %d\n",
		modelLabel(rc), attn, rest, rc.Train.Steps, rc.Train.Batch, m.ContextLen(), t.Trainer().StepCount())
	if err := t.FitText(ds); err != nil {
		return err
	}
	if *out != "" {
		fmt.Fprintf(os.Stderr, "checkpoint: %s\n", *out)
	}
	if *noEval {
		return nil
	}
	r, err := evaluate(rc, ds, t, evalOptions{Stories: *stories, Decode: dec.config(), GenBatch: 64, Examples: 2}, os.Stderr)
	if err != nil {
		return err
	}
	r.print(os.Stdout, withDefaults(dec.config()))
	return nil
}

func withDefaults(dc data.DecodeConfig) data.DecodeConfig {
	if dc.MaxNew == 0 {
		dc.MaxNew = 100
	}
	if dc.Beams == 0 {
		dc.Beams = 3
	}
	return dc
}

// cmdEvaluate evaluates a checkpoint on the test split of its corpus.
func cmdEvaluate(args []string) error {
	fs := cli.NewFlagSet("evaluate")
	dir := fs.String("ckpt", "", "checkpoint directory (required)")
	corpus := fs.String("corpus", "", "corpus to read instead of the one the checkpoint was trained on")
	stories := fs.Int("stories", 200, fmt.Sprintf("test stories to continue, 1..%d (the paper: 200)", maxStories))
	examples := fs.Int("examples", 2, fmt.Sprintf("generations to print, 0..%d", maxStories))
	dec := decodeFlags(fs, data.DecodeBeam)
	set, err := parse(fs, args, decodeRules(cli.Rules{
		"ckpt": cli.Any, "corpus": cli.Any, "stories": cli.IntIn(1, maxStories), "examples": cli.IntIn(0, maxStories),
	}), "Evaluates a checkpoint on the test split of its corpus: perplexity and continuation metrics.")
	if err != nil {
		return err
	}
	if err := cli.First(cli.Required("ckpt", *dir), dec.check(set)); err != nil {
		return err
	}
	ck, family, _, rc, err := readRun(*dir)
	if err != nil {
		return err
	}
	if *corpus != "" {
		rc.Data.Corpus = *corpus
	}
	ds, err := loadData(rc.Data)
	if err != nil {
		return cli.Usage(err)
	}
	m, err := loadModel(ck, family, &rc, rc.Train.Batch, false)
	if err != nil {
		return cli.Usage(err)
	}
	if err := checkVocab(*dir, m, ds.Codec.Vocab); err != nil {
		return cli.Usage(err)
	}
	cfg := lmConfig(rc, "", nil, nil)
	cfg.EvalOnly = true
	t, err := train.NewLMTrainer(m, cfg)
	if err != nil {
		return err
	}
	defer t.Close()
	r, err := evaluate(rc, ds, t, evalOptions{Stories: *stories, Decode: dec.config(), GenBatch: 64, Examples: *examples}, os.Stderr)
	if err != nil {
		return err
	}
	r.print(os.Stdout, withDefaults(dec.config()))
	return nil
}

// cmdGenerate continues a prompt with a checkpoint.
func cmdGenerate(args []string) error {
	fs := cli.NewFlagSet("generate")
	dir := fs.String("ckpt", "", "checkpoint directory (required)")
	prompt := fs.String("prompt", "Once upon a time", "text to continue (not empty)")
	allowUnk := fs.Bool("allow-unk", false, "map prompt tokens outside a restricted vocabulary to <|unk|> instead of failing")
	dec := decodeFlags(fs, data.DecodeGreedy)
	set, err := parse(fs, args, decodeRules(cli.Rules{"ckpt": cli.Any, "prompt": cli.NonEmpty, "allow-unk": cli.Any}),
		"Continues a prompt with a checkpoint.")
	if err != nil {
		return err
	}
	if err := cli.First(cli.Required("ckpt", *dir), dec.check(set)); err != nil {
		return err
	}
	ck, family, _, rc, err := readRun(*dir)
	if err != nil {
		return err
	}
	m, err := loadModel(ck, family, &rc, 1, true)
	if err != nil {
		return cli.Usage(err)
	}
	codec := m.TextCodec()
	ids, err := codec.EncodeStrict(*prompt)
	if *allowUnk {
		ids, err = codec.Encode(*prompt)
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
	outs, err := g.Generate([][]int{ids}, train.TextDecodeConfig(codec, dec.config()))
	if err != nil {
		return err
	}
	// The speed goes to stderr: stdout is the text alone.
	if secs := time.Since(start).Seconds(); len(outs[0]) > 0 && secs > 0 {
		how := "full recompute"
		if g.Cached() {
			how = "key/value cache"
		}
		fmt.Fprintf(os.Stderr, "generated %d tokens in %.2f s: %.1f tokens/s (%s)\n", len(outs[0]), secs, float64(len(outs[0]))/secs, how)
	}
	text, err := codec.Decode(outs[0])
	if err != nil {
		return err
	}
	fmt.Printf("%s%s\n", *prompt, text)
	return nil
}
