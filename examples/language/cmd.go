package main

import (
	"flag"
	"fmt"
	"github.com/gdattn/gdattn/examples/internal/device"
	"os"
	"strings"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph"
	G "gorgonia.org/gorgonia"
)

func (o *decodeOpts) config() data.DecodeConfig {
	return data.DecodeConfig{Strategy: o.strategy, MaxNew: o.maxNew, Beams: o.beams, Temperature: o.temperature, TopK: o.topK, Seed: o.seed}
}

// cmdTrain trains a model from a preset (or resumes a checkpoint), saves it
// and evaluates it on the test split.
func cmdTrain(args []string) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	modelName := fs.String("model", "gd", "gd (GD, softmax kernel), gdff (GD + feed-forward) or gpt (1-layer Transformer)")
	presetName := fs.String("preset", "small", "model and training sizes: "+presetNames())
	corpus := fs.String("corpus", defaultCorpus, "plain-text corpus file, or the directory of scripts/fetch-gutenberg.sh")
	split := fs.String("split", "auto", "how the corpus is cut into stories: auto, eot, paragraphs or openers")
	books := fs.String("books", "", "with a Gutenberg directory: comma-separated books to read, e.g. bryant-stories,carroll-alice (empty: all)")
	out := fs.String("out", "", "checkpoint directory (saved every -ckpt-every steps and at the end); empty: no checkpoint")
	resume := fs.String("resume", "", "resume training from this checkpoint (its config wins over the flags, except -steps and -out)")
	steps := fs.Int("steps", 0, "training steps (0: the preset's)")
	batch := fs.Int("batch", 0, "sequences per step (0: the preset's)")
	ckptEvery := fs.Int("ckpt-every", 0, "checkpoint every K steps (0: the preset's)")
	kernel := fs.String("kernel", "softmax", "GD kernel: softmax, linear, rbf, exp or laplacian")
	diagP := fs.Bool("diag-p", false, "GD: diagonal head merges P_m (the paper's 8K attention parameters) instead of full d'×d' ones")
	dtype := fs.String("dtype", "float32", "float32 or float64")
	seed := fs.Uint64("seed", 1, "initialisation and minibatch seed")
	dataSeed := fs.Uint64("data-seed", 1, "seed of the train/validation/test split")
	validFrac := fs.Float64("valid-frac", 0, "fraction of the stories held out for validation (0: the preset's)")
	testFrac := fs.Float64("test-frac", 0, "fraction of the stories held out for test (0: the preset's)")
	noEval := fs.Bool("no-eval", false, "skip the test evaluation after training")
	stories := fs.Int("stories", 200, "test stories to continue in the evaluation (the paper: 200)")
	devName := fs.String("device", "cpu", "where the graphs run: "+device.Names)
	dec := decodeFlags(fs, data.DecodeBeam)
	if err := fs.Parse(args); err != nil {
		return err
	}
	dev, err := openDevice(*devName)
	if err != nil {
		return err
	}
	defer dev.close()
	var rc runConfig
	var ckpt *checkpoint.Checkpoint
	if *resume != "" {
		var err error
		if ckpt, rc, err = readRun(*resume); err != nil {
			return err
		}
		if *out == "" {
			*out = *resume
		}
	} else {
		p, ok := presets[*presetName]
		if !ok {
			return fmt.Errorf("unknown -preset %q (want %s)", *presetName, presetNames())
		}
		rc = runConfig{Model: *modelName, Preset: *presetName, Dtype: *dtype, Seed: *seed, Train: p.train,
			Data: dataConfig{Corpus: *corpus, Split: *split, Seed: *dataSeed, ValidFrac: p.ValidFrac, TestFrac: p.TestFrac, Restrict: p.Restrict, MinCount: p.MinCount}}
		if *books != "" {
			rc.Data.Books = strings.Split(*books, ",")
		}
		if *validFrac > 0 {
			rc.Data.ValidFrac = *validFrac
		}
		if *testFrac > 0 {
			rc.Data.TestFrac = *testFrac
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
	ds, err := loadData(rc.Data)
	if err != nil {
		return err
	}
	rc.Vocab = ds.Codec.Vocab.Size()
	fmt.Fprintf(os.Stderr, "corpus %s: %d stories, %d tokens; split %d/%d/%d stories; vocabulary %d ids (%d training tokens, %d held-out tokens unknown)\n",
		rc.Data.Corpus, ds.NumStories, ds.NumToks, len(ds.Train), len(ds.Valid), len(ds.Test), rc.Vocab, len(ds.TrainStream), ds.UnkHeld)
	if ckpt == nil {
		if err := modelConfigs(&rc, presets[rc.Preset], *kernel, *diagP); err != nil {
			return err
		}
	} else if err := checkVocab(ckpt, ds.Codec.Vocab); err != nil {
		return err
	}
	t, err := newTrainer(rc, ds, ckpt, *out, dev, os.Stderr)
	if err != nil {
		return err
	}
	defer t.close()
	attn, rest := t.m.NumParams()
	fmt.Fprintf(os.Stderr, "%s: %d attention + %d other parameters; %d steps of %d×%d tokens from step %d\n",
		modelLabel(rc.Model), attn, rest, rc.Train.Steps, rc.Train.Batch, t.m.context, t.tr.StepCount())
	if err := t.run(); err != nil {
		return err
	}
	if err := t.tr.SyncParams(); err != nil {
		return err
	}
	if *noEval {
		return nil
	}
	r, err := evaluate(rc, ds, t.m, t.eval, evalOptions{Stories: *stories, Decode: dec.config(), GenBatch: 64, Examples: 2}, os.Stderr)
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
	fs := flag.NewFlagSet("evaluate", flag.ContinueOnError)
	dir := fs.String("ckpt", "", "checkpoint directory (required)")
	corpus := fs.String("corpus", "", "corpus to read instead of the one the checkpoint was trained on")
	stories := fs.Int("stories", 200, "test stories to continue (the paper: 200)")
	examples := fs.Int("examples", 2, "generations to print")
	dec := decodeFlags(fs, data.DecodeBeam)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("evaluate: -ckpt is required")
	}
	c, rc, err := readRun(*dir)
	if err != nil {
		return err
	}
	if *corpus != "" {
		rc.Data.Corpus = *corpus
	}
	ds, err := loadData(rc.Data)
	if err != nil {
		return err
	}
	if err := checkVocab(c, ds.Codec.Vocab); err != nil {
		return err
	}
	m, err := buildModel(rc, rc.Train.Batch, false)
	if err != nil {
		return err
	}
	if err := c.Apply(m.Scope(), checkpoint.LoadOptions{}); err != nil {
		return err
	}
	mc, err := graph.NewMachine(m.Scope(), nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{m.loss}})
	if err != nil {
		return err
	}
	defer mc.Close()
	r, err := evaluate(rc, ds, m, mc, evalOptions{Stories: *stories, Decode: dec.config(), GenBatch: 64, Examples: *examples}, os.Stderr)
	if err != nil {
		return err
	}
	r.print(os.Stdout, withDefaults(dec.config()))
	return nil
}

