package main

import (
	"testing"

	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestCommandLine runs the custom binary on bad command lines: each must be
// refused before any training, with exit status 2 and one line on stderr
// naming the flag, never a stack trace.
func TestCommandLine(t *testing.T) {
	bin := clitest.Build(t, ".")
	cases := []clitest.Case{
		clitest.OK("help", []string{"-h"}, "Usage: custom", "-out", "-seed"),
		clitest.Usage("stray argument", []string{"train"}, `unexpected argument "train"`),
		clitest.Usage("unknown flag", []string{"-epochs", "3"}, "-epochs"),
		clitest.Usage("empty out", []string{"-out", ""}, "-out"),
		clitest.Usage("unparsable seed", []string{"-seed", "one"}, "-seed"),
		clitest.Usage("negative seed", []string{"-seed", "-1"}, "-seed"),
		clitest.Usage("seed beyond uint64", []string{"-seed", "18446744073709551616"}, "-seed"),
		clitest.Usage("flag without value", []string{"-out"}, "-out"),
	}
	clitest.Run(t, bin, "custom", cases)
}
