// Command gpu is the measuring side of a GPU run of graph/cuda: each
// subcommand runs one stage of scripts/gpu-device.sh on a device and prints
// its results as JSON lines on stdout (one object per result, written as
// soon as it is known, so that a stage cut short by its time limit still
// leaves what it measured), with a readable line per result on stderr.
//
//	gpu exact  -device cuda [-kmax 6]                 GD vs the functional-GD reference through the executor
//	gpu parity -device cuda [-steps 3]                first training losses, CPU (Go VM) vs device
//	gpu time   -device cuda [-workloads ...]          float32 step times and peak device memory
//	gpu curve  -device cuda -corpus F [-budget 2m]    the language paper preset trained for a time budget
//	gpu profile -device cuda [-workloads ...]       where a training step's time goes, by kernel and product
//	gpu peer-args [-workloads ...]                    the bench/peer/peer.py sizes of the timed workloads
//	gpu report -in DIR -out bench/results/gpu.md      the markdown report of a run's $OUT files
//
// -device is cuda (graph/cuda on GPU 0; build with -tags gdcuda), emulator
// (graph/cuda's CPU emulator of the same kernels; -tags cudaemu: slow, for
// rehearsing the stages without a GPU) or cpu (Gorgonia's VM, no executor).
// The GPU machine has no Go toolchain: scripts/gpu-bundle.sh builds this
// command with -tags gdcuda, and scripts/gpu-device.sh runs it there.
//
// Every exit status is 0 (done, with every check within its tolerance), 1
// (an error, or a check out of tolerance: the JSON lines say which) or 2 (a
// bad command line, one line naming the flag).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/gdattn/gdattn/graph/cuda"
	"github.com/gdattn/gdattn/internal/cli"
)

func main() { cli.Main("gpu", func() error { return command(os.Args[1:], os.Stdout, os.Stderr) }) }

const usage = `Usage: gpu <subcommand> [flags]

Subcommands (each prints JSON lines on stdout, readable lines on stderr):
  exact      GD model vs the functional-GD reference (5 kernels, K = 1..kmax) on a device
  parity     the first training losses of GD, Trained TF, GD LM and GPT on the CPU and a device
  time       float32 training step times and peak device memory of the benchmark workloads
  curve      the language model's paper preset trained for a time budget on a corpus
  profile    where a float32 training step spends its time, by kernel and product
  peer-args  the bench/peer/peer.py arguments of the workloads "time" measures
  report     bench/results/gpu.md from the files a GPU run wrote under $OUT

"gpu <subcommand> -h" lists a subcommand's flags.
`

// command runs the subcommand args[0] with its flags args[1:].
func command(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return cli.Usagef("no subcommand (want exact, parity, time, curve, profile, peer-args or report; -h for usage)")
	}
	out := &jsonLines{w: stdout, log: stderr}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "exact":
		return cmdExact(args[1:], out)
	case "parity":
		return cmdParity(args[1:], out)
	case "time":
		return cmdTime(args[1:], out)
	case "curve":
		return cmdCurve(args[1:], out)
	case "profile":
		return cmdProfile(args[1:], out)
	case "peer-args":
		return cmdPeerArgs(args[1:], stdout)
	case "report":
		return cmdReport(args[1:], stderr)
	}
	return cli.Usagef("unknown subcommand %q (want exact, parity, time, curve, profile, peer-args or report; -h for usage)", args[0])
}

// deviceNames are the values of -device.
var deviceNames = []string{"cuda", "emulator", "cpu"}

// openDevice opens a -device value: a backend, or nil for "cpu".
func openDevice(name string) (cuda.Backend, error) {
	switch name {
	case "cpu":
		return nil, nil
	case "cuda":
		b, err := cuda.Open(0)
		if err != nil {
			return nil, fmt.Errorf("-device cuda: %w", err)
		}
		return b, nil
	case "emulator":
		b, err := cuda.OpenEmulator()
		if err != nil {
			return nil, fmt.Errorf("-device emulator: %w", err)
		}
		return b, nil
	}
	return nil, cli.Usagef("-device %q: want cuda, emulator or cpu", name)
}

// useDevice opens a -device value as openDevice does and returns the
// backend (nil for "cpu"), its name for the results (deviceName) and a
// function that closes it (nothing to close for the CPU).
func useDevice(dev string) (be cuda.Backend, name string, closeDevice func(), err error) {
	if be, err = openDevice(dev); err != nil {
		return nil, "", nil, err
	}
	closeDevice = func() {}
	if be != nil {
		closeDevice = func() { be.Close() }
	}
	return be, deviceName(be), closeDevice, nil
}

// deviceName describes a backend for the results ("cpu" for nil).
func deviceName(b cuda.Backend) string {
	if b == nil {
		return "cpu (Gorgonia VM)"
	}
	return b.Name()
}

// jsonLines writes one JSON object per line to w and a readable line to log.
type jsonLines struct {
	mu  sync.Mutex
	w   io.Writer
	log io.Writer
}

// emit writes v as one JSON line and, when line is not empty, line to the log.
func (j *jsonLines) emit(v any, line string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if line != "" {
		fmt.Fprintln(j.log, line)
	}
	_, err = fmt.Fprintf(j.w, "%s\n", b)
	return err
}

// logf writes a readable line to the log only.
func (j *jsonLines) logf(format string, a ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	fmt.Fprintf(j.log, format+"\n", a...)
}

// errOutOfTolerance is returned (exit status 1) by a check subcommand when a
// result exceeded its tolerance; the JSON lines say which.
var errOutOfTolerance = errors.New("results out of tolerance (see the JSON lines)")
