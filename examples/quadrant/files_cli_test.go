package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestOutputFiles: -out and -figdir are checked before any work starts.
func TestOutputFiles(t *testing.T) {
	bin := clitest.Build(t, ".")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := func(s ...string) []string { return s }
	clitest.Run(t, bin, "quadrant", []clitest.Case{
		clitest.Usage("figdir is a file", a("-quick", "-figdir", file), "-figdir", file),
		clitest.Usage("out is a file", a("-quick", "-out", file), "-out", file),
	})
}
