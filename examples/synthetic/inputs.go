package main

import (
	"path/filepath"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/examples/internal/synthetic"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/internal/cli"
)

// Limits of a checkpoint's model config besides maxN and maxBlocks: far
// above the synthetic task's (d = 10, d' = 5, C = 25), low enough that a
// crafted config.json cannot make the model's construction hang or exhaust
// memory before its parameters are checked against the saved ones.
const (
	maxD     = 1024    // d and d'
	maxC     = 1 << 16 // categories
	maxHeads = 64
)

// checkEvalInputs reads what -eval evaluates before any work starts: the
// checkpoint, its config (every size within the limits) and the -x/-y
// contexts (their shapes fit the config). Every failure is a usage error
// naming the file.
func checkEvalInputs(o options) error {
	cfg, _, err := gd.LoadConfig(o.evalDir)
	if err != nil {
		return cli.Usage(err)
	}
	if err := checkSavedConfig(filepath.Join(o.evalDir, "config.json"), cfg); err != nil {
		return err
	}
	if _, err := readContexts(o.xPath, o.yPath, cfg); err != nil {
		return cli.Usage(err)
	}
	return nil
}

// checkSavedConfig checks the sizes of the (validated) config of a GD
// checkpoint against this command's limits.
func checkSavedConfig(file string, m gd.Config) error {
	return cli.InFile(file,
		cli.Check("gd.d", m.D, cli.IntIn(1, maxD)),
		cli.Check("gd.d_prime", m.DPrime, cli.IntIn(1, maxD)),
		cli.Check("gd.c", m.C, cli.IntIn(2, maxC)),
		cli.Check("gd.n", m.N, cli.IntIn(1, maxN)),
		cli.Check("gd.blocks", m.Blocks, cli.IntIn(1, maxBlocks)),
		cli.Check("gd.heads", m.Heads, cli.IntIn(1, maxHeads)),
	)
}

// checkSetSizes refuses, before any work starts, a training or test set
// or minibatch whose contexts would exceed data.MaxElements (B×T×d inputs
// and B×T×C true probabilities, T = N+1).
func checkSetSizes(o options) error {
	cfg := data.DefaultSyntheticConfig()
	width := max(cfg.D, cfg.C)
	for _, f := range []struct {
		flag string
		n    int
	}{{"L", o.L}, {"M", o.M}, {"batch", o.Batch}} {
		if e := int64(f.n) * int64(o.N+1) * int64(width); e > data.MaxElements {
			return cli.Usagef("-%s %d with -N %d: %d contexts × %d positions × %d values = %d, over the limit of %d elements (data.MaxElements)",
				f.flag, f.n, o.N, f.n, o.N+1, width, e, int64(data.MaxElements))
		}
	}
	return nil
}

// blockCheckpoints lists every checkpoint the default mode will save.
func blockCheckpoints(o options) []string {
	blocks, err := synthetic.ParseIntList("-blocks", o.Blocks)
	if err != nil || o.Out == "" {
		return nil
	}
	var dirs []string
	for _, K := range blocks {
		for s := 0; s < o.Seeds; s++ {
			dirs = append(dirs, synthetic.BlockCheckpoint(o.Options, K, o.Seed+uint64(s)))
		}
	}
	return dirs
}
