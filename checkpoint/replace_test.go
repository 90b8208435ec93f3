package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReadDuringSave: a save that replaces the checkpoint while Read is
// between config.json and the arrays must not give Read a mix of the two
// (config of one save, arrays of the other): Read returns the old or the
// new checkpoint, complete, or an error.
func TestReadDuringSave(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		name := "exchange"
		if fallback {
			name = "fallback renames"
		}
		t.Run(name, func(t *testing.T) { testReadDuringSave(t, fallback) })
	}
}

func testReadDuringSave(t *testing.T, fallback bool) {
	t.Cleanup(func() { readHook, ckptHooks.exchange = nil, nil })
	if fallback {
		ckptHooks.exchange = func(a, b string) (bool, error) { return false, nil }
	}
	dir := filepath.Join(t.TempDir(), "ckpt")
	oldScope, newScope := ckptScope(t, ckptSpec{seed: 1}), ckptScope(t, ckptSpec{seed: 2})
	if err := Save(dir, oldScope, modelConfig{D: 1}, SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	reads := 0
	readHook = func(stage string) {
		if stage != "config read" {
			return
		}
		if reads++; reads == 1 {
			if err := Save(dir, newScope, modelConfig{D: 2}, SaveOptions{}); err != nil {
				t.Errorf("concurrent save: %v", err)
			}
		}
	}
	c, err := Read(dir)
	readHook = nil
	if reads == 0 {
		t.Fatal("the hook never ran")
	}
	if err != nil {
		t.Fatalf("Read during a save: %v", err)
	}
	var cfg modelConfig
	if err := c.DecodeConfig(&cfg); err != nil {
		t.Fatal(err)
	}
	want := map[int]map[string][]float64{1: paramValues(t, oldScope), 2: paramValues(t, newScope)}[cfg.D]
	got := map[string][]float64{}
	for name, a := range c.Params {
		got[name] = a.Float64s()
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Read returned the config of save D=%d with other arrays (-that save +got):\n%s", cfg.D, diff)
	}
	// The save removed the old files under the reader, which started over.
	if cfg.D != 2 || reads != 2 {
		t.Errorf("read config D=%d after %d attempts, want D=2 after 2", cfg.D, reads)
	}
}

// TestSaveKeepsOthersFiles: a save removes only what it created. Siblings
// that merely look like a save's temporary names (a user's ckpt.old-best/)
// survive, and a directory that is not a checkpoint is not replaced.
func TestSaveKeepsOthersFiles(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "ckpt")
	mine := []string{filepath.Join(parent, "ckpt.old-best"), filepath.Join(parent, "ckpt.tmp-mine")}
	for _, d := range mine {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "notes.txt"), []byte("keep me"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for seed := uint64(1); seed <= 3; seed++ {
		if err := Save(dir, ckptScope(t, ckptSpec{seed: seed}), modelConfig{D: int(seed)}, SaveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range mine {
		if b, err := os.ReadFile(filepath.Join(d, "notes.txt")); err != nil || string(b) != "keep me" {
			t.Errorf("%s/notes.txt after three saves: %q, %v", d, b, err)
		}
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 3 {
		t.Errorf("parent holds %v, want ckpt and the two user directories", entries)
	}

	// A directory that is not a checkpoint is not replaced.
	other := filepath.Join(parent, "photos")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "cat.jpg"), []byte("meow"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Save(other, ckptScope(t, ckptSpec{seed: 1}), nil, SaveOptions{})
	if err == nil || !strings.Contains(err.Error(), "not a checkpoint") {
		t.Errorf("saving over a non-checkpoint directory: got %v, want a refusal", err)
	}
	if b, err := os.ReadFile(filepath.Join(other, "cat.jpg")); err != nil || string(b) != "meow" {
		t.Errorf("photos/cat.jpg after the refused save: %q, %v", b, err)
	}
}
