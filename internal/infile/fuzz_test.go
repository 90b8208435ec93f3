package infile

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// FuzzReadFile opens fuzzed content as a regular file, a link to one, a
// directory or a FIFO without a writer, with a fuzzed limit: ReadFile must
// return (never block or panic); it succeeds exactly for a regular file (or
// a link to one) within the limit, with the file's bytes.
func FuzzReadFile(f *testing.F) {
	f.Add([]byte("hello"), uint8(0), int64(5))
	f.Add([]byte("hello"), uint8(0), int64(4))
	f.Add([]byte{}, uint8(1), int64(0))
	f.Add([]byte("x"), uint8(2), int64(100))
	f.Add([]byte("x"), uint8(3), int64(100))
	f.Add([]byte("x"), uint8(0), int64(-1))
	f.Fuzz(func(t *testing.T, content []byte, kind uint8, limit int64) {
		dir := t.TempDir()
		target := filepath.Join(dir, "target")
		path := target
		regular := true
		switch kind % 4 {
		case 0:
			if err := os.WriteFile(target, content, 0o644); err != nil {
				t.Fatal(err)
			}
		case 1:
			if err := os.WriteFile(target, content, 0o644); err != nil {
				t.Fatal(err)
			}
			path = filepath.Join(dir, "link")
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		case 2:
			regular = false
			if err := os.Mkdir(target, 0o755); err != nil {
				t.Fatal(err)
			}
		case 3:
			regular = false
			if err := syscall.Mkfifo(target, 0o644); err != nil {
				t.Skip(err)
			}
		}
		b, err := ReadFile(path, limit)
		want := regular && int64(len(content)) <= limit
		switch {
		case want && (err != nil || !bytes.Equal(b, content)):
			t.Fatalf("ReadFile(kind %d, %d bytes, limit %d): %q, %v; want the content", kind%4, len(content), limit, b, err)
		case !want && err == nil:
			t.Fatalf("ReadFile(kind %d, %d bytes, limit %d) accepted it", kind%4, len(content), limit)
		}
	})
}
