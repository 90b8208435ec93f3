package checkpoint

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// FuzzLeftovers gives a sibling of a checkpoint a fuzzed name (after
// "ckpt.tmp-" or "ckpt.old-", or any) holding a save's files and a foreign
// one, then saves: the save must succeed, keep the foreign file, and
// remove the sibling only when its name is a tag whose writer is provably
// dead; parsing a name never panics and a fresh tag always parses as this
// process's.
func FuzzLeftovers(f *testing.F) {
	tag, err := saveTag()
	if err != nil {
		f.Fatal(err)
	}
	f.Add("tmp-"+tag, false)
	f.Add("old-"+tag, true)
	f.Add("tmp-g999999999-1-0123456789abcdef0123456789abcdef-0123456789abcdef", false)
	f.Add("tmp-g1-0--0123456789abcdef", true)
	f.Add("tmp-g"+strconv.Itoa(os.Getpid())+"--"+"-0000000000000000", false)
	f.Add("old-best", true)
	f.Add("tmp-", false)
	f.Fuzz(func(t *testing.T, suffix string, foreign bool) {
		if m, ok := parseTag(tag); !ok || m.PID != os.Getpid() || writerDead(m) {
			t.Fatalf("a fresh tag %q parses as %+v, %v", tag, m, ok)
		}
		m, isTag := parseTag(suffix[min(len(suffix), 4):])
		name := "ckpt." + suffix
		if !filepath.IsLocal(name) || filepath.Base(name) != name || len(name) > 200 {
			return
		}
		parent := t.TempDir()
		dir := filepath.Join(parent, "ckpt")
		sib := filepath.Join(parent, name)
		if sib == dir {
			return
		}
		if err := os.Mkdir(sib, 0o755); err != nil {
			return // a name the file system refuses
		}
		for _, p := range []string{configFile, "lin__w.npy"} {
			if err := os.WriteFile(filepath.Join(sib, p), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if foreign {
			if err := os.WriteFile(filepath.Join(sib, "notes.txt"), []byte("mine"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := Save(dir, ckptScope(t, ckptSpec{seed: 1}), modelConfig{D: 1}, SaveOptions{}); err != nil {
			t.Fatal(err)
		}
		_, statErr := os.Stat(sib)
		removed := os.IsNotExist(statErr)
		prefixed := len(suffix) >= 4 && (suffix[:4] == "tmp-" || suffix[:4] == "old-")
		provable := prefixed && isTag && writerDead(m)
		switch {
		case removed && (!provable || foreign):
			t.Errorf("%s removed (tag %v, dead %v, foreign file %v)", name, isTag, provable, foreign)
		case !removed && provable && !foreign:
			t.Errorf("%s, a dead writer's leftover, kept", name)
		}
		if foreign {
			if b, err := os.ReadFile(filepath.Join(sib, "notes.txt")); err != nil || string(b) != "mine" {
				t.Errorf("the foreign file in %s: %q, %v", name, b, err)
			}
		}
		if _, err := Read(dir); err != nil {
			t.Error(err)
		}
	})
}
