// Command language trains, evaluates and samples the language models of
// Section 5.3 of the paper (GD, GD + feed-forward, a one-layer GPT), and
// runs the tables of its RESULTS.md as a plan of independent runs:
//
//	go run ./examples/language train -model gd -preset small -out ckpt/gd
//	go run ./examples/language evaluate -ckpt ckpt/gd
//	go run ./examples/language generate -ckpt ckpt/gd -prompt "Once upon a time" -strategy sample -top-k 20
//	go run ./examples/language -plan     # then -index i, -shard i/n, -merge, -submit slurm
//
// It wires flags to package examples/internal/language, which holds the
// commands, the plan and its tables. See RESULTS.md and docs/cluster.md.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

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
	case "-h", "-help", "--help", "help":
		if len(args) > 1 {
			return cli.Usagef("unexpected argument %q after %s", args[1], args[0])
		}
		usage(os.Stdout)
		return nil
	case "train":
		run = cmdTrain
	case "evaluate":
		run = cmdEvaluate
	case "generate":
		run = cmdGenerate
	default:
		if strings.HasPrefix(args[0], "-") {
			return cmdPlan(args) // the plan of Appendix K: -plan, -index, -shard, -merge, -submit
		}
		return cli.Usagef("unknown command %q (want %s; -h for usage)", args[0], cli.Alternatives(commands))
	}
	if err := run(args[1:]); err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	return nil
}

func usage(w io.Writer) {
	fmt.Fprintf(w, `Usage: language <command> [flags]
       language [plan flags] [-plan | -index i | -shard i/n | -merge [-partial] | -submit slurm]

Commands:
  train      train a model (-model gd|gdff|gpt, -preset small|paper|tiny), checkpoint it, evaluate it
  evaluate   evaluate a checkpoint on the test split (perplexity, continuation metrics)
  generate   continue a prompt with a checkpoint

Without a command, the flags run the tables of RESULTS.md (Section 5.3 and Appendix K: GD,
GD + FF and GPT, the diagonal-P_m ablation, the kernels, the second corpus) as a plan of
independent runs (package experiment; docs/cluster.md): -plan lists them with their CPU-time
estimates, -index i and -shard i/n run some of them on any number of machines sharing
-results, each into its own result file, -merge (-partial) writes the tables (language.md,
.json, .csv), -submit slurm submits the missing runs as a Slurm job array; no mode flag runs
every missing run and merges. "language -plan -h" lists the plan's flags.

Run "language <command> -h" for the flags of a command. A flag that does not apply to what
the command line asks for (e.g. -kernel with -resume, -beams with -strategy sample) is
refused. Exit status: 0 done, 2 bad command line or input (one line on stderr, before any
work; an unreadable corpus or checkpoint too), 1 a failure during the run.
`)
}
