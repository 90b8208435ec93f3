//go:build unix

package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadFIFO: a FIFO in place of an array file is an error, not a read
// that blocks forever waiting for a writer.
func TestReadFIFO(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ckpt")
	if err := Save(dir, ckptScope(t, ckptSpec{seed: 1}), modelConfig{D: 8}, SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "lin__b.npy")
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Read(dir); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "lin__b.npy") || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("got %v, want an error naming lin__b.npy as not a regular file", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read blocked on a FIFO")
	}
}
