// Command language trains, evaluates and samples the language models of
// Section 5.3 of the paper: the GD model (one step of functional GD with
// positional covariates, Appendix G), GD with a feed-forward block, and a
// one-layer GPT-2-style Transformer.
//
//	go run ./examples/language train -model gd -preset small -out ckpt/gd
//	go run ./examples/language train -resume ckpt/gd -steps 3000
//	go run ./examples/language evaluate -ckpt ckpt/gd
//	go run ./examples/language generate -ckpt ckpt/gd -prompt "Once upon a time" -strategy sample -top-k 20
//
// The corpus defaults to the shared TinyStories file; any plain-text file
// (stories separated by blank lines or <|endoftext|>) or the directory
// written by scripts/fetch-gutenberg.sh works. See RESULTS.md.
package main

import (
	"flag"
	"fmt"
	"os"
)

const defaultCorpus = "../shared/data/tinystories/tinystories.txt"

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "train":
		err = cmdTrain(os.Args[2:])
	case "evaluate":
		err = cmdEvaluate(os.Args[2:])
	case "generate":
		err = cmdGenerate(os.Args[2:])
	case "-h", "-help", "--help", "help":
		usage()
		return
	default:
		usage()
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "language:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintf(os.Stderr, `Usage: language <command> [flags]

Commands:
  train      train a model (-model gd|gdff|gpt, -preset small|paper|tiny), checkpoint it, evaluate it
  evaluate   evaluate a checkpoint on the test split (perplexity, continuation metrics)
  generate   continue a prompt with a checkpoint

Run "language <command> -h" for the flags of a command.
`)
}

// decodeFlags registers the generation flags shared by evaluate and generate.
func decodeFlags(fs *flag.FlagSet, strategy string) *decodeOpts {
	var o decodeOpts
	fs.StringVar(&o.strategy, "strategy", strategy, "greedy, sample or beam")
	fs.IntVar(&o.maxNew, "max-new", 100, "tokens to generate (the paper: 100)")
	fs.IntVar(&o.beams, "beams", 3, "beam width (the paper: 3)")
	fs.Float64Var(&o.temperature, "temperature", 1, "sampling temperature")
	fs.IntVar(&o.topK, "top-k", 0, "sample among the k most likely tokens (0: all)")
	fs.Uint64Var(&o.seed, "sample-seed", 1, "seed of the sampler")
	return &o
}

type decodeOpts struct {
	strategy            string
	maxNew, beams, topK int
	temperature         float64
	seed                uint64
}
