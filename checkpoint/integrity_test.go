package checkpoint

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gdattn/gdattn/graph/npy"
)

// flipBit flips bit bit of byte off of the file (off < 0 counts from the
// end).
func flipBit(t *testing.T, path string, off int, bit uint) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += len(b)
	}
	b[off] ^= 1 << bit
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// replaceInFile replaces the first old in the file with new.
func replaceInFile(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s lacks %q:\n%s", path, old, b)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointIntegrity damages a saved checkpoint (parameters, optimiser
// state) in ways that keep every file well-formed, and checks that loading
// it fails naming the damage, with no parameter changed.
func TestCheckpointIntegrity(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.npy")
	if err := npy.WriteFile(outside, &npy.Array{Shape: []int{3}, Dtype: npy.Float64, F64: []float64{7, 7, 7}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   []string
	}{
		{"bit flipped in an array", func(t *testing.T, dir string) { flipBit(t, filepath.Join(dir, "lin__w.npy"), -3, 2) },
			[]string{"lin__w.npy", "SHA-256"}},
		{"bit flipped in a moment", func(t *testing.T, dir string) { flipBit(t, filepath.Join(dir, "optim", "v", "a.npy"), -1, 6) },
			[]string{"optim/v/a.npy", "SHA-256"}},
		// '7' -> '6': the step count (one bit) of the manifest.
		{"bit flipped in the step", func(t *testing.T, dir string) {
			replaceInFile(t, filepath.Join(dir, "config.json"), `"step": 7`, `"step": 6`)
		}, []string{"config.json", "manifest", "SHA-256"}},
		{"renamed key", func(t *testing.T, dir string) {
			replaceInFile(t, filepath.Join(dir, "config.json"), `"step": 7`, `"stdp": 7`)
		}, []string{"config.json", `unknown key "stdp"`}},
		{"unknown top-level key", func(t *testing.T, dir string) {
			replaceInFile(t, filepath.Join(dir, "config.json"), `"config":`, `"comfig":`)
		}, []string{"config.json", `unknown key "comfig"`}},
		{"checksum removed from one entry", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "config.json")
			b, _ := os.ReadFile(p)
			i := strings.Index(string(b), `"sha256": "`) + len(`"sha256": "`)
			if err := os.WriteFile(p, append(b[:i:i], b[i+64:]...), 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{"config.json", "no SHA-256"}},
		{"symlink leaving the directory", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "lin__b.npy")
			os.Remove(p)
			if err := os.Symlink(outside, p); err != nil {
				t.Skip(err)
			}
		}, []string{"lin__b.npy", "escapes"}},
		{"directory in place of a file", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "lin__b.npy")
			os.Remove(p)
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, []string{"lin__b.npy", "not a regular file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ckpt")
			optim := &OptimState{Step: 7, M: map[string][]float64{"a": {0.5}}, V: map[string][]float64{"a": {0.25}}}
			if err := Save(dir, ckptScope(t, ckptSpec{seed: 1}), modelConfig{D: 8}, SaveOptions{Optim: optim}); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, dir)
			dst := ckptScope(t, ckptSpec{seed: 2})
			before := paramValues(t, dst)
			var cfg modelConfig
			err := Load(dir, dst, &cfg)
			if err == nil {
				if c, rerr := Read(dir); rerr == nil {
					t.Fatalf("got nil error; read step %d", c.Optim.Step)
				}
				t.Fatal("got nil error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\x07") || strings.Contains(err.Error(), "secret") && !strings.Contains(tc.name, "symlink") {
				t.Errorf("error %q quotes another file", err)
			}
			if diff := cmp.Diff(before, paramValues(t, dst)); diff != "" {
				t.Errorf("parameters changed by a failed load (-before +after):\n%s", diff)
			}
		})
	}
}

// TestDecodeConfigStrict: a config with a key the caller's type lacks, or
// whose bits were flipped, is an error, not silently ignored.
func TestDecodeConfigStrict(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ckpt")
	type newer struct {
		D      int     `json:"d"`
		Kernel string  `json:"kernel"`
		Scale  float64 `json:"scale"`
		Heads  int     `json:"heads"`
	}
	if err := Save(dir, ckptScope(t, ckptSpec{seed: 1}), newer{D: 8, Heads: 4}, SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var old modelConfig
	if err := c.DecodeConfig(&old); err == nil || !strings.Contains(err.Error(), `unknown key "heads"`) {
		t.Errorf("decoding into a type without heads: got %v, want an unknown-field error", err)
	}
	var n newer
	if err := c.DecodeConfig(&n); err != nil || n.Heads != 4 {
		t.Errorf("decoding into the saved type: %+v, %v", n, err)
	}
	// '8' -> '9' in the config: still valid, but not what was saved.
	// Read itself refuses it, so no reader ever decodes it.
	replaceInFile(t, filepath.Join(dir, "config.json"), `"d": 8`, `"d": 9`)
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("a flipped config: Read got %v, want a checksum error", err)
	}
}

// TestLegacyCheckpoint: a checkpoint written before checksums (no sha256
// keys) still loads.
func TestLegacyCheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ckpt")
	src := ckptScope(t, ckptSpec{seed: 1})
	if err := Save(dir, src, modelConfig{D: 8}, SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	delete(top, "sha256")
	var man map[string]any
	if err := json.Unmarshal(top["manifest"], &man); err != nil {
		t.Fatal(err)
	}
	for _, e := range man["params"].([]any) {
		delete(e.(map[string]any), "sha256")
	}
	top["manifest"], _ = json.Marshal(man)
	b, _ = json.Marshal(top)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	dst := ckptScope(t, ckptSpec{seed: 2})
	var cfg modelConfig
	if err := Load(dir, dst, &cfg); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(paramValues(t, src), paramValues(t, dst)); diff != "" || cfg.D != 8 {
		t.Errorf("legacy load: config %+v, parameters (-want +got):\n%s", cfg, diff)
	}
}
