package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestInputAndOutputFiles: -x and -y read only regular files (a FIFO with
// no writer or a device is refused at once), and -out, -probs, -results
// and -figures are checked before any work starts.
func TestInputAndOutputFiles(t *testing.T) {
	bin := clitest.Build(t, ".")
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "ck")
	if code, _, stderr := clitest.Exec(t, bin, "-L", "64", "-M", "64", "-epochs", "1", "-out", ck); code != 0 {
		t.Fatalf("making a checkpoint: exit %d: %s", code, stderr)
	}
	ents, err := os.ReadDir(ck)
	if err != nil || len(ents) == 0 {
		t.Fatalf("no checkpoint in %s: %v", ck, err)
	}
	ckpt := filepath.Join(ck, ents[0].Name())
	fifo := clitest.FIFO(t)
	a := func(s ...string) []string { return s }
	clitest.Run(t, bin, "synthetic", []clitest.Case{
		clitest.Usage("x fifo", a("-eval", ckpt, "-x", fifo, "-y", file), "named pipe"),
		clitest.Usage("x device", a("-eval", ckpt, "-x", "/dev/zero", "-y", file), "/dev/zero"),
		clitest.Usage("probs is a directory", a("-eval", ckpt, "-x", file, "-y", file, "-probs", dir), "-probs", dir),
		clitest.Usage("out is a file", a("-epochs", "1", "-out", file), "-out", file),
		clitest.Usage("results is a file", a("-sweep", "fig2", "-quick", "-results", file), "-results", file),
		clitest.Usage("figures is a file", a("-sweep", "fig2", "-quick", "-figures", file), "-figures", file),
	})
}
