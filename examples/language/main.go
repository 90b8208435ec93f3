// Command language trains, evaluates and samples the language models of
// Section 5.3 of the paper: the GD model (one step of functional GD with
// positional covariates, Appendix H), GD with a feed-forward block, and a
// one-layer GPT-2-style Transformer.
//
//	go run ./examples/language train -model gd -preset small -out ckpt/gd
//	go run ./examples/language train -resume ckpt/gd -steps 3000
//	go run ./examples/language evaluate -ckpt ckpt/gd
//	go run ./examples/language generate -ckpt ckpt/gd -prompt "Once upon a time" -strategy sample -top-k 20
//
// It is a thin command line over the library: train.LMTrainer trains (and
// resumes), train.Generator generates, and its checkpoints are the models'
// own (gd.LoadLM and tf.LoadGPT load them, text codec included).
//
// The corpus defaults to the shared TinyStories file; any plain-text file
// (stories separated by blank lines or <|endoftext|>) or the directory
// written by scripts/fetch-gutenberg.sh works. See RESULTS.md.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/internal/cli"
)

const defaultCorpus = "../shared/data/tinystories/tinystories.txt"

var commands = []string{"train", "evaluate", "generate"}

func main() { cli.Main("language", func() error { return command(os.Args[1:]) }) }

// command runs the subcommand args[0] with the flags args[1:]. Its errors
// are prefixed with the subcommand's name.
func command(args []string) error {
	if len(args) == 0 {
		return cli.Usagef("no command (want %s; -h for usage)", cli.Alternatives(commands))
	}
	var run func([]string) error
	switch args[0] {
	case "train":
		run = cmdTrain
	case "evaluate":
		run = cmdEvaluate
	case "generate":
		run = cmdGenerate
	case "-h", "-help", "--help", "help":
		if len(args) > 1 {
			return cli.Usagef("unexpected argument %q after %s", args[1], args[0])
		}
		usage(os.Stdout)
		return nil
	default:
		return cli.Usagef("unknown command %q (want %s; -h for usage)", args[0], cli.Alternatives(commands))
	}
	if err := run(args[1:]); err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	return nil
}

func usage(w io.Writer) {
	fmt.Fprintf(w, `Usage: language <command> [flags]

Commands:
  train      train a model (-model gd|gdff|gpt, -preset small|paper|tiny), checkpoint it, evaluate it
  evaluate   evaluate a checkpoint on the test split (perplexity, continuation metrics)
  generate   continue a prompt with a checkpoint

Run "language <command> -h" for the flags of a command. A flag that does not apply to what
the command line asks for (e.g. -kernel with -resume, -beams with -strategy sample) is
refused. Exit status: 0 done, 2 bad command line or input (one line on stderr, before any
work; an unreadable corpus or checkpoint too), 1 a failure during the run.
`)
}

// Limits of the decoding flags.
const (
	maxNew   = 1 << 16 // -max-new
	maxBeams = 64      // -beams
	maxTopK  = 1 << 17 // -top-k
)

// decodeFlags registers the generation flags shared by evaluate and generate.
func decodeFlags(fs *flag.FlagSet, strategy string) *decodeOpts {
	var o decodeOpts
	fs.StringVar(&o.strategy, "strategy", strategy, "greedy, sample or beam")
	fs.IntVar(&o.maxNew, "max-new", 100, fmt.Sprintf("tokens to generate, 1..%d (the paper: 100)", maxNew))
	fs.IntVar(&o.beams, "beams", 3, fmt.Sprintf("with -strategy beam: beam width, 1..%d (the paper: 3)", maxBeams))
	fs.Float64Var(&o.temperature, "temperature", 1, "with -strategy sample: sampling temperature (finite, > 0)")
	fs.IntVar(&o.topK, "top-k", 0, "with -strategy sample: sample among the k most likely tokens (0: all)")
	fs.Uint64Var(&o.seed, "sample-seed", 1, "with -strategy sample: seed of the sampler")
	return &o
}

// decodeFlagNames lists the flags of decodeFlags.
var decodeFlagNames = []string{"strategy", "max-new", "beams", "temperature", "top-k", "sample-seed"}

// decodeRules adds the rules of decodeFlags' flags to r.
func decodeRules(r cli.Rules) cli.Rules {
	r["strategy"] = strategyRule
	r["max-new"] = cli.IntIn(1, maxNew)
	r["beams"] = cli.IntIn(1, maxBeams)
	r["temperature"] = cli.Positive
	r["top-k"] = cli.IntIn(0, maxTopK)
	r["sample-seed"] = cli.Any
	return r
}

// strategyRule accepts the decoding strategies of data.Generate.
func strategyRule(name string, v any) error {
	s := v.(string)
	if s != data.DecodeGreedy && s != data.DecodeSample && s != data.DecodeBeam {
		return fmt.Errorf("%s: unknown strategy %q (want greedy, sample or beam)", name, s)
	}
	return nil
}

// check refuses the decoding flags the strategy does not use.
func (o *decodeOpts) check(set cli.Set) error {
	return cli.First(
		cli.Needs(set, o.strategy == data.DecodeBeam, "-strategy beam", "beams"),
		cli.Needs(set, o.strategy == data.DecodeSample, "-strategy sample", "temperature", "top-k", "sample-seed"),
	)
}

type decodeOpts struct {
	strategy            string
	maxNew, beams, topK int
	temperature         float64
	seed                uint64
}
