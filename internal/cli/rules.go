package cli

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// A Rule checks one value: a flag's (as its flag.Getter returns it: int,
// uint64, float64, string, bool or time.Duration) or a config field's. name
// is how the message names the value ("-lr", or "config.json: model.N");
// the error is the whole one-line message, e.g. "-lr: NaN is not a finite
// positive number". Rules on numbers also accept the number as a string
// (one element of a [List]). A rule given a value type it does not handle
// panics: that is a bug of the command, not bad input.
type Rule func(name string, v any) error

// Rules maps flag names (no dash) to their rules.
type Rules map[string]Rule

// Validate checks every flag of fs, in lexical order, against its rule and
// returns the first failure as a [*UsageError]. Every flag must have a rule
// and every rule a flag: Validate panics otherwise (a bug of the command).
func Validate(fs *flag.FlagSet, rules Rules) error {
	for name := range rules {
		if fs.Lookup(name) == nil {
			panic(fmt.Sprintf("cli: %s: rule for an undefined flag -%s", fs.Name(), name))
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if rules[f.Name] == nil {
			panic(fmt.Sprintf("cli: %s: flag -%s has no rule", fs.Name(), f.Name))
		}
		if _, ok := f.Value.(flag.Getter); !ok {
			panic(fmt.Sprintf("cli: %s: flag -%s has no Get method", fs.Name(), f.Name))
		}
	})
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err == nil {
			err = rules[f.Name]("-"+f.Name, f.Value.(flag.Getter).Get())
		}
	})
	return Usage(err)
}

// Check applies r to the value v named name (a config field, a derived
// value) and returns its failure as a [*UsageError].
func Check(name string, v any, r Rule) error {
	return Usage(r(name, v))
}

// First returns the first non-nil error of errs as a [*UsageError].
func First(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return Usage(err)
		}
	}
	return nil
}

func badType(name string, v any) {
	panic(fmt.Sprintf("cli: rule for %s: unsupported value type %T", name, v))
}

// Any accepts every value (seeds, booleans, free-form paths and text).
func Any(string, any) error { return nil }

// Positive accepts an integer > 0, a duration > 0 or a finite number > 0.
func Positive(name string, v any) error {
	switch x := v.(type) {
	case int:
		if x <= 0 {
			return fmt.Errorf("%s: %d is not a positive integer", name, x)
		}
	case uint64:
		if x == 0 {
			return fmt.Errorf("%s: 0 is not a positive integer", name)
		}
	case time.Duration:
		if x <= 0 {
			return fmt.Errorf("%s: %v is not a positive duration", name, x)
		}
	case float64:
		if !(x > 0) || math.IsInf(x, 0) {
			return fmt.Errorf("%s: %v is not a finite positive number", name, x)
		}
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			return fmt.Errorf("%s: %q is not a finite positive number", name, x)
		}
	default:
		badType(name, v)
	}
	return nil
}

// NonNegative accepts an integer >= 0, a duration >= 0 or a finite number
// >= 0.
func NonNegative(name string, v any) error {
	switch x := v.(type) {
	case int:
		if x < 0 {
			return fmt.Errorf("%s: %d is not a non-negative integer", name, x)
		}
	case time.Duration:
		if x < 0 {
			return fmt.Errorf("%s: %v is not a non-negative duration", name, x)
		}
	case float64:
		if !(x >= 0) || math.IsInf(x, 0) {
			return fmt.Errorf("%s: %v is not a finite non-negative number", name, x)
		}
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil || !(f >= 0) || math.IsInf(f, 0) {
			return fmt.Errorf("%s: %q is not a finite non-negative number", name, x)
		}
	default:
		badType(name, v)
	}
	return nil
}

// IntIn accepts an integer in [lo, hi] (an int, or a string holding one).
func IntIn(lo, hi int) Rule {
	return func(name string, v any) error {
		switch x := v.(type) {
		case int:
			if x < lo || x > hi {
				return fmt.Errorf("%s: %d is not an integer in [%d, %d]", name, x, lo, hi)
			}
		case string:
			n, err := strconv.Atoi(x)
			if err != nil || n < lo || n > hi {
				return fmt.Errorf("%s: %q is not an integer in [%d, %d]", name, x, lo, hi)
			}
		default:
			badType(name, v)
		}
		return nil
	}
}

// Fraction accepts a number in [0, 1].
func Fraction(name string, v any) error {
	x, ok := v.(float64)
	if !ok {
		badType(name, v)
	}
	if !(x >= 0 && x <= 1) {
		return fmt.Errorf("%s: %v is not a fraction in [0, 1]", name, x)
	}
	return nil
}

// OpenFraction accepts a number in (0, 1).
func OpenFraction(name string, v any) error {
	x, ok := v.(float64)
	if !ok {
		badType(name, v)
	}
	if !(x > 0 && x < 1) {
		return fmt.Errorf("%s: %v is not a fraction in (0, 1)", name, x)
	}
	return nil
}

// OneOf accepts one of the strings values: `unknown -dtype "float16" (want
// float32 or float64)`.
func OneOf(values ...string) Rule {
	return func(name string, v any) error {
		s, ok := v.(string)
		if !ok {
			badType(name, v)
		}
		for _, w := range values {
			if s == w {
				return nil
			}
		}
		return fmt.Errorf("unknown %s %q (want %s)", name, s, Alternatives(values))
	}
}

// Alternatives writes values as "a, b or c".
func Alternatives(values []string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

// NonEmpty refuses the empty string.
func NonEmpty(name string, v any) error {
	s, ok := v.(string)
	if !ok {
		badType(name, v)
	}
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("%s is empty", name)
	}
	return nil
}

// List accepts a comma-separated list whose every element (spaces trimmed)
// item accepts; an empty list or element is refused.
func List(item Rule) Rule {
	return func(name string, v any) error {
		s, ok := v.(string)
		if !ok {
			badType(name, v)
		}
		if strings.TrimSpace(s) == "" {
			return fmt.Errorf("%s: empty list", name)
		}
		for _, e := range strings.Split(s, ",") {
			e = strings.TrimSpace(e)
			if e == "" {
				return fmt.Errorf("%s: empty element in %q", name, s)
			}
			if err := item(name, e); err != nil {
				return err
			}
		}
		return nil
	}
}

// Optional accepts the empty string, and otherwise what r accepts.
func Optional(r Rule) Rule {
	return func(name string, v any) error {
		if s, ok := v.(string); ok && s == "" {
			return nil
		}
		return r(name, v)
	}
}
