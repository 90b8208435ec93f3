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
	// -out whose tf checkpoint location is a directory of something else:
	// refused before the two models train, not after.
	photos := filepath.Join(filepath.Dir(file), "photos")
	if err := os.MkdirAll(filepath.Join(photos, "tf"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(photos, "tf", "cat.jpg"), []byte("meow"), 0o644); err != nil {
		t.Fatal(err)
	}
	clitest.Run(t, bin, "custom", []clitest.Case{
		clitest.Usage("out is a file", []string{"-out", file}, "-out", file),
		clitest.Usage("out/tf is not a checkpoint", []string{"-out", photos}, "-out", "not a checkpoint"),
	})
	if _, err := os.Stat(filepath.Join(photos, "gd")); err == nil {
		t.Error("the refused run saved the gd checkpoint")
	}
}
