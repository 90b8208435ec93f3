package data

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestReadCorpora(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	b := filepath.Join(dir, "b.txt")
	if err := os.WriteFile(a, []byte("one story<|endoftext|>two story"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("three story"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := CorpusConfig{Split: SplitEOT}
	got, err := ReadCorpora(a+","+b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sa, _ := ReadCorpus(a, cfg)
	sb, _ := ReadCorpus(b, cfg)
	if want := append(sa, sb...); !slices.Equal(got, want) {
		t.Fatalf("ReadCorpora = %q, want %q", got, want)
	}
	one, err := ReadCorpora(a, cfg)
	if err != nil || !slices.Equal(one, sa) {
		t.Fatalf("single path: %q, %v; want %q", one, err, sa)
	}
	for _, bad := range []string{"", a + ",", a + "," + a, a + "," + filepath.Join(dir, "missing.txt")} {
		if _, err := ReadCorpora(bad, cfg); err == nil {
			t.Errorf("ReadCorpora(%q): no error", bad)
		}
	}
}
