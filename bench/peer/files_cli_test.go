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
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	clitest.Run(t, bin, "peer", []clitest.Case{
		clitest.Usage("out is unusable", []string{"-out", dir}, "-out"),
		clitest.Usage("out is the peer script", []string{"-peer", file, "-out", file}, "-out", "is -peer"),
	})
}
