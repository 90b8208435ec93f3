package synthetic

import (
	"path/filepath"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/internal/cli"
)

// Limits of the sizes a command line (or a checkpoint's config) may ask
// for: far above the paper's (N = 10, L <= 32768, K <= 6, d = 10, d' = 5,
// C = 25), low enough that a typo or a crafted config.json cannot hang the
// graph construction or exhaust memory.
const (
	MaxContexts = 1 << 20 // -L, -M, -Ls
	MaxN        = 4096    // -N
	MaxBlocks   = 64      // -blocks
	MaxEpochs   = 1 << 20 // -epochs
	MaxBatch    = 1 << 16 // -batch
	MaxSeeds    = 1000    // -seeds
	maxD        = 1024    // a checkpoint's d and d'
	maxC        = 1 << 16 // a checkpoint's categories
	maxHeads    = 64      // a checkpoint's heads
)

// CheckEvalInputs reads what -eval evaluates before any work starts: the
// checkpoint in dir, its config (every size within the limits) and the
// -x/-y contexts (their shapes fit the config). Every failure is a usage
// error naming the file.
func CheckEvalInputs(dir, xPath, yPath string) error {
	cfg, _, err := gd.LoadConfig(dir)
	if err != nil {
		return cli.Usage(err)
	}
	if err := checkSavedConfig(filepath.Join(dir, "config.json"), cfg); err != nil {
		return err
	}
	if _, err := readContexts(xPath, yPath, cfg); err != nil {
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
		cli.Check("gd.n", m.N, cli.IntIn(1, MaxN)),
		cli.Check("gd.blocks", m.Blocks, cli.IntIn(1, MaxBlocks)),
		cli.Check("gd.heads", m.Heads, cli.IntIn(1, maxHeads)),
	)
}

// CheckSetSizes refuses, before any work starts, a training or test set
// or minibatch of TrainBlocks whose contexts would exceed data.MaxElements
// (B×T×d inputs and B×T×C true probabilities, T = N+1).
func CheckSetSizes(o Options) error {
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

// BlockCheckpoints lists every checkpoint TrainBlocks will save (none
// without -out or with a bad -blocks, which TrainBlocks refuses).
func BlockCheckpoints(o Options) []string {
	blocks, err := ParseIntList("-blocks", o.Blocks)
	if err != nil || o.Out == "" {
		return nil
	}
	var dirs []string
	for _, K := range blocks {
		for s := 0; s < o.Seeds; s++ {
			dirs = append(dirs, BlockCheckpoint(o, K, o.Seed+uint64(s)))
		}
	}
	return dirs
}

// Check checks, before any work starts, what the resolved sweep will run
// and write: -index within its plan (or its environment variable set) and
// the results and figures directories. Every refusal is a usage error.
func (st *Setup) Check() error {
	p, err := st.Plan()
	if err != nil {
		return err
	}
	if _, err := st.exp.Indices(len(p.Runs)); err != nil { // -index past the plan, or -index env unset
		return cli.Usage(err)
	}
	return cli.First(cli.OutDir("results", st.resultsDir), cli.OutDir("figures", st.figDir))
}
