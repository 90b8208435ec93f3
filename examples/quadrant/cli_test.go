package main

import (
	"testing"

	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestCommandLine runs the quadrant binary on bad command lines: each must
// be refused before any training, with exit status 2 and one line on
// stderr naming the flag, never a stack trace.
func TestCommandLine(t *testing.T) {
	bin := clitest.Build(t, ".")
	a := func(s ...string) []string { return s }
	clitest.Run(t, bin, "quadrant", []clitest.Case{
		clitest.OK("help", a("-h"), "Usage: quadrant", "-kernels"),
		clitest.Usage("stray argument", a("-quick", "now"), `unexpected argument "now"`),
		clitest.Usage("unknown flag", a("-sweep", "all"), "-sweep"),
		clitest.Usage("unparsable float", a("-lr", "fast"), "-lr"),
		clitest.Usage("NaN lr", a("-lr", "NaN"), "-lr: NaN is not a finite positive number"),
		clitest.Usage("negative lr", a("-lr", "-1e-2"), "-lr"),
		clitest.Usage("Inf lr", a("-lr", "Inf"), "-lr"),
		clitest.Usage("zero seeds", a("-seeds", "0"), "-seeds"),
		clitest.Usage("negative L", a("-L", "-1"), "-L"),
		clitest.Usage("zero M", a("-M", "0"), "-M"),
		clitest.Usage("zero eval-M", a("-eval-M", "0"), "-eval-M"),
		clitest.Usage("huge N", a("-N", "1000000000"), "-N"),
		clitest.Usage("zero epochs", a("-epochs", "0"), "-epochs"),
		clitest.Usage("zero every", a("-every", "0"), "-every"),
		clitest.Usage("negative batch", a("-batch", "-32"), "-batch"),
		clitest.Usage("grid of one", a("-grid", "1"), "-grid"),
		clitest.Usage("huge grid", a("-grid", "100000"), "-grid"),
		clitest.Usage("context below -1", a("-context", "-2"), "-context"),
		clitest.Usage("context past M", a("-quick", "-context", "512"), "-context", "512"),
		clitest.Usage("unknown kernel", a("-kernels", "rbf,cosine"), "-kernels", "cosine"),
		clitest.Usage("empty kernel", a("-kernels", "rbf,"), "-kernels"),
		clitest.Usage("empty out", a("-out", ""), "-out"),
		clitest.Usage("bad bool", a("-quick=maybe"), "-quick"),
		clitest.Usage("partial without merge", a("-partial"), "-partial needs -merge"),
		clitest.Usage("plan with merge", a("-plan", "-merge"), "exclude each other"),
		clitest.Usage("bad shard", a("-shard", "3/3"), "-shard"),
		clitest.Usage("bad index", a("-index", "first"), "-index"),
		clitest.Usage("index past the plan", a("-quick", "-index", "8"), "-index 8", "0..7"),
		clitest.Usage("unknown scheduler", a("-submit", "pbs"), "-submit"),
		clitest.Usage("slurm option without submit", a("-parallel", "4"), "-parallel needs -submit"),
	})
}
