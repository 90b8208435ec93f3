package tf

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/layers"
)

// checkEveryKey fails unless every field of v with a json tag is a key of
// the object data, and data has no other key.
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

func TestConfigJSON(t *testing.T) {
	cfg := Config{D: 3, DPrime: 2, C: 4, N: 5, Layers: 2, Heads: 3, Kernel: layers.Laplacian(0.5),
		HeadKernels: []layers.KernelSpec{nil, layers.RBF(1)}, Cross: true, DK: 4, ZeroColumn: true, RegroupQuery: true,
		Init: testInit(2, 2, 9, 2, true)}
	const want = `{"d":3,"d_prime":2,"c":4,"n":5,"layers":2,"heads":3,"cross":true,"dk":4,"zero_column":true,"regroup_query":true,` +
		`"kernel":{"name":"laplacian","gamma":0.5,"learnable":true},"head_kernels":[null,{"name":"rbf","gamma":1,"learnable":true}]}`
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Fatalf("json.Marshal =\n%s\nwant\n%s", b, want)
	}
	checkEveryKey(t, Config{}, b)
	var back Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if again, _ := json.Marshal(back); string(again) != want {
		t.Errorf("round trip gives %s", again)
	}
	if back.Init != nil || len(back.HeadKernels) != 2 || back.HeadKernels[0] != nil {
		t.Errorf("decoded Init %v, HeadKernels %v; want no Init and {nil, rbf}", back.Init, back.HeadKernels)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"d":3,"Layers":2}`, `unknown key "Layers"`},
		{`{"d":3,"init":{}}`, `unknown key "init"`},
		{`{"kernel":"cosine"}`, `key "kernel": layers: unknown kernel "cosine"`},
		{`{"head_kernels":[{"name":"rbf","gamma":-1}]}`, `key "head_kernels"[0]`},
		{`{"heads":1.5}`, `key "heads"`},
	} {
		if err := json.Unmarshal([]byte(tc.in), &back); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "tf: config: ") {
			t.Errorf("%s: error %v, want a tf: config error containing %q", tc.in, err, tc.want)
		}
	}
	// "regroup_query" is written only when true: a default config's JSON
	// (and the run keys made from it) has no such key.
	if b, err := json.Marshal(Config{D: 3, DPrime: 2, C: 4, N: 5}); err != nil || strings.Contains(string(b), "regroup_query") {
		t.Errorf("default config's JSON %s (error %v) has the key regroup_query", b, err)
	}
	unregistered := layers.Custom("tf_test_unregistered", false, nil)
	if _, err := json.Marshal(Config{HeadKernels: []layers.KernelSpec{unregistered}}); err == nil || !strings.Contains(err.Error(), `key "head_kernels"[0]`) {
		t.Errorf("unregistered head kernel: error %v, want one naming head_kernels[0]", err)
	}
}

func TestGPTConfigJSON(t *testing.T) {
	cfg := GPTConfig{Vocab: 50, Context: 16, DModel: 8, Heads: 2, Layers: 3, FFHidden: 32}
	const want = `{"vocab":50,"context":16,"d_model":8,"heads":2,"layers":3,"ff_hidden":32}`
	b, err := json.Marshal(cfg)
	if err != nil || string(b) != want {
		t.Fatalf("json.Marshal = %s, %v, want %s", b, err, want)
	}
	checkEveryKey(t, GPTConfig{}, b)
	var back GPTConfig
	if err := json.Unmarshal(b, &back); err != nil || back != cfg {
		t.Errorf("round trip gives %+v, %v", back, err)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"vocab":5,"d_modell":2}`, `unknown key "d_modell"`},
		{`{"Vocab":5}`, `unknown key "Vocab"`},
		{`{"vocab":"5"}`, `key "vocab"`},
	} {
		if err := json.Unmarshal([]byte(tc.in), &back); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "tf: gpt config: ") {
			t.Errorf("%s: error %v, want a tf: gpt config error containing %q", tc.in, err, tc.want)
		}
	}
}
