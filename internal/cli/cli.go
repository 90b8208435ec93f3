package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Exit statuses of [Main] (see the package documentation).
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// UsageError is a refused command line or input: [Main] prints it and exits
// with [ExitUsage].
type UsageError struct {
	Err error
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a [*UsageError] with the formatted message.
func Usagef(format string, a ...any) error {
	return &UsageError{Err: fmt.Errorf(format, a...)}
}

// Usage marks err as a usage or input error: a [*UsageError] wrapping it
// (err itself if it already is one; nil for nil).
func Usage(err error) error {
	if err == nil || IsUsage(err) {
		return err
	}
	return &UsageError{Err: err}
}

// IsUsage reports whether err is or wraps a [*UsageError].
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// Main runs run and exits the process with the status [Run] returns.
func Main(name string, run func() error) {
	os.Exit(Run(name, os.Stderr, run))
}

// Run calls run and returns the exit status: [ExitOK] for a nil error or
// [flag.ErrHelp], [ExitUsage] for a [*UsageError], [ExitFailure] for any
// other error and for a panic of run, which it recovers. Errors and panics
// are written to stderr as one line prefixed with name.
func Run(name string, stderr io.Writer, run func() error) (code int) {
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintln(stderr, OneLine(fmt.Sprintf("%s: internal error: %v", name, v)))
			code = ExitFailure
		}
	}()
	err := run()
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	fmt.Fprintln(stderr, OneLine(name+": "+err.Error()))
	if IsUsage(err) {
		return ExitUsage
	}
	return ExitFailure
}

// OneLine joins the non-blank lines of s with "; ", trimming each.
func OneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

// NewFlagSet returns an empty flag set for the command name that returns
// its errors (flag.ContinueOnError) and prints nothing itself: [Parse]
// reports errors as one line and writes the usage only for -h.
func NewFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// Parse parses args into fs and refuses positional arguments. For -h or
// -help it writes usage to stdout and returns [flag.ErrHelp] ([Main] then
// exits 0); every other failure is a one-line [*UsageError] naming the
// flag, e.g. `invalid value "x" for flag -L: parse error (-h for usage)`.
// usage writes the whole help text to w ([PrintDefaults] lists the flags).
func Parse(fs *flag.FlagSet, args []string, usage func(w io.Writer)) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		usage(os.Stdout)
		return flag.ErrHelp
	}
	if err != nil {
		return Usagef("%v (-h for usage)", err)
	}
	return NoArgs(fs)
}

// NoArgs refuses the positional arguments left after parsing fs.
func NoArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q (flags only; -h for usage)", fs.Arg(0))
	}
	return nil
}

// PrintDefaults writes fs's flags, with their help and defaults, to w.
func PrintDefaults(fs *flag.FlagSet, w io.Writer) {
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// Set is the set of flags given on a command line, by name (no dash).
type Set map[string]bool

// Given returns the flags of fs set on the command line (or by fs.Set).
func Given(fs *flag.FlagSet) Set {
	s := Set{}
	fs.Visit(func(f *flag.Flag) { s[f.Name] = true })
	return s
}

// Needs refuses the first of flags given in set when active is false, as
// "-x needs -eval" (mode describes the mode, e.g. "-eval").
func Needs(set Set, active bool, mode string, flags ...string) error {
	if active {
		return nil
	}
	for _, f := range flags {
		if set[f] {
			return Usagef("-%s needs %s", f, mode)
		}
	}
	return nil
}

// NotWith refuses the first of flags given in set when active is true, as
// "-kernel does not apply to -sweep".
func NotWith(set Set, active bool, mode string, flags ...string) error {
	if !active {
		return nil
	}
	for _, f := range flags {
		if set[f] {
			return Usagef("-%s does not apply to %s", f, mode)
		}
	}
	return nil
}

// Only refuses every flag given in set but those listed, when active is
// true: the flags of a mode that ignores the rest (e.g. -merge).
func Only(set Set, active bool, mode string, allowed ...string) error {
	if !active {
		return nil
	}
	ok := map[string]bool{}
	for _, f := range allowed {
		ok[f] = true
	}
	var names []string
	for f := range set {
		if !ok[f] {
			names = append(names, f)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	return Usagef("-%s does not apply to %s", names[0], mode)
}

// Required refuses an empty value of the flag name: "-ckpt is required".
func Required(name, value string) error {
	if value == "" {
		return Usagef("-%s is required", name)
	}
	return nil
}

// Exists refuses a path that cannot be stat'ed, naming the flag: "-corpus:
// stat x.txt: no such file or directory". want is "file", "dir" or "" (either).
func Exists(name, path, want string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return Usagef("-%s: %v", name, err)
	case want == "dir" && !fi.IsDir():
		return Usagef("-%s: %s is not a directory", name, path)
	case want == "file" && fi.IsDir():
		return Usagef("-%s: %s is a directory, want a file", name, path)
	}
	return nil
}

// InFile returns the first non-nil error of errs as a [*UsageError]
// prefixed with file: "ckpt/config.json: model.Blocks: 100000000 is not an
// integer in [1, 64]".
func InFile(file string, errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return Usagef("%s: %w", file, err)
		}
	}
	return nil
}
