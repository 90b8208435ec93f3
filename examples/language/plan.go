package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/gdattn/gdattn/examples/internal/device"
	"github.com/gdattn/gdattn/examples/internal/language"
	"github.com/gdattn/gdattn/experiment"
	"github.com/gdattn/gdattn/internal/cli"
)

const maxSeeds = 1000

// cmdPlan runs the plan of RESULTS.md's tables (package experiment's flags).
func cmdPlan(args []string) error {
	var o language.SweepOptions
	var exp experiment.Flags
	fs := cli.NewFlagSet("language")
	fs.StringVar(&o.Preset, "preset", "small", "model and training sizes of every run: "+strings.Join(language.PresetNames, ", ")+" (RESULTS.md: small)")
	fs.StringVar(&o.Variants, "variants", "", "comma-separated models to run (empty: all): "+strings.Join(language.VariantNames(), ", "))
	fs.StringVar(&o.Corpora, "corpora", "", "comma-separated corpora (empty: both): "+strings.Join(language.CorpusNames(), ", "))
	fs.IntVar(&o.Seeds, "seeds", 1, fmt.Sprintf("model seeds -seed, -seed+1, ..., 1..%d", maxSeeds))
	fs.Uint64Var(&o.Seed, "seed", 1, "first initialisation and minibatch seed")
	fs.Uint64Var(&o.DataSeed, "data-seed", 1, "seed of the train/validation/test split")
	fs.StringVar(&o.Dtype, "dtype", "float32", "float32 or float64")
	fs.IntVar(&o.Steps, "steps", 0, fmt.Sprintf("training steps of every run, 0..%d (0: the preset's)", language.MaxSteps))
	fs.IntVar(&o.Stories, "stories", 200, fmt.Sprintf("test stories to continue in each evaluation, 1..%d (the paper: 200)", language.MaxStories))
	fs.StringVar(&o.TinyStories, "tinystories", defaultCorpus, "the TinyStories file")
	fs.StringVar(&o.Gutenberg, "gutenberg", "", "the directory of scripts/fetch-gutenberg.sh, for the second corpus (default: its cache, "+language.GutenbergCache()+")")
	fs.StringVar(&o.Results, "results", "", "directory of the run files and the tables, shared by the workers (default results/language-<preset>)")
	fs.StringVar(&o.Ckpt, "ckpt", "", "directory for a checkpoint of each run (empty: none)")
	fs.StringVar(&o.Device, "device", "cpu", "where the graphs run: "+device.Names)
	fs.BoolVar(&o.Quiet, "quiet", false, "no progress output")
	exp.Register(fs) // -plan, -index, -shard, -merge, -submit, ... (package experiment)
	if err := cli.Parse(fs, args, func(w io.Writer) { usage(w); fmt.Fprint(w, "\nFlags of the plan:\n"); cli.PrintDefaults(fs, w) }); err != nil {
		if rest := fs.Args(); len(rest) > 0 && slices.Contains(commands, rest[0]) {
			return cli.Usagef("the command %q comes first: language %s [flags]", rest[0], rest[0])
		}
		return err
	}
	set := cli.Given(fs)
	rules := cli.Rules{
		"preset": cli.OneOf(language.PresetNames...), "variants": cli.Optional(cli.List(cli.OneOf(language.VariantNames()...))),
		"corpora": cli.Optional(cli.List(cli.OneOf(language.CorpusNames()...))), "seeds": cli.IntIn(1, maxSeeds),
		"seed": cli.Any, "data-seed": cli.Any, "dtype": cli.OneOf("float32", "float64"), "steps": cli.IntIn(0, language.MaxSteps),
		"stories": cli.IntIn(1, language.MaxStories), "tinystories": cli.NonEmpty, "gutenberg": cli.Any, "results": cli.Any,
		"ckpt": cli.Any, "device": cli.OneOf("cpu", "cuda", "emulator"), "quiet": cli.Any,
	}
	for _, n := range experiment.FlagNames { // experiment.Flags.Check checks these
		rules[n] = cli.Any
	}
	if err := cli.Validate(fs, rules); err != nil {
		return err
	}
	if err := exp.Check(set); err != nil {
		return cli.Usage(err)
	}
	if o.Device == "cuda" && exp.Submit != "" {
		exp.Slurm.GPU = true
	}
	sw, err := language.NewSweep(o)
	if err != nil {
		return cli.Usage(err)
	}
	if _, err := exp.Indices(len(sw.Plan.Runs)); err != nil { // -index past the plan, or -index env unset
		return cli.Usage(err)
	}
	return sw.Run(exp, fs, os.Stdout)
}
