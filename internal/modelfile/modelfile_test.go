package modelfile

import (
	"strings"
	"testing"

	"github.com/gdattn/gdattn/checkpoint"
)

func TestDecode(t *testing.T) {
	h, body, err := Decode([]byte(`{"dtype": "float32", "scope": "a/b", "gd": {"d": 1}}`), "gd")
	if err != nil || h.Dtype != "float32" || h.Scope != "a/b" || string(body) != `{"d": 1}` {
		t.Fatalf("Decode = %+v, %s, %v", h, body, err)
	}
	enc, err := Encode("tf", Header{Dtype: "float64"}, []byte(`{"d":1}`))
	if err != nil || string(enc) != `{"dtype":"float64","scope":"","tf":{"d":1}}` {
		t.Errorf("Encode = %s, %v", enc, err)
	}
	for _, tc := range []struct{ in, want string }{
		{`[]`, "want an object"},
		{`{"dtype": "float64"}`, `missing key "gd"`},
		{`{"dtype": "float64", "tf": {}}`, `holds a tf.Model (key "tf"), not a gd.Model`},
		{`{"dtype": "float64", "gd": {}, "tf": {}}`, "more than one model"},
		{`{"dtype": "float64", "gd": {}, "gd_lm": {}, "scope": ""}`, "more than one model"},
		{`{"gd": {}}`, `missing key "dtype"`},
		{`{"dtype": "f16", "gd": {}}`, `key "dtype"`},
		{`{"dtype": 64, "gd": {}}`, `key "dtype"`},
		{`{"dtype": "float64", "scope": "/x", "gd": {}}`, `key "scope"`},
		{`{"dtype": "float64", "gd": []}`, `key "gd": want an object`},
		{`{"dtype": "float64", "gd": {}, "seed": 1}`, `unknown key "seed"`},
	} {
		if _, _, err := Decode([]byte(tc.in), "gd"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%s) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	man := checkpoint.Manifest{Dtype: "float64", Params: []checkpoint.ManifestEntry{
		{Name: "m/we", Shape: []int{2, 3}}, {Name: "m/log_alpha", Shape: []int{}},
	}}
	want := []Param{P("we", 2, 3), P("log_alpha")}
	if err := Check(want, "m", "float64", man); err != nil {
		t.Errorf("Check: %v", err)
	}
	for _, tc := range []struct {
		want  []Param
		scope string
		dtype string
		err   string
	}{
		{want, "m", "float32", "dtype is float64"},
		{want, "", "float64", `["we" "log_alpha"]`},
		{[]Param{P("we", 2, 3)}, "m", "float64", `"m/log_alpha"`},
		{[]Param{P("we", 3, 2), P("log_alpha")}, "m", "float64", `"m/we" has shape [2 3] in the checkpoint, the config implies [3 2]`},
	} {
		if err := Check(tc.want, tc.scope, tc.dtype, man); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Check(%v, %q, %q) = %v, want an error containing %q", tc.want, tc.scope, tc.dtype, err, tc.err)
		}
	}
}
