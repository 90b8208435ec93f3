package main

import (
	"testing"

	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestCommandLine runs the scaling binary on bad command lines: each must
// be refused before any measurement, with exit status 2 and one line on
// stderr naming the flag, never a stack trace.
func TestCommandLine(t *testing.T) {
	bin := clitest.Build(t, ".")
	a := func(s ...string) []string { return s }
	clitest.Run(t, bin, "scaling", []clitest.Case{
		clitest.OK("help", a("-h"), "Usage: scaling", "-clock"),
		clitest.Usage("stray argument", a("-quick", "N"), `unexpected argument "N"`),
		clitest.Usage("unknown flag", a("-N", "100"), "-N"),
		clitest.Usage("zero batch", a("-batch", "0"), "-batch"),
		clitest.Usage("huge batch", a("-batch", "100000000"), "-batch"),
		clitest.Usage("negative threads", a("-threads", "-2"), "-threads"),
		clitest.Usage("unknown dtype", a("-dtype", "int8"), "-dtype"),
		clitest.Usage("unknown clock", a("-clock", "gpu"), "-clock"),
		clitest.Usage("negative min-time", a("-min-time", "-1s"), "-min-time"),
		clitest.Usage("unparsable min-time", a("-min-time", "fast"), "-min-time"),
		clitest.Usage("empty out", a("-out", ""), "-out"),
	})
}
