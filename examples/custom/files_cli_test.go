package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestOutputFiles: -out is checked before any work starts.
func TestOutputFiles(t *testing.T) {
	bin := clitest.Build(t, ".")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	clitest.Run(t, bin, "custom", []clitest.Case{
		clitest.Usage("out is a file", []string{"-out", file}, "-out", file),
	})
}
