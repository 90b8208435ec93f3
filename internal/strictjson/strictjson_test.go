package strictjson

import (
	"strings"
	"testing"
)

type inner struct {
	B int `json:"b"`
}

type outer struct {
	inner
	A      int    `json:"a"`
	Hidden int    `json:"-"`
	Plain  string // no tag: its field name
}

func TestDecode(t *testing.T) {
	var v outer
	if err := Decode([]byte(` {"a": 1, "b": 2, "Plain": "x"} `), &v); err != nil || v.A != 1 || v.B != 2 || v.Plain != "x" {
		t.Fatalf("Decode = %+v, %v", v, err)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"A": 1}`, `unknown key "A"`},
		{`{"Hidden": 1}`, `unknown key "Hidden"`},
		{`{"plain": "x"}`, `unknown key "plain"`},
		{`{"a": "1"}`, `key "a": string value, want int`},
		{`{"b": true}`, `key "b": bool value, want int`},
		{`{"a": 1} 2`, "trailing data"},
		{`{"a": 1`, "unexpected EOF"},
	} {
		if err := Decode([]byte(tc.in), &v); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%s) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}
