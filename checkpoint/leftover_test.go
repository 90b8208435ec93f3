package checkpoint

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// leftoverEnv names the checkpoint directory the helper process saves to.
const leftoverEnv = "GDATTN_TEST_LEFTOVER_DIR"

// TestSaveLeftoverHelper is not a test: run by TestSaveRemovesLeftovers as
// a child process, it starts a save into $GDATTN_TEST_LEFTOVER_DIR that
// blocks once everything is written, just before the swap, until the
// parent kills it with SIGKILL.
func TestSaveLeftoverHelper(t *testing.T) {
	dir := os.Getenv(leftoverEnv)
	if dir == "" {
		t.Skip("helper process only")
	}
	ckptHooks.beforeSwap = func() { select {} }
	Save(dir, ckptScope(t, ckptSpec{seed: 5}), modelConfig{D: 5}, SaveOptions{})
}

// TestSaveRemovesLeftovers kills a process in the middle of a save (kill
// -9, as the issue did 300 times), then checks that the next save removes
// the copy it left, and nothing else: not a leftover whose writer is alive
// (this process), not a folder without the save marker, not a file Save
// does not write.
func TestSaveRemovesLeftovers(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "ckpt")
	if err := Save(dir, ckptScope(t, ckptSpec{seed: 1}), modelConfig{D: 8}, SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	leftovers := func() []string {
		m, _ := filepath.Glob(dir + ".tmp-*")
		slices.Sort(m)
		return m
	}
	var killed []string
	for i := 0; i < 2; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSaveLeftoverHelper$")
		cmd.Env = append(os.Environ(), leftoverEnv+"="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		var got string
		for got == "" && time.Now().Before(deadline) {
			for _, p := range leftovers() {
				if _, err := os.Stat(filepath.Join(p, configFile)); err == nil && !slices.Contains(killed, p) {
					got = p
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		cmd.Process.Kill() // SIGKILL
		cmd.Wait()
		if got == "" {
			t.Fatal("the helper process wrote no temporary checkpoint")
		}
		killed = append(killed, got)
	}
	// A file Save does not write, in the second leftover: it stays, and
	// so does its folder.
	foreignFile := filepath.Join(killed[1], "notes.txt")
	if err := os.WriteFile(foreignFile, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A folder with the right name but no marker: not provably a save's.
	unmarked := dir + ".tmp-unmarked"
	if err := os.Mkdir(unmarked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(unmarked, configFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A save in progress by a live process (this one).
	live := dir + ".tmp-live"
	if err := os.Mkdir(live, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeSaveMarker(live); err != nil {
		t.Fatal(err)
	}
	if err := Save(dir, ckptScope(t, ckptSpec{seed: 2}), modelConfig{D: 8}, SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(killed[0]); err == nil {
		t.Errorf("the killed save's %s is still there", killed[0])
	}
	if ents, err := os.ReadDir(killed[1]); err != nil || len(ents) != 1 || ents[0].Name() != "notes.txt" {
		t.Errorf("the leftover holding a foreign file: %v, %v; want exactly notes.txt kept", ents, err)
	}
	for _, p := range []string{filepath.Join(unmarked, configFile), filepath.Join(live, saveMarker)} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if _, err := Read(dir); err != nil {
		t.Errorf("the checkpoint after the cleanup: %v", err)
	}
	if ents, _ := os.ReadDir(dir); slices.ContainsFunc(ents, func(e os.DirEntry) bool { return e.Name() == saveMarker }) {
		t.Errorf("the saved checkpoint holds the save marker")
	}
}
