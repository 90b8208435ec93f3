package infile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpen: a regular file (or a link to one) within the limit is read; a
// directory, a device (/dev/zero), a named pipe without a writer and a file
// over the limit (a sparse 1 TiB one included) are errors naming the path,
// returned at once.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(regular, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{regular, link} {
		if b, err := ReadFile(p, 5); err != nil || string(b) != "hello" {
			t.Errorf("ReadFile(%s): %q, %v", p, b, err)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse")
	if err := os.WriteFile(sparse, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, 1<<40); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{dir, "a directory"},
		{"/dev/zero", "a character device"},
		{fifo, "a named pipe"},
		{filepath.Join(dir, "none"), "no such file"},
		{regular + "/x", "not a directory"},
		{sparse, "1099511627776 bytes, more than the limit of 4096"},
	} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(tc.path, 4096); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadFile(%s): %v, want an error naming it and %q", tc.path, err, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("ReadFile(%s) blocked", tc.path)
		}
	}
	if _, err := ReadFile(regular, 4); err == nil || !strings.Contains(err.Error(), "5 bytes, more than the limit of 4") {
		t.Errorf("a file over the limit: %v", err)
	}
}
