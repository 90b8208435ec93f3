package cli

import (
	"errors"
	"flag"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func() error
		code int
		want string // the stderr line, "" for none
	}{
		{"ok", func() error { return nil }, ExitOK, ""},
		{"help", func() error { return flag.ErrHelp }, ExitOK, ""},
		{"usage", func() error { return Usagef("-lr: NaN is not a finite positive number") }, ExitUsage, "cmd: -lr: NaN is not a finite positive number\n"},
		{"wrapped usage", func() error { return errors.Join(errors.New("a"), Usage(errors.New("b"))) }, ExitUsage, "cmd: a; b\n"},
		{"failure", func() error { return errors.New("disk full") }, ExitFailure, "cmd: disk full\n"},
		{"multi-line", func() error { return errors.New("first\n  second\n\n") }, ExitFailure, "cmd: first; second\n"},
		{"panic", func() error { panic("boom\nat line 3") }, ExitFailure, "cmd: internal error: boom; at line 3\n"},
		{"runtime panic", func() error { var s []int; _ = s[3]; return nil }, ExitFailure, "cmd: internal error: runtime error: index out of range [3] with length 0\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			if code := Run("cmd", &b, c.run); code != c.code {
				t.Errorf("code %d, want %d", code, c.code)
			}
			if b.String() != c.want {
				t.Errorf("stderr %q, want %q", b.String(), c.want)
			}
		})
	}
}

func TestUsage(t *testing.T) {
	if Usage(nil) != nil {
		t.Error("Usage(nil) != nil")
	}
	base := errors.New("x")
	u := Usage(base)
	if !IsUsage(u) || !errors.Is(u, base) || Usage(u) != u {
		t.Errorf("Usage(%v) = %#v", base, u)
	}
	if IsUsage(base) {
		t.Error("IsUsage of a plain error")
	}
}

func TestParse(t *testing.T) {
	newSet := func() *flag.FlagSet {
		fs := NewFlagSet("cmd")
		fs.Int("L", 3, "contexts")
		fs.Bool("quiet", false, "")
		return fs
	}
	for _, c := range []struct {
		args  []string
		usage bool   // a usage error
		want  string // in its message
	}{
		{[]string{"-L", "4"}, false, ""},
		{[]string{"-L", "x"}, true, `invalid value "x" for flag -L`},
		{[]string{"-nope"}, true, "flag provided but not defined: -nope"},
		{[]string{"-L"}, true, "flag needs an argument: -L"},
		{[]string{"-quiet", "extra"}, true, `unexpected argument "extra"`},
		{[]string{"-quiet=maybe"}, true, "-quiet"},
	} {
		err := Parse(newSet(), c.args, func(io.Writer) { t.Error("usage printed") })
		if (err != nil) != c.usage || (err != nil && (!IsUsage(err) || !strings.Contains(err.Error(), c.want))) {
			t.Errorf("%v: err = %v, want a usage error %v mentioning %q", c.args, err, c.usage, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %q is not one line", c.args, err)
		}
	}
	printed := false
	if err := Parse(newSet(), []string{"-h"}, func(io.Writer) { printed = true }); !errors.Is(err, flag.ErrHelp) || !printed {
		t.Errorf("-h: err %v, usage printed %v", err, printed)
	}
}

func TestValidate(t *testing.T) {
	fs := NewFlagSet("cmd")
	fs.Int("L", 3, "")
	fs.Float64("lr", 0.1, "")
	fs.String("dtype", "float32", "")
	rules := Rules{"L": Positive, "lr": Positive, "dtype": OneOf("float32", "float64")}
	if err := Validate(fs, rules); err != nil {
		t.Fatal(err)
	}
	fs.Set("lr", "NaN")
	fs.Set("dtype", "float16")
	// Lexical order: -dtype before -lr.
	if err := Validate(fs, rules); !IsUsage(err) || err.Error() != `unknown -dtype "float16" (want float32 or float64)` {
		t.Errorf("got %v", err)
	}
	fs.Set("dtype", "float64")
	if err := Validate(fs, rules); err == nil || err.Error() != "-lr: NaN is not a finite positive number" {
		t.Errorf("got %v", err)
	}
	for name, r := range map[string]Rules{
		"missing rule": {"L": Positive, "lr": Positive},
		"unknown flag": {"L": Positive, "lr": Positive, "dtype": Any, "nope": Any},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			Validate(fs, r)
		}()
	}
}

