package gd

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
)

// TestConfigJSON pins the documented schema of Config: every field under
// its key, enums as strings, the kernel as its layers form; and the round
// trip.
func TestConfigJSON(t *testing.T) {
	cfg := Config{D: 10, DPrime: 5, C: 25, N: 10, Form: OneStep, Blocks: 1,
		Kernel: layers.Sum(layers.RBF(0.5), layers.Scaled(0.25, layers.Linear())),
		Alpha:  2, FixedAlpha: true, Bias: true, Heads: 3, Erase: EraseLambda, Lambda: 50,
		EraseKernel: "softmax", Literal: true, ZeroColumn: true, FuseEncoder: true}
	const want = `{"d":10,"d_prime":5,"c":25,"n":10,"blocks":1,"alpha":2,"fixed_alpha":true,"bias":true,"heads":3,` +
		`"lambda":50,"erase_kernel":"softmax","literal":true,"zero_column":true,"fuse_encoder":true,"likelihood":"categorical","form":"one-step","erase":"lambda",` +
		`"kernel":{"name":"sum","terms":[{"name":"rbf","gamma":0.5,"learnable":true},{"name":"scaled","beta":0.25,"learnable":true,"kernel":{"name":"linear"}}]}}`
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Fatalf("json.Marshal =\n%s\nwant\n%s", b, want)
	}
	var back Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(back)
	if err != nil || string(again) != want {
		t.Errorf("round trip gives %s (err %v)", again, err)
	}
	back.Kernel, cfg.Kernel = nil, nil
	if !reflect.DeepEqual(back, cfg) {
		t.Errorf("round trip gives %+v, want %+v", back, cfg)
	}
	checkEveryKey(t, Config{}, b)
	// "fuse_encoder" is written only when true: a default config's JSON
	// (and the run keys made from it) has no such key.
	if b, err := json.Marshal(Config{D: 3, DPrime: 2, C: 4, N: 5}); err != nil || strings.Contains(string(b), "fuse_encoder") {
		t.Errorf("default config's JSON %s (error %v) has the key fuse_encoder", b, err)
	}
}

// checkEveryKey fails unless every field of v with a json tag is a key of
// the object data: the JSON forms cannot drift from the structs.
func checkEveryKey(t *testing.T, v any, data []byte) {
	t.Helper()
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		t.Fatal(err)
	}
	rt := reflect.TypeOf(v)
	n := 0
	for i := 0; i < rt.NumField(); i++ {
		tag := strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]
		if tag == "-" {
			continue
		}
		if tag == "" {
			t.Errorf("field %s.%s has no json tag", rt.Name(), rt.Field(i).Name)
			continue
		}
		n++
		if _, ok := keys[tag]; !ok {
			t.Errorf("key %q of %s.%s is missing from %s", tag, rt.Name(), rt.Field(i).Name, data)
		}
	}
	if n != len(keys) {
		t.Errorf("%s has %d keys, %s %d tagged fields", data, len(keys), rt.Name(), n)
	}
}

