package checkpoint

import (
	"strings"
	"testing"
)

// TestManifestKeysStrict: config.json and its manifest are decoded with
// exact keys (encoding/json alone matches "NAME" to "name") and a key
// given twice is an error, not "last wins"; checksums do not cover this
// for a checkpoint written before them, which is read unverified.
func TestManifestKeysStrict(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"format": "gdattn-checkpoint", "version": 1, "dtype": "float64", "params": [{"NAME": "a", "shape": [], "dtype": "float64", "file": "a.npy"}]}`, `unknown key "NAME"`},
		{`{"format": "gdattn-checkpoint", "version": 1, "dtype": "float64", "params": [{"name": "a", "Shape": [], "dtype": "float64", "file": "a.npy"}]}`, `unknown key "Shape"`},
		{`{"Format": "gdattn-checkpoint", "version": 1, "dtype": "float64", "params": []}`, `unknown key "Format"`},
		{`{"format": "gdattn-checkpoint", "version": 1, "dtype": "float64", "dtype": "float32", "params": []}`, `duplicate key "dtype"`},
		{`{"format": "gdattn-checkpoint", "version": 1, "dtype": "float64", "params": [{"name": "a", "name": "b", "shape": [], "dtype": "float64", "file": "a.npy"}]}`, `duplicate key "name"`},
	} {
		var m Manifest
		if err := decodeStrict([]byte(tc.in), &m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("decodeStrict(%s): %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
	var cj configJSON
	if err := decodeStrict([]byte(`{"manifest": {}, "config": null, "Config": 1}`), &cj); err == nil {
		t.Errorf("config.json with \"Config\": no error")
	}
}
