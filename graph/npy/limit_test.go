package npy

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestReadLimit(t *testing.T) {
	data := le64(1, 2, 3, 4, 5, 6)
	file := rawFile(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", data)
	dir := t.TempDir()
	path := filepath.Join(dir, "a.npy")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{6, 100} {
		if a, err := ReadLimit(bytes.NewReader(file), limit); err != nil || len(a.F64) != 6 {
			t.Errorf("ReadLimit(%d): %v, %v", limit, a, err)
		}
		if a, err := ReadFileLimit(path, limit); err != nil || len(a.F64) != 6 {
			t.Errorf("ReadFileLimit(%d): %v, %v", limit, a, err)
		}
	}
	for _, limit := range []int{0, 5} {
		_, err := ReadLimit(bytes.NewReader(file), limit)
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "shape [2 3] has 6 elements, more than the limit of "+fmt.Sprint(limit)) {
			t.Errorf("ReadLimit(%d): got %v, want ErrTooLarge naming the shape", limit, err)
		}
		if _, err := ReadFileLimit(path, limit); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), path) {
			t.Errorf("ReadFileLimit(%d): got %v, want ErrTooLarge naming the file", limit, err)
		}
	}
}

// TestReadHugeHeader reads headers that claim far more data than there is:
// a file is refused from its size before any data is read, and a reader
// allocates no more than about what it holds.
func TestReadHugeHeader(t *testing.T) {
	dir := t.TempDir()
	for _, shape := range []string{"(1073741824,)", "(1099511627776,)", "(65536, 65536, 64)"} {
		file := rawFile(1, "{'descr': '<f8', 'fortran_order': False, 'shape': "+shape+", }", le64(1, 2, 3))
		path := filepath.Join(dir, "huge.npy")
		if err := os.WriteFile(path, file, 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, errFile := ReadFile(path)
		_, errReader := Read(bytes.NewReader(file))
		runtime.ReadMemStats(&after)
		for _, err := range []error{errFile, errReader} {
			if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "bytes of data, got 24") {
				t.Errorf("shape %s: got %v, want ErrTruncated after the 24 bytes there are", shape, err)
			}
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
			t.Errorf("shape %s: reading 24 bytes of data allocated %d bytes", shape, alloc)
		}
	}
	// A header length past the end of the file.
	file := rawFile(2, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", le64(1))
	file[8], file[9], file[10], file[11] = 0xff, 0xff, 0xff, 0x7f
	path := filepath.Join(dir, "hlen.npy")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "want 2147483647 bytes of header") {
		t.Errorf("header length 2^31-1 in a %d-byte file: got %v", len(file), err)
	}
}
