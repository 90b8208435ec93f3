package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/examples/internal/device"
	"github.com/gdattn/gdattn/examples/internal/language"
	"github.com/gdattn/gdattn/internal/cli"
	"github.com/gdattn/gdattn/layers"
)

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
	"dtype", "seed", "data-seed", "valid-frac", "test-frac", "xent32"}

// cmdTrain trains a model from a preset (or resumes a checkpoint), saves it
// and evaluates it on the test split.
func cmdTrain(args []string) error {
	o := language.TrainOptions{Stdout: os.Stdout, Log: os.Stderr}
	fs := cli.NewFlagSet("train")
	fs.StringVar(&o.Model, "model", "gd", "gd (GD, softmax kernel), gdff (GD + feed-forward) or gpt (1-layer Transformer)")
	fs.StringVar(&o.Preset, "preset", "small", "model and training sizes: "+strings.Join(language.PresetNames, ", "))
	fs.StringVar(&o.Corpus, "corpus", defaultCorpus, "plain-text corpus file, or the directory of scripts/fetch-gutenberg.sh; several, comma-separated, are combined (e.g. TinyStories and Gutenberg children's books)")
	fs.StringVar(&o.Split, "split", "auto", "how the corpus is cut into stories: auto, eot, paragraphs or openers")
	fs.StringVar(&o.Books, "books", "", "with a Gutenberg directory as -corpus: comma-separated books to read, e.g. bryant-stories,carroll-alice (empty: all)")
	fs.StringVar(&o.Out, "out", "", "checkpoint directory (saved every -ckpt-every steps and at the end); empty: no checkpoint")
	fs.StringVar(&o.Resume, "resume", "", "resume training from this checkpoint (its config wins: only -steps, -out, -device, -no-eval, -stories and the decoding flags apply)")
	fs.IntVar(&o.Steps, "steps", 0, fmt.Sprintf("training steps, 0..%d (0: the preset's)", language.MaxSteps))
	fs.IntVar(&o.Batch, "batch", 0, fmt.Sprintf("sequences per step, 0..%d (0: the preset's)", language.MaxBatch))
	fs.IntVar(&o.CkptEvery, "ckpt-every", 0, fmt.Sprintf("checkpoint every K steps, 0..%d (0: the preset's)", language.MaxSteps))
	fs.StringVar(&o.Kernel, "kernel", "softmax", "with -model gd or gdff: GD kernel: softmax, linear, rbf, exp or laplacian")
	fs.BoolVar(&o.DiagP, "diag-p", false, "with -model gd or gdff: diagonal head merges P_m (the paper's 8K attention parameters) instead of full d'×d' ones")
	fs.StringVar(&o.Dtype, "dtype", "float32", "float32 or float64")
	fs.BoolVar(&o.Xent32, "xent32", false, "with -dtype float32 and -device cpu: the loss's softmax in float32 arithmetic, as PyTorch's cross_entropy (faster; losses differ from the default's in the last digits)")
	fs.Uint64Var(&o.Seed, "seed", 1, "initialisation and minibatch seed")
	fs.Uint64Var(&o.DataSeed, "data-seed", 1, "seed of the train/validation/test split")
	fs.Float64Var(&o.ValidFrac, "valid-frac", 0, "fraction of the stories held out for validation, in [0, 1) (0: the preset's)")
	fs.Float64Var(&o.TestFrac, "test-frac", 0, "fraction of the stories held out for test, in [0, 1) (0: the preset's); with -valid-frac below 1 in all")
	fs.BoolVar(&o.NoEval, "no-eval", false, "skip the test evaluation after training (then -stories and the decoding flags do not apply)")
	fs.IntVar(&o.Stories, "stories", 200, fmt.Sprintf("test stories to continue in the evaluation, 1..%d (the paper: 200)", language.MaxStories))
	fs.StringVar(&o.Device, "device", "cpu", "where the graphs run: "+device.Names)
	dec := language.RegisterDecodeFlags(fs, data.DecodeBeam)
	set, err := parse(fs, args, dec.Rules(cli.Rules{
		"model": cli.OneOf("gd", "gdff", "gpt"), "preset": cli.OneOf(language.PresetNames...), "corpus": cli.NonEmpty,
		"split": cli.OneOf(language.SplitModes...), "books": cli.Optional(cli.List(cli.NonEmpty)), "out": cli.Any, "resume": cli.Any,
		"steps": cli.IntIn(0, language.MaxSteps), "batch": cli.IntIn(0, language.MaxBatch), "ckpt-every": cli.IntIn(0, language.MaxSteps),
		"kernel": cli.OneOf(layers.KernelNames()...), "diag-p": cli.Any, "dtype": cli.OneOf("float32", "float64"),
		"seed": cli.Any, "data-seed": cli.Any, "valid-frac": cli.Fraction, "test-frac": cli.Fraction, "no-eval": cli.Any,
		"stories": cli.IntIn(1, language.MaxStories), "device": cli.OneOf("cpu", "cuda", "emulator"), "xent32": cli.Any,
	}), "Trains a language model, checkpoints it and evaluates it on the test split.")
	if err != nil {
		return err
	}
	err = cli.First(
		cli.NotWith(set, o.Resume != "", "-resume", resumeIgnores...),
		cli.NotWith(set, o.NoEval, "-no-eval", append([]string{"stories"}, language.DecodeFlagNames...)...),
		cli.Needs(set, o.Model != "gpt", "-model gd or gdff", "kernel", "diag-p"),
		cli.Needs(set, !o.Xent32 || o.Dtype == "float32" && o.Device == "cpu", "-dtype float32 and -device cpu", "xent32"),
		dec.Check(set),
	)
	if err != nil {
		return err
	}
	o.Decode = dec.Config()
	return language.Train(o)
}