func TestConfigJSONDefaults(t *testing.T) {
	var cfg Config
	if err := json.Unmarshal([]byte(`{"d":2,"d_prime":3,"c":4,"n":5}`), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Form != Interleaved || cfg.Erase != EraseExact || cfg.Kernel != nil || cfg.D != 2 {
		t.Errorf("decoded %+v, want the zero form, erase and kernel", cfg)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"kernel":null`) || !strings.Contains(string(b), `"form":"interleaved"`) {
		t.Errorf("json.Marshal = %s, want a null kernel and the interleaved form", b)
	}
	// A bare kernel name is the built-in with g = 1, learned.
	if err := json.Unmarshal([]byte(`{"d":2,"kernel":"rbf"}`), &cfg); err != nil {
		t.Fatal(err)
	}
	if b, ok := cfg.Kernel.(layers.BuiltinSpec); !ok || b.Name() != "rbf" || !b.Learnable() || b.Gamma() != 1 {
		t.Errorf("kernel \"rbf\" decodes to %#v, want RBF(1)", cfg.Kernel)
	}
}

func TestConfigJSONErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"unknown key", `{"d":2,"dprime":3}`, []string{"gd: config: ", `unknown key "dprime"`}},
		{"go field name", `{"D":2}`, []string{`unknown key "D"`}},
		{"wrong type", `{"d":"2"}`, []string{`key "d"`}},
		{"form", `{"form":"onestep"}`, []string{`key "form"`, `"onestep"`}},
		{"form number", `{"form":1}`, []string{`key "form"`}},
		{"erase", `{"erase":"delta"}`, []string{`key "erase"`, `"delta"`}},
		{"kernel", `{"kernel":{"name":"cosine"}}`, []string{`key "kernel"`, `unknown kernel "cosine"`}},
		{"kernel key", `{"kernel":{"name":"rbf","g":1}}`, []string{`key "kernel"`, `unknown key "g"`}},
		{"not an object", `[]`, []string{"gd: config: "}},
		{"trailing", `{"d":2} {}`, []string{"trailing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg Config
			err := cfg.UnmarshalJSON([]byte(tc.in))
			if err == nil {
				t.Fatalf("no error, want one containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	unregistered := layers.Custom("gd_test_unregistered", false, func(*graph.Scope) (layers.Kernel, error) { return layers.LinearKernel(), nil })
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Kernel: unregistered}, `key "kernel": layers: kernel "gd_test_unregistered"`},
		{Config{Form: Form(9)}, `key "form"`},
		{Config{Erase: Erase(9)}, `key "erase"`},
	} {
		if b, err := json.Marshal(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("json.Marshal(%+v) = %s, %v, want an error containing %q", tc.cfg, b, err, tc.want)
		}
	}
}

func TestLMConfigJSON(t *testing.T) {
	cfg := LMConfig{Vocab: 50, DPrime: 8, Context: 16, Heads: 2, Kernel: layers.Exp(0.5).Fixed(),
		Steps: 2, MeanE: true, DiagP: true, FF: true, FFHidden: 32}
	const want = `{"vocab":50,"d_prime":8,"context":16,"heads":2,"steps":2,"mean_e":true,"diag_p":true,"ff":true,"ff_hidden":32,` +
		`"kernel":{"name":"exp","gamma":0.5,"learnable":false}}`
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Fatalf("json.Marshal =\n%s\nwant\n%s", b, want)
	}
	var back LMConfig
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if again, _ := json.Marshal(back); string(again) != want {
		t.Errorf("round trip gives %s", again)
	}
	checkEveryKey(t, LMConfig{}, b)
	// A bare name, as configs saved before kernels were values wrote it,
	// means g fixed at 1.
	if err := json.Unmarshal([]byte(`{"vocab":5,"d_prime":2,"context":3,"kernel":"softmax"}`), &back); err != nil {
		t.Fatal(err)
	}
	if b, ok := back.Kernel.(layers.BuiltinSpec); !ok || b.Name() != "softmax" || b.Learnable() || b.Gamma() != 1 {
		t.Errorf("kernel \"softmax\" decodes to %#v, want Softmax(1).Fixed()", back.Kernel)
	}
	for _, in := range []string{`{"vocab":5,"heads_":1}`, `{"kernel":"cosine"}`, `{"vocab":"5"}`} {
		if err := json.Unmarshal([]byte(in), &back); err == nil || !strings.HasPrefix(err.Error(), "gd: lm config: ") {
			t.Errorf("%s: error %v, want a gd: lm config error", in, err)
		}
	}
}

// TestConfigSchemaExample: the example config of the package documentation
// and docs/checkpoints.md ("Model configs") decodes and validates to the model it describes.
func TestConfigSchemaExample(t *testing.T) {
	const example = `{"d": 10, "d_prime": 5, "c": 25, "n": 10, "form": "interleaved", "blocks": 2,
	 "kernel": {"name": "softmax", "gamma": 1, "learnable": true},
	 "alpha": 10, "fixed_alpha": false, "bias": false, "heads": 1,
	 "erase": "exact", "lambda": 100, "erase_kernel": "rbf",
	 "literal": false, "zero_column": false}`
	var cfg Config
	if err := json.Unmarshal([]byte(example), &cfg); err != nil {
		t.Fatal(err)
	}
	got, err := cfg.Validate()
	if err != nil {
		t.Fatal(err)
	}
	def, err := Config{D: 10, DPrime: 5, C: 25, N: 10, Blocks: 2}.Validate()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(def)
	if string(a) != string(b) {
		t.Errorf("the example is %s, want the defaults it spells out, %s", a, b)
	}
}
