package language

import (
	"flag"
	"fmt"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/internal/cli"
)

// Limits of the decoding flags.
const (
	maxNew   = 1 << 16 // -max-new
	maxBeams = 64      // -beams
	maxTopK  = 1 << 17 // -top-k
)

// DecodeFlags are the generation flags shared by evaluate and generate.
type DecodeFlags struct {
	strategy            string
	maxNew, beams, topK int
	temperature         float64
	seed                uint64
}

// DecodeFlagNames lists the flags of DecodeFlags.
var DecodeFlagNames = []string{"strategy", "max-new", "beams", "temperature", "top-k", "sample-seed"}

// RegisterDecodeFlags registers the generation flags on fs, with the
// default strategy.
func RegisterDecodeFlags(fs *flag.FlagSet, strategy string) *DecodeFlags {
	var o DecodeFlags
	fs.StringVar(&o.strategy, "strategy", strategy, "greedy, sample or beam")
	fs.IntVar(&o.maxNew, "max-new", 100, fmt.Sprintf("tokens to generate, 1..%d (the paper: 100)", maxNew))
	fs.IntVar(&o.beams, "beams", 3, fmt.Sprintf("with -strategy beam: beam width, 1..%d (the paper: 3)", maxBeams))
	fs.Float64Var(&o.temperature, "temperature", 1, "with -strategy sample: sampling temperature (finite, > 0)")
	fs.IntVar(&o.topK, "top-k", 0, "with -strategy sample: sample among the k most likely tokens (0: all)")
	fs.Uint64Var(&o.seed, "sample-seed", 1, "with -strategy sample: seed of the sampler")
	return &o
}

// Rules adds the rules of the decoding flags to r.
func (o *DecodeFlags) Rules(r cli.Rules) cli.Rules {
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

// Check refuses the decoding flags the strategy does not use.
func (o *DecodeFlags) Check(set cli.Set) error {
	return cli.First(
		cli.Needs(set, o.strategy == data.DecodeBeam, "-strategy beam", "beams"),
		cli.Needs(set, o.strategy == data.DecodeSample, "-strategy sample", "temperature", "top-k", "sample-seed"),
	)
}

// Config is the decoding configuration of the flags.
func (o *DecodeFlags) Config() data.DecodeConfig {
	return data.DecodeConfig{Strategy: o.strategy, MaxNew: o.maxNew, Beams: o.beams, Temperature: o.temperature, TopK: o.topK, Seed: o.seed}
}