// cmdEvaluate evaluates a checkpoint on the test split of its corpus.
func cmdEvaluate(args []string) error {
	o := language.EvaluateOptions{Stdout: os.Stdout, Log: os.Stderr}
	fs := cli.NewFlagSet("evaluate")
	fs.StringVar(&o.Ckpt, "ckpt", "", "checkpoint directory (required)")
	fs.StringVar(&o.Corpus, "corpus", "", "corpus to read instead of the one the checkpoint was trained on")
	fs.IntVar(&o.Stories, "stories", 200, fmt.Sprintf("test stories to continue, 1..%d (the paper: 200)", language.MaxStories))
	fs.IntVar(&o.Examples, "examples", 2, fmt.Sprintf("generations to print, 0..%d", language.MaxStories))
	dec := language.RegisterDecodeFlags(fs, data.DecodeBeam)
	set, err := parse(fs, args, dec.Rules(cli.Rules{
		"ckpt": cli.Any, "corpus": cli.Any, "stories": cli.IntIn(1, language.MaxStories), "examples": cli.IntIn(0, language.MaxStories),
	}), "Evaluates a checkpoint on the test split of its corpus: perplexity and continuation metrics.")
	if err != nil {
		return err
	}
	if err := cli.First(cli.Required("ckpt", o.Ckpt), dec.Check(set)); err != nil {
		return err
	}
	o.Decode = dec.Config()
	return language.EvaluateCheckpoint(o)
}

// cmdGenerate continues a prompt with a checkpoint.
func cmdGenerate(args []string) error {
	o := language.GenerateOptions{Stdout: os.Stdout, Log: os.Stderr}
	fs := cli.NewFlagSet("generate")
	fs.StringVar(&o.Ckpt, "ckpt", "", "checkpoint directory (required)")
	fs.StringVar(&o.Prompt, "prompt", "Once upon a time", "text to continue (not empty)")
	fs.BoolVar(&o.AllowUnk, "allow-unk", false, "map prompt tokens outside a restricted vocabulary to <|unk|> instead of failing")
	dec := language.RegisterDecodeFlags(fs, data.DecodeGreedy)
	set, err := parse(fs, args, dec.Rules(cli.Rules{"ckpt": cli.Any, "prompt": cli.NonEmpty, "allow-unk": cli.Any}),
		"Continues a prompt with a checkpoint.")
	if err != nil {
		return err
	}
	if err := cli.First(cli.Required("ckpt", o.Ckpt), dec.Check(set)); err != nil {
		return err
	}
	o.Decode = dec.Config()
	return language.Generate(o)
}
