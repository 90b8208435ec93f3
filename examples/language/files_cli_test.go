package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestInputAndOutputFiles: -corpus reads only regular files (a device or a
// FIFO with no writer is refused at once), -out is checked before any
// training, and resuming a checkpoint already at -steps is refused instead
// of exiting 0 with nothing written.
func TestInputAndOutputFiles(t *testing.T) {
	bin := clitest.Build(t, ".")
	dir := t.TempDir()
	corpus := writeCorpus(t)
	ck := filepath.Join(dir, "ckpt")
	if code, _, stderr := clitest.Exec(t, bin, "train", "-preset", "tiny", "-corpus", corpus, "-out", ck, "-steps", "2", "-no-eval"); code != 0 {
		t.Fatalf("making the checkpoint: exit %d: %s", code, stderr)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := clitest.FIFO(t)
	a := func(s ...string) []string { return s }
	clitest.Run(t, bin, "language", []clitest.Case{
		clitest.Usage("train: corpus device", a("train", "-preset", "tiny", "-corpus", "/dev/zero"), "/dev/zero", "character device"),
		clitest.Usage("train: corpus fifo", a("train", "-preset", "tiny", "-corpus", fifo), fifo, "named pipe"),
		clitest.Usage("evaluate: corpus device", a("evaluate", "-ckpt", ck, "-corpus", "/dev/zero"), "/dev/zero"),
		clitest.Usage("evaluate: corpus fifo", a("evaluate", "-ckpt", ck, "-corpus", fifo), "named pipe"),
		clitest.Usage("train: out is a file", a("train", "-preset", "tiny", "-corpus", corpus, "-out", file), "-out", file),
		clitest.Usage("resume: out is a file", a("train", "-resume", ck, "-steps", "4", "-out", file), "-out", file),
		clitest.Usage("resume past steps", a("train", "-resume", ck, "-steps", "2", "-out", filepath.Join(dir, "new")), "-steps", "step 2"),
		clitest.Usage("resume before steps", a("train", "-resume", ck, "-steps", "1", "-out", filepath.Join(dir, "new")), "-steps", "step 2"),
	})
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Errorf("a refused resume wrote %s", filepath.Join(dir, "new"))
	}
}
