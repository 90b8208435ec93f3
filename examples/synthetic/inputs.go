package main

import (
	"path/filepath"

	"github.com/gdattn/gdattn/checkpoint"
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
	ck, err := checkpoint.Read(o.evalDir)
	if err != nil {
		return cli.Usage(err)
	}
	var sc savedConfig
	if err := ck.DecodeConfig(&sc); err != nil {
		return cli.Usage(err)
	}
	if err := checkSavedConfig(filepath.Join(o.evalDir, "config.json"), sc); err != nil {
		return err
	}
	if _, err := readContexts(o.xPath, o.yPath, sc.Model); err != nil {
		return cli.Usage(err)
	}
	return nil
}

// checkSavedConfig checks the config of a checkpoint written by train.
func checkSavedConfig(file string, sc savedConfig) error {
	m, err := sc.Model.Validate()
	if err != nil {
		return cli.InFile(file, err)
	}
	return cli.InFile(file,
		cli.Check("model.D", m.D, cli.IntIn(1, maxD)),
		cli.Check("model.DPrime", m.DPrime, cli.IntIn(1, maxD)),
		cli.Check("model.C", m.C, cli.IntIn(2, maxC)),
		cli.Check("model.N", m.N, cli.IntIn(1, maxN)),
		cli.Check("model.Blocks", m.Blocks, cli.IntIn(1, maxBlocks)),
		cli.Check("model.Heads", m.Heads, cli.IntIn(1, maxHeads)),
		cli.Check("dtype", sc.Dtype, cli.OneOf("float32", "float64")),
	)
}
