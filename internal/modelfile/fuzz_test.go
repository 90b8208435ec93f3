package modelfile_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/tf"
)

// FuzzLoadConfig saves a checkpoint whose model config is fuzzed JSON
// (sealed: its checksums match, so the loaders get past the integrity
// check to decoding and validating it) beside a small valid parameter set,
// then runs every loader on it: gd.Load, gd.LoadConfig, gd.LoadLM, tf.Load,
// tf.LoadGPT and tf.LoadRegressor must return, never panic, whatever the
// config holds
// (unknown keys, wrong types, huge sizes, kernels nested without bound). A
// config LoadConfig accepts must be valid and encode again.
func FuzzLoadConfig(f *testing.F) {
	for _, seed := range []string{
		`{"dtype":"float64","scope":"","gd":{"d":2,"d_prime":2,"c":3,"n":3,"blocks":1,"kernel":{"name":"softmax","gamma":1,"learnable":true}}}`,
		`{"dtype":"float64","gd":{"d":2,"d_prime":2,"c":3,"n":3,"blocks":65536}}`,
		`{"dtype":"float32","gd":{"d":2,"d_prime":2,"c":3,"n":3,"kernel":{"name":"scaled","beta":1,"kernel":{"name":"scaled","beta":1,"kernel":"rbf"}}}}`,
		`{"dtype":"float64","gd":{"d":2,"d_prime":2,"c":3,"n":3,"kernel":{"name":"sum","terms":["rbf","linear",{"name":"exp","gamma":0.5}]}}}`,
		`{"dtype":"float64","gd_lm":{"vocab":5,"d_prime":4,"context":3,"steps":1,"kernel":"softmax"}}`,
		`{"dtype":"float64","tf":{"d":2,"d_prime":2,"c":3,"n":3,"layers":1,"heads":1,"dk":6}}`,
		`{"dtype":"float64","tf_gpt":{"vocab":5,"context":3,"d_model":4,"heads":2,"layers":1}}`,
		`{"dtype":"float64","gd":{"d":2,"d_prime":1,"n":3,"blocks":2,"likelihood":"gaussian","kernel":{"name":"rbf","gamma":0.5,"learnable":true}}}`,
		`{"dtype":"float64","tf_regressor":{"d":2,"d_y":1,"n":3,"layers":2,"heads":1,"kernel":"softmax"}}`,
		`{"dtype":"float64","gd":{"d":2,"d":3}}`,
		`{"dtype":"float64","gd":{"D":2}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, cfg []byte) {
		if !json.Valid(cfg) {
			return
		}
		s, err := graph.NewScope(graph.Float64, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gd.NewModel(s, gd.Config{D: 2, DPrime: 2, C: 3, N: 3}, 1); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "ckpt")
		if err := checkpoint.Save(dir, s, json.RawMessage(cfg), checkpoint.SaveOptions{}); err != nil {
			return
		}
		if c, _, err := gd.LoadConfig(dir); err == nil {
			if _, err := c.Validate(); err != nil {
				t.Fatalf("LoadConfig accepted a config Validate refuses: %v", err)
			}
			if _, err := c.MarshalJSON(); err != nil {
				t.Fatalf("LoadConfig accepted a config that does not encode: %v", err)
			}
		}
		gd.Load(dir, 1)
		gd.LoadLM(dir, gd.LMOptions{Batch: 1})
		tf.Load(dir, 1)
		tf.LoadGPT(dir, tf.GPTOptions{Batch: 1})
		tf.LoadRegressor(dir, 1)
	})
}
