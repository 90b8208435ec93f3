// Package cli makes the command lines of gdattn's examples and bench tools
// strict and uniform: every flag value is checked against a declared rule
// before any work starts, flags that do not apply to the chosen mode and
// stray positional arguments are refused, and every error reaches the user
// as exactly one line naming the flag or file, never as a Go stack trace.
//
// It lives in the module's internal/ (not examples/internal/) so that both
// examples/ and bench/ can import it; it is flag glue, not a library API.
//
// # Exit statuses
//
//	0  success, or -h / -help (the usage goes to stdout)
//	2  the command line or an input it names is refused before any work
//	   starts: a flag that does not parse, a value out of its range, a flag
//	   that does not apply to the chosen mode, a positional argument, a
//	   missing, unreadable or corrupt input file or checkpoint (including a
//	   checkpoint config with sizes out of range), an output that is one of
//	   the inputs ([NotInputs]), an output location that cannot be written
//	   or a checkpoint location holding something else ([OutCheckpoint]).
//	   These errors are [*UsageError] values, and nothing is printed before
//	   them (clitest checks it).
//	1  a failure once the work has started (a diverging training, a full
//	   disk, a device error), and a recovered panic ("internal error: ...",
//	   a bug: the validations are meant to refuse every bad input first).
//
// # Usage
//
// A command declares its flags on a [NewFlagSet], parses them with [Parse]
// (which prints the usage for -h and refuses positional arguments), checks
// every flag against its [Rule] with [Validate], then checks the flags that
// depend on the mode with [Needs] and [NotWith]:
//
//	func main() { cli.Main("synthetic", func() error { return command(os.Args[1:]) }) }
//
//	func command(args []string) error {
//		fs := cli.NewFlagSet("synthetic")
//		lr := fs.Float64("lr", 1e-2, "Adam learning rate")
//		eval := fs.String("eval", "", "evaluate this checkpoint")
//		x := fs.String("x", "", "with -eval: contexts")
//		if err := cli.Parse(fs, args, usage); err != nil {
//			return err // flag.ErrHelp after -h: Main exits 0
//		}
//		set := cli.Given(fs)
//		if err := cli.Validate(fs, cli.Rules{"lr": cli.Positive, "eval": cli.Any, "x": cli.Any}); err != nil {
//			return err // "-lr: NaN is not a finite positive number"
//		}
//		if err := cli.Needs(set, *eval != "", "-eval", "x"); err != nil {
//			return err // "-x needs -eval"
//		}
//		...
//	}
//
// [Validate] requires a rule for every flag of the set (and no rule for an
// unknown flag), so a new flag cannot be added without deciding its range.
// The same rules check the fields of a decoded config file with [Check].
//
// [Main] prints an error as "name: message" on one line (newlines inside
// the message become "; "), exits 2 for a [*UsageError] and 1 otherwise, and
// recovers a panic of the main goroutine into one "name: internal error:
// ..." line. A panic in another goroutine, or a fatal runtime error such as
// running out of memory, cannot be recovered: the size limits of the rules
// are what keep absurd values from reaching the allocator.
package cli
