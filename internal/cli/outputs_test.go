package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/graph"
)

// TestNotInputs: an output that is an input (directly, through a symbolic
// link, or inside an input directory) is refused naming both flags; other
// outputs, missing paths and empty ones pass.
func TestNotInputs(t *testing.T) {
	dir := t.TempDir()
	x := filepath.Join(dir, "x.npy")
	ck := filepath.Join(dir, "ck")
	for _, p := range []string{x, filepath.Join(ck, "config.json")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("in"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link.npy")
	if err := os.Symlink(x, link); err != nil {
		t.Fatal(err)
	}
	ins := []Path{{"eval", ck}, {"x", x}, {"y", ""}, {"missing", filepath.Join(dir, "none")}}
	for _, c := range []struct {
		out, want string
	}{
		{x, "-pred: " + x + " is -x"},
		{link, "is -x"},
		{filepath.Join(dir, ".", "x.npy"), "is -x"},
		{ck, "is -eval"},
		{filepath.Join(ck, "config.json"), "lies inside -eval"},
		{filepath.Join(ck, "new.npy"), "lies inside -eval"},
		{filepath.Join(dir, "pred.npy"), ""},
		{"", ""},
	} {
		err := NotInputs([]Path{{"pred", c.out}}, ins...)
		var ue *UsageError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v, want nil", c.out, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ue)):
			t.Errorf("%q: %v, want a usage error with %q", c.out, err, c.want)
		}
	}
}

// TestOutCheckpointRefusesForeignDir: an existing directory that is neither
// empty nor a checkpoint is refused up front; an empty one, a checkpoint,
// and a missing path pass.
func TestOutCheckpointRefusesForeignDir(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "photos")
	if err := os.MkdirAll(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(foreign, "cat.jpg"), []byte("meow"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "ck")
	s, err := graph.NewScope(graph.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Param("w", []int{2}, graph.Normal(1)); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Save(ck, s, nil, checkpoint.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	err = OutCheckpoint("out", foreign)
	var ue *UsageError
	if err == nil || !strings.Contains(err.Error(), "-out: ") || !strings.Contains(err.Error(), "not a checkpoint") || !errors.As(err, &ue) {
		t.Errorf("a directory of photos: %v, want a usage error", err)
	}
	for _, p := range []string{empty, ck, filepath.Join(dir, "new")} {
		if err := OutCheckpoint("out", p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if err := OutCheckpoints("out", filepath.Join(dir, "new"), foreign); err == nil {
		t.Error("OutCheckpoints passed a directory of photos")
	}
}
