package checkpoint

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdattn/gdattn/graph/npy"
)

// TestReadSizeCaps: every file Read reads is bounded before it is read —
// config.json by MaxConfigSize, each array by the bytes its manifest entry
// implies — and a larger file is an error naming it, whatever it holds
// (here: valid JSON padded with whitespace, an array followed by bytes,
// and sparse files of 1 TiB that must not be read at all).
func TestReadSizeCaps(t *testing.T) {
	grow := func(t *testing.T, path string, extra []byte) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(extra); err != nil {
			t.Fatal(err)
		}
	}
	sparse := func(t *testing.T, path string) {
		t.Helper()
		if err := os.Truncate(path, 1<<40); err != nil {
			t.Skipf("no sparse files here: %v", err)
		}
	}
	for _, tc := range []struct {
		name   string
		file   string
		break_ func(t *testing.T, path string)
	}{
		{"config padded", "config.json", func(t *testing.T, p string) { grow(t, p, bytes.Repeat([]byte(" "), MaxConfigSize)) }},
		{"config sparse", "config.json", sparse},
		{"array padded", "lin__w.npy", func(t *testing.T, p string) { grow(t, p, make([]byte, 1<<20)) }},
		{"array sparse", "lin__w.npy", sparse},
		{"moment sparse", "optim/m/lin__w.npy", sparse},
		{"extra sparse", "extra/perm.npy", sparse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ckpt")
			optim := &OptimState{Step: 1, M: map[string][]float64{"lin/w": make([]float64, 6)}, V: map[string][]float64{"lin/w": make([]float64, 6)}}
			extra := map[string]*npy.Array{"perm": {Shape: []int{3}, Dtype: npy.Int64, I64: []int64{2, 0, 1}}}
			if err := Save(dir, ckptScope(t, ckptSpec{seed: 1}), modelConfig{D: 8}, SaveOptions{Optim: optim, Extra: extra}); err != nil {
				t.Fatal(err)
			}
			tc.break_(t, filepath.Join(dir, filepath.FromSlash(tc.file)))
			start := time.Now()
			_, err := Read(dir)
			if err == nil || !strings.Contains(err.Error(), filepath.Base(tc.file)) || !strings.Contains(err.Error(), "bytes, more than") {
				t.Fatalf("Read: %v; want an error naming %s and its size cap", err, tc.file)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Read took %v: it read the file instead of refusing it by its size", d)
			}
			if err := Reseal(dir); err == nil || !strings.Contains(err.Error(), "bytes, more than") {
				t.Errorf("Reseal: %v; want the size cap", err)
			}
		})
	}
}
