package main

import (
	"testing"

	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestCommandLine runs the benchtab binary on bad command lines and bad
// input: exit status 2 and one line on stderr, never a stack trace.
func TestCommandLine(t *testing.T) {
	bin := clitest.Build(t, ".")
	a := func(s ...string) []string { return s }
	in := func(c clitest.Case, stdin string) clitest.Case { c.Stdin = stdin; return c }
	clitest.Run(t, bin, "benchtab", []clitest.Case{
		clitest.OK("help", a("-h"), "Usage: benchtab"),
		in(clitest.OK("table", a(), "| GDTrainStep | 4.6 |"), "BenchmarkGDTrainStep 100 4600000 ns/op\n"),
		clitest.Usage("stray argument", a("gotest.txt"), `unexpected argument "gotest.txt"`),
		clitest.Usage("unknown flag", a("-count", "3"), "-count"),
		clitest.Usage("no input", a(), "no benchmark results"),
		in(clitest.Usage("no results", a(), "no benchmark results"), "PASS\nok\n"),
		in(clitest.Usage("bad value", a(), "value", "4.6x"), "BenchmarkX 100 4.6x ns/op\n"),
	})
}
