// Command benchtab turns `go test -bench` output into the markdown table of
// bench/RESULTS.md: one row per benchmark with ms/step (wall), CPU ms/step,
// allocations, allocated MB, peak heap and RSS, and GFLOP/s where reported.
//
//	GOMAXPROCS=1 go test ./bench -run '^$' -bench . -benchmem | tee bench/out/gotest.txt
//	go run ./bench/benchtab < bench/out/gotest.txt
//
// With -count > 1 a benchmark appears on several lines; its row shows the
// median of each column.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gdattn/gdattn/bench"
	"github.com/gdattn/gdattn/internal/cli"
)

// columns lists the table's columns: header, unit in the benchmark line,
// scale applied, format.
var columns = []struct {
	head, unit string
	scale      float64
	format     string
}{
	{"ms/step", "ns/op", 1e-6, "%.3g"},
	{"CPU ms/step", "cpu-ms/op", 1, "%.3g"},
	{"allocs/step", "allocs/op", 1, "%.0f"},
	{"alloc MB/step", "B/op", 1e-6, "%.3g"},
	{"peak heap MB", "peak-heap-MB", 1, "%.0f"},
	{"peak RSS MB", "peak-RSS-MB", 1, "%.0f"},
	{"GFLOP/s", "GFLOP/s", 1, "%.3g"},
	{"GFLOP/CPU-s", "GFLOP/cpu-s", 1, "%.3g"},
}

func main() { cli.Main("benchtab", func() error { return command(os.Args[1:], os.Stdin, os.Stdout) }) }

// command checks the command line args (no flags but -h, no arguments) and
// converts in to the table on out. The input is the only input: an input
// run cannot read or holds no results is a usage error (exit status 2).
func command(args []string, in io.Reader, out io.Writer) error {
	fs := cli.NewFlagSet("benchtab")
	err := cli.Parse(fs, args, func(w io.Writer) {
		fmt.Fprintf(w, "Usage: benchtab < gotest.txt\n\nReads `go test -bench` output on stdin and writes its markdown table to stdout.\nExit status: 0 done, 2 bad command line or input (one line on stderr).\n")
	})
	if err != nil {
		return err
	}
	return cli.Usage(run(in, out))
}

// num formats v with format, writing large values without an exponent.
func num(format string, v float64) string {
	s := fmt.Sprintf(format, v)
	if strings.Contains(s, "e+") {
		s = fmt.Sprintf("%.0f", v)
	}
	return s
}

func run(in io.Reader, out io.Writer) error {
	var order []string
	vals := map[string]map[string][]float64{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // not a result line
		}
		name := f[0]
		if vals[name] == nil {
			vals[name] = map[string][]float64{}
			order = append(order, name)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return fmt.Errorf("%q: value %q: %w", sc.Text(), f[i], err)
			}
			vals[name][f[i+1]] = append(vals[name][f[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(order) == 0 {
		return fmt.Errorf("no benchmark results in the input")
	}
	fmt.Fprint(out, "| benchmark |")
	sep := "|---|"
	for _, c := range columns {
		fmt.Fprintf(out, " %s |", c.head)
		sep += "---:|"
	}
	fmt.Fprintf(out, "\n%s\n", sep)
	for _, name := range order {
		fmt.Fprintf(out, "| %s |", strings.TrimPrefix(name, "Benchmark"))
		for _, c := range columns {
			v, ok := vals[name][c.unit]
			if !ok {
				fmt.Fprint(out, " |")
				continue
			}
			fmt.Fprintf(out, " %s |", num(c.format, bench.Median(v)*c.scale))
		}
		fmt.Fprintln(out)
	}
	return nil
}