func TestRules(t *testing.T) {
	for _, c := range []struct {
		rule Rule
		v    any
		want string // "" if accepted
	}{
		{Positive, 1, ""},
		{Positive, 0, "-x: 0 is not a positive integer"},
		{Positive, -3, "-x: -3 is not a positive integer"},
		{Positive, uint64(0), "-x: 0 is not a positive integer"},
		{Positive, 1e-9, ""},
		{Positive, math.NaN(), "-x: NaN is not a finite positive number"},
		{Positive, math.Inf(1), "-x: +Inf is not a finite positive number"},
		{Positive, -1.0, "-x: -1 is not a finite positive number"},
		{Positive, "0.5", ""},
		{Positive, "abc", `-x: "abc" is not a finite positive number`},
		{Positive, time.Second, ""},
		{Positive, time.Duration(0), "-x: 0s is not a positive duration"},
		{NonNegative, 0, ""},
		{NonNegative, -1, "-x: -1 is not a non-negative integer"},
		{NonNegative, 0.0, ""},
		{NonNegative, math.NaN(), "-x: NaN is not a finite non-negative number"},
		{NonNegative, -time.Second, "-x: -1s is not a non-negative duration"},
		{IntIn(1, 64), 64, ""},
		{IntIn(1, 64), 65, "-x: 65 is not an integer in [1, 64]"},
		{IntIn(1, 64), "7", ""},
		{IntIn(1, 64), "1e3", `-x: "1e3" is not an integer in [1, 64]`},
		{Fraction, 0.0, ""},
		{Fraction, 1.0, ""},
		{Fraction, 1.5, "-x: 1.5 is not a fraction in [0, 1]"},
		{Fraction, math.NaN(), "-x: NaN is not a fraction in [0, 1]"},
		{OpenFraction, 0.5, ""},
		{OpenFraction, 0.0, "-x: 0 is not a fraction in (0, 1)"},
		{OpenFraction, 1.0, "-x: 1 is not a fraction in (0, 1)"},
		{OneOf("a", "b", "c"), "b", ""},
		{OneOf("a", "b", "c"), "d", `unknown -x "d" (want a, b or c)`},
		{NonEmpty, " ", "-x is empty"},
		{List(IntIn(1, 9)), "1, 2,3", ""},
		{List(IntIn(1, 9)), "1,0", "-x: \"0\" is not an integer in [1, 9]"},
		{List(IntIn(1, 9)), "1,,2", `-x: empty element in "1,,2"`},
		{List(IntIn(1, 9)), "", "-x: empty list"},
		{List(OneOf("rbf", "softmax")), "rbf,exp", `unknown -x "exp" (want rbf or softmax)`},
		{Optional(List(Positive)), "", ""},
		{Optional(List(Positive)), "0.1,-1", `-x: "-1" is not a finite positive number`},
		{Any, "anything", ""},
	} {
		err := c.rule("-x", c.v)
		if got := ""; err != nil {
			got = err.Error()
			if got != c.want {
				t.Errorf("%v: got %q, want %q", c.v, got, c.want)
			}
		} else if c.want != "" {
			t.Errorf("%v: accepted, want %q", c.v, c.want)
		}
	}
}

func TestModes(t *testing.T) {
	set := Set{"x": true, "quick": true}
	for _, c := range []struct {
		err  error
		want string
	}{
		{Needs(set, false, "-eval", "y", "x"), "-x needs -eval"},
		{Needs(set, true, "-eval", "x"), ""},
		{NotWith(set, true, "-sweep", "kernel", "quick"), "-quick does not apply to -sweep"},
		{NotWith(set, false, "-sweep", "quick"), ""},
		{Only(set, true, "-merge", "quick"), "-x does not apply to -merge"},
		{Only(set, true, "-merge", "quick", "x"), ""},
		{Required("ckpt", ""), "-ckpt is required"},
		{Exists("corpus", "/nonexistent/x.txt", ""), "-corpus: stat /nonexistent/x.txt: no such file or directory"},
		{Exists("out", t.TempDir(), "file"), "is a directory"},
		{First(nil, Usagef("a"), Usagef("b")), "a"},
	} {
		got := ""
		if c.err != nil {
			got = c.err.Error()
			if !IsUsage(c.err) {
				t.Errorf("%q is not a usage error", got)
			}
		}
		if !strings.Contains(got, c.want) || (c.want == "" && got != "") {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}
