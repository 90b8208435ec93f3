package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadHeader: ReadHeader returns what config.json holds (manifest,
// config, step) without reading the arrays, and refuses a config.json
// whose config or manifest no longer matches its checksum, or whose step
// is negative.
func TestReadHeader(t *testing.T) {
	save := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "ckpt")
		optim := &OptimState{Step: 7, M: map[string][]float64{"a": {0.5}}, V: map[string][]float64{"a": {0.25}}}
		if err := Save(dir, ckptScope(t, ckptSpec{seed: 1}), modelConfig{D: 8}, SaveOptions{Optim: optim}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	t.Run("intact", func(t *testing.T) {
		dir := save(t)
		h, err := ReadHeader(dir)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		if h.Step() != 7 || h.Dir != dir || string(h.Config) != string(c.Config) || len(h.Manifest.Params) != len(c.Manifest.Params) {
			t.Errorf("header step %d dir %q config %s, %d params; want 7, %q, %s, %d", h.Step(), h.Dir, h.Config, len(h.Manifest.Params), dir, c.Config, len(c.Manifest.Params))
		}
		var cfg modelConfig
		if err := h.DecodeConfig(&cfg); err != nil || cfg.D != 8 {
			t.Errorf("DecodeConfig: %+v, %v; want D 8", cfg, err)
		}
		// A config edited in memory no longer matches its checksum.
		h.Config = []byte(strings.Replace(string(h.Config), "8", "9", 1))
		if err := h.DecodeConfig(&cfg); err == nil || !strings.Contains(err.Error(), "SHA-256") {
			t.Errorf("DecodeConfig of an edited config: %v, want a checksum error", err)
		}
	})
	t.Run("arrays not read", func(t *testing.T) {
		dir := save(t)
		flipBit(t, filepath.Join(dir, "lin__w.npy"), -3, 2)
		if err := os.Remove(filepath.Join(dir, "optim", "v", "a.npy")); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadHeader(dir); err != nil {
			t.Errorf("ReadHeader with damaged arrays: %v, want nil (it reads config.json only)", err)
		}
		if _, err := Read(dir); err == nil {
			t.Error("Read with damaged arrays: nil error")
		}
	})
	for _, tc := range []struct {
		name, old, new string
		want           []string
	}{
		{"manifest edited", `"step": 7`, `"step": 6`, []string{"config.json", "manifest", "SHA-256"}},
		{"config edited", `"d": 8`, `"d": 9`, []string{"config.json", "config", "SHA-256"}},
		{"negative step", `"step": 7`, `"step": -7`, []string{"config.json", "optimiser step -7"}},
		{"unknown key", `"config":`, `"comfig":`, []string{"config.json", `unknown key "comfig"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := save(t)
			replaceInFile(t, filepath.Join(dir, "config.json"), tc.old, tc.new)
			_, err := ReadHeader(dir)
			if err == nil {
				t.Fatal("got nil error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		if _, err := ReadHeader(filepath.Join(t.TempDir(), "none")); err == nil {
			t.Error("no such directory: nil error")
		}
	})
}
