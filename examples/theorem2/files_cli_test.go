package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestInputAndOutputFiles: -replot reads only a regular file (a device or
// a FIFO with no writer is refused at once) with strict keys, and -out and
// -figdir are checked before any work starts.
func TestInputAndOutputFiles(t *testing.T) {
	bin := clitest.Build(t, ".")
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	unknown := filepath.Join(dir, "unknown.json")
	if err := os.WriteFile(unknown, []byte(`{"task": "uniform", "batch": 20, "contexts": 400, "kernels": [], "colour": "red"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	dup := filepath.Join(dir, "dup.json")
	if err := os.WriteFile(dup, []byte(`{"task": "uniform", "batch": 20, "batch": 30, "contexts": 400, "kernels": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	a := func(s ...string) []string { return s }
	clitest.Run(t, bin, "theorem2", []clitest.Case{
		clitest.Usage("replot device", a("-replot", "/dev/zero"), "-replot", "/dev/zero"),
		clitest.Usage("replot fifo", a("-replot", clitest.FIFO(t)), "-replot", "named pipe"),
		clitest.Usage("replot directory", a("-replot", dir), "-replot", "directory"),
		clitest.Usage("replot unknown key", a("-replot", unknown), "unknown.json", "colour"),
		clitest.Usage("replot duplicate key", a("-replot", dup), "dup.json", "batch"),
		clitest.Usage("out is a file", a("-quick", "-out", file), "-out", file),
		clitest.Usage("figdir is a file", a("-quick", "-figdir", file), "-figdir", file),
		clitest.Usage("out under a file", a("-quick", "-out", filepath.Join(file, "sub")), "-out", file),
	})
}
