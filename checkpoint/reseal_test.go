package checkpoint

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReseal: a hand-edited config.json and a rewritten array are refused by
// Read until Reseal recomputes the checksums; then Read returns the edits.
func TestReseal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ckpt")
	s := ckptScope(t, ckptSpec{seed: 1})
	if err := Save(dir, s, modelConfig{D: 8, Kernel: "softmax", Scale: 1}, SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	replaceInFile(t, filepath.Join(dir, "config.json"), `"kernel": "softmax"`, `"kernel": "rbf"`)
	flipBit(t, filepath.Join(dir, "a.npy"), -1, 3)
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("Read of an edited checkpoint: %v, want a checksum error", err)
	}
	if err := Reseal(dir); err != nil {
		t.Fatal(err)
	}
	c, err := Read(dir)
	if err != nil {
		t.Fatalf("Read after Reseal: %v", err)
	}
	var got modelConfig
	if err := c.DecodeConfig(&got); err != nil {
		t.Fatal(err)
	}
	if got.Kernel != "rbf" {
		t.Fatalf("config kernel %q after the edit, want rbf", got.Kernel)
	}
	// A resealed directory is an ordinary checkpoint: a second reseal
	// changes nothing and a corrupt file is caught again.
	if err := Reseal(dir); err != nil {
		t.Fatal(err)
	}
	flipBit(t, filepath.Join(dir, "lin__w.npy"), -1, 0)
	if _, err := Read(dir); err == nil {
		t.Fatal("Read of a corrupted, resealed checkpoint: no error")
	}
	if err := Reseal(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("Reseal of a missing directory: no error")
	}
}
