package modelfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/tf"
)

// TestLoadersVerifyConfigChecksum saves one model of every family, changes
// one value of its config in config.json without resealing (a flipped bit
// that still decodes to a valid config of the same parameters), and checks
// that every loader refuses it, naming the checksum, instead of building a
// different model.
func TestLoadersVerifyConfigChecksum(t *testing.T) {
	type saver interface{ Save(string) error }
	build := map[string]func(s *graph.Scope) (saver, error){
		"gd": func(s *graph.Scope) (saver, error) {
			return gd.NewModel(s, gd.Config{D: 2, DPrime: 2, C: 3, N: 3, Blocks: 1}, 1)
		},
		"gd gaussian": func(s *graph.Scope) (saver, error) {
			return gd.NewModel(s, gd.Config{D: 2, DPrime: 2, N: 3, Blocks: 1, Kernel: layers.Linear(), Likelihood: gd.Gaussian()}, 1)
		},
		"gd_lm": func(s *graph.Scope) (saver, error) {
			return gd.NewLM(s, gd.LMConfig{Vocab: 5, DPrime: 4, Context: 3, Steps: 1}, gd.LMOptions{Batch: 1})
		},
		"tf": func(s *graph.Scope) (saver, error) {
			return tf.NewModel(s, tf.Config{D: 2, DPrime: 2, C: 3, N: 3, Layers: 1}, 1)
		},
		"tf_regressor": func(s *graph.Scope) (saver, error) {
			return tf.NewRegressor(s, tf.RegressorConfig{D: 2, DY: 2, N: 3, Layers: 1}, 1)
		},
		"tf_gpt": func(s *graph.Scope) (saver, error) {
			return tf.NewGPT(s, tf.GPTConfig{Vocab: 5, Context: 3, DModel: 4, Heads: 2, Layers: 1}, tf.GPTOptions{Batch: 1})
		},
	}
	load := map[string][]struct {
		name string
		f    func(dir string) error
	}{
		"gd": {
			{"gd.Load", func(dir string) error { _, err := gd.Load(dir, 1); return err }},
			{"gd.LoadConfig", func(dir string) error { _, _, err := gd.LoadConfig(dir); return err }},
		},
		"gd gaussian": {
			{"gd.Load", func(dir string) error { _, err := gd.Load(dir, 1); return err }},
			{"gd.LoadConfig", func(dir string) error { _, _, err := gd.LoadConfig(dir); return err }},
		},
		"tf_regressor": {{"tf.LoadRegressor", func(dir string) error { _, err := tf.LoadRegressor(dir, 1); return err }}},
		"gd_lm":        {{"gd.LoadLM", func(dir string) error { _, err := gd.LoadLM(dir, gd.LMOptions{Batch: 1}); return err }}},
		"tf":           {{"tf.Load", func(dir string) error { _, err := tf.Load(dir, 1); return err }}},
		"tf_gpt":       {{"tf.LoadGPT", func(dir string) error { _, err := tf.LoadGPT(dir, tf.GPTOptions{Batch: 1}); return err }}},
	}
	// Each edit keeps the config valid and its parameters unchanged.
	edits := map[string][2]string{
		"gd": {`"blocks": 1`, `"blocks": 3`},
		// The Gaussian GD model: 1 -> 3 steps, the same parameters.
		"gd gaussian":  {`"blocks": 1`, `"blocks": 3`},
		"tf_regressor": {`"n": 3`, `"n": 5`},
		"gd_lm":        {`"steps": 1`, `"steps": 3`},
		"tf":           {`"n": 3`, `"n": 5`},
		"tf_gpt":       {`"heads": 2`, `"heads": 4`},
	}
	for fam, mk := range build {
		s, err := graph.NewScope(graph.Float64, 1)
		if err != nil {
			t.Fatal(err)
		}
		m, err := mk(s)
		if err != nil {
			t.Fatalf("%s: %v", fam, err)
		}
		dir := filepath.Join(t.TempDir(), fam)
		if err := m.Save(dir); err != nil {
			t.Fatalf("%s: %v", fam, err)
		}
		for _, l := range load[fam] {
			if err := l.f(dir); err != nil {
				t.Fatalf("%s of an intact checkpoint: %v", l.name, err)
			}
		}
		path := filepath.Join(dir, "config.json")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		e := edits[fam]
		if !strings.Contains(string(b), e[0]) {
			t.Fatalf("%s: config.json lacks %s:\n%s", fam, e[0], b)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(string(b), e[0], e[1], 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, l := range load[fam] {
			err := l.f(dir)
			if err == nil || !strings.Contains(err.Error(), "SHA-256") || !strings.Contains(err.Error(), "config.json") {
				t.Errorf("%s after %s -> %s in config.json: error %v, want one naming config.json's SHA-256", l.name, e[0], e[1], err)
			}
		}
	}
}