// cmdGenerate continues a prompt with a checkpoint.
func cmdGenerate(args []string) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	dir := fs.String("ckpt", "", "checkpoint directory (required)")
	prompt := fs.String("prompt", "Once upon a time", "text to continue")
	allowUnk := fs.Bool("allow-unk", false, "map prompt tokens outside a restricted vocabulary to <|unk|> instead of failing")
	dec := decodeFlags(fs, data.DecodeGreedy)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("generate: -ckpt is required")
	}
	if strings.TrimSpace(*prompt) == "" {
		return fmt.Errorf("generate: the prompt is empty")
	}
	c, rc, err := readRun(*dir)
	if err != nil {
		return err
	}
	v, err := vocabOf(c)
	if err != nil {
		return err
	}
	tok, err := data.NewGPT2Tokenizer()
	if err != nil {
		return err
	}
	codec := &data.TextCodec{Tok: tok, Vocab: v}
	ids, err := codec.EncodeStrict(*prompt)
	if *allowUnk {
		ids, err = codec.Encode(*prompt)
	}
	if err != nil {
		return fmt.Errorf("%w (use -allow-unk to map them to %s)", err, data.UnkText)
	}
	g, err := buildModel(rc, 1, true)
	if err != nil {
		return err
	}
	if err := c.Apply(g.Scope(), checkpoint.LoadOptions{}); err != nil {
		return err
	}
	mc, err := graph.NewMachine(g.Scope(), nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{g.next}})
	if err != nil {
		return err
	}
	defer mc.Close()
	dc := dec.config()
	dc.Stop, dc.Forbid = v.EOT, forbidden(v)
	outs, err := data.Generate(nextFunc(g, mc, v.Pad), [][]int{ids}, dc)
	if err != nil {
		return err
	}
	text, err := codec.Decode(outs[0])
	if err != nil {
		return err
	}
	fmt.Printf("%s%s\n", *prompt, text)
	return nil
}
