// Package clitest runs a command's binary on bad command lines and checks
// the contract of package cli: the exit status, exactly one line on stderr
// that names the flag or file, and no Go stack trace. Each example's
// cli_test.go builds its binary once with [Build] and runs a table of
// [Case] values with [Run].
package clitest

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Case is one command line and what it must give.
type Case struct {
	Name string
	Args []string
	// Code is the wanted exit status: 2 for a refused command line or
	// input, 1 for a failure once the work has started, 0 for success
	// (-h; stderr must then be empty and Want is looked for on stdout).
	Code int
	// Want are substrings of the stderr line (the flag or file it names).
	Want []string
	// Stdin is the command's standard input (empty: none).
	Stdin string
}

// Usage is a case refused as a usage or input error: exit status 2.
func Usage(name string, args []string, want ...string) Case {
	return Case{Name: name, Args: args, Code: 2, Want: want}
}

// Failure is a case that fails once the work has started: exit status 1.
func Failure(name string, args []string, want ...string) Case {
	return Case{Name: name, Args: args, Code: 1, Want: want}
}

// OK is a case that succeeds (-h, or a quick valid run): exit status 0,
// want on stdout, nothing on stderr.
func OK(name string, args []string, want ...string) Case {
	return Case{Name: name, Args: args, Code: 0, Want: want}
}

// Timeout bounds each run: every case must fail before any work starts,
// so a run that takes longer has hung or started training.
const Timeout = 30 * time.Second

// Build compiles the main package in dir (usually ".") into a temporary
// directory and returns the binary's path.
func Build(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cmd")
	out, err := exec.Command("go", "build", "-o", bin, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s: %v\n%s", dir, err, out)
	}
	return bin
}

// stackMarks are texts of a Go panic or runtime stack trace.
var stackMarks = []string{"goroutine ", "panic:", ".go:", "runtime."}

// Run runs bin with each case's arguments (in an empty working directory)
// and checks the exit status, that stderr holds exactly one line starting
// with "name: " and containing every Want (for a refusal, exit status 2,
// nothing on stdout either: no progress before it), and that no stack trace
// is printed on either stream.
func Run(t *testing.T, bin, name string, cases []Case) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			code, stdout, stderr := execIn(t, bin, c.Stdin, c.Args...)
			if code != c.Code {
				t.Errorf("%v: exit status %d, want %d; stderr %q", c.Args, code, c.Code, stderr)
			}
			for _, m := range stackMarks {
				if strings.Contains(stderr, m) || strings.Contains(stdout, m) {
					t.Errorf("%v: output holds %q (a stack trace?): stderr %q", c.Args, m, stderr)
				}
			}
			if c.Code == 0 {
				if stderr != "" {
					t.Errorf("%v: stderr %q, want none", c.Args, stderr)
				}
				for _, w := range c.Want {
					if !strings.Contains(stdout, w) {
						t.Errorf("%v: stdout does not mention %q", c.Args, w)
					}
				}
				return
			}
			if c.Code == 2 && stdout != "" {
				t.Errorf("%v: refused, but printed %q on stdout first: a refusal comes before any work or progress", c.Args, stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
				t.Errorf("%v: stderr %q, want exactly one line", c.Args, stderr)
			}
			if !strings.HasPrefix(stderr, name+": ") {
				t.Errorf("%v: stderr %q, want it to start with %q", c.Args, stderr, name+": ")
			}
			for _, w := range c.Want {
				if !strings.Contains(stderr, w) {
					t.Errorf("%v: stderr %q does not mention %q", c.Args, stderr, w)
				}
			}
		})
	}
}

// Exec runs bin with args in an empty working directory, within [Timeout],
// and returns its exit status and output.
func Exec(t *testing.T, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return execIn(t, bin, "", args...)
}

func execIn(t *testing.T, bin, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = t.TempDir()
	var o, e bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v: still running after %v (hung, or started working)", args, Timeout)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("%v: %v", args, err)
	}
	return code, o.String(), e.String()
}

// FIFO makes a named pipe in a temporary directory, with no writer, and
// returns its path: an input a command must refuse at once, not wait on.
func FIFO(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := mkfifo(p); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	return p
}
