package main

import (
	"strings"
	"testing"
)

// TestRun times the tiny preset (both families, greedy and beam, cached
// and full recompute) and checks that bad flags are refused.
func TestRun(t *testing.T) {
	if err := run([]string{"-preset", "tiny", "-model", "gd,gdff,gpt", "-batch", "2", "-new", "5", "-full-new", "2"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-preset", "huge"}, "-preset"},
		{[]string{"-model", "rnn"}, "-model"},
		{[]string{"-strategy", "sample"}, "-strategy"},
		{[]string{"-batch", "0"}, "-batch"},
		{[]string{"-dtype", "int8"}, "-dtype"},
		{[]string{"-beams", "0"}, "-beams"},
	} {
		if err := run(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%v) = %v, want an error naming %s", c.args, err, c.want)
		}
	}
}
