package strictjson

import (
	"strings"
	"testing"
)

type leaf struct {
	X int `json:"x"`
}

type tree struct {
	Name   string          `json:"name"`
	Leaf   leaf            `json:"leaf"`
	Leaves []leaf          `json:"leaves"`
	ByName map[string]leaf `json:"by_name"`
	Ptr    *leaf           `json:"ptr"`
}

// TestDecodeNestedAndDuplicates: keys of nested objects (struct fields,
// slice elements, map values, pointers) match exactly too, and a key given
// twice in one object is an error at any level, not "last wins".
func TestDecodeNestedAndDuplicates(t *testing.T) {
	var v tree
	ok := `{"name": "a", "leaf": {"x": 1}, "leaves": [{"x": 2}], "by_name": {"k": {"x": 3}, "K": {"x": 4}}, "ptr": {"x": 5}}`
	if err := Decode([]byte(ok), &v); err != nil || v.Leaf.X != 1 || v.Leaves[0].X != 2 || v.ByName["K"].X != 4 || v.Ptr.X != 5 {
		t.Fatalf("Decode = %+v, %v", v, err)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"leaf": {"X": 1}}`, `key "leaf": unknown key "X"`},
		{`{"leaves": [{"x": 1}, {"X": 1}]}`, `key "leaves"[1]: unknown key "X"`},
		{`{"by_name": {"k": {"X": 1}}}`, `key "by_name"["k"]: unknown key "X"`},
		{`{"ptr": {"X": 1}}`, `key "ptr": unknown key "X"`},
		{`{"name": "a", "name": "b"}`, `duplicate key "name"`},
		{`{"leaf": {"x": 1, "x": 2}}`, `duplicate key "x"`},
		{`{"leaves": [{"x": 1}, {"x": 1, "x": 1}]}`, `duplicate key "x"`},
		{`{"by_name": {"k": {}, "k": {}}}`, `duplicate key "k"`},
	} {
		var v tree
		if err := Decode([]byte(tc.in), &v); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%s) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}
