package main

import (
	"testing"

	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestCommandLine runs the peer binary on bad command lines: each must be
// refused before any work (no child started, no PyTorch), with exit status
// 2 and one line on stderr naming the flag, never a stack trace.
func TestCommandLine(t *testing.T) {
	bin := clitest.Build(t, ".")
	a := func(s ...string) []string { return s }
	clitest.Run(t, bin, "peer", []clitest.Case{
		clitest.OK("help", a("-h"), "Usage: peer", "-workloads"),
		clitest.Usage("stray argument", a("-reps", "3", "synthetic/gd-1"), `unexpected argument "synthetic/gd-1"`),
		clitest.Usage("unknown flag", a("-repetitions", "3"), "-repetitions"),
		clitest.Usage("zero reps", a("-reps", "0"), "-reps"),
		clitest.Usage("negative threads", a("-threads", "-1"), "-threads"),
		clitest.Usage("unknown dtype", a("-dtype", "float16"), "-dtype"),
		clitest.Usage("unknown mode", a("-mode", "eval"), "-mode"),
		clitest.Usage("unknown workload", a("-workloads", "synthetic/gd-1,nope"), "-workloads", "nope"),
		clitest.Usage("empty workload", a("-workloads", "synthetic/gd-1,"), "-workloads"),
		clitest.Usage("paper preset without -lm-paper", a("-workloads", "language/gd-paper"), "-workloads", "-lm-paper"),
		clitest.Usage("unknown check workload", a("-check-workloads", "nope"), "-check-workloads", "nope"),
		clitest.Usage("unknown impl", a("-impl", "mirror,torch"), "-impl", "torch"),
		clitest.Usage("negative warmup", a("-warmup", "-1"), "-warmup"),
		clitest.Usage("zero min-steps", a("-min-steps", "0"), "-min-steps"),
		clitest.Usage("negative min-time", a("-min-time", "-1s"), "-min-time"),
		clitest.Usage("unparsable min-time", a("-min-time", "5"), "-min-time"),
		clitest.Usage("zero N", a("-N", "10,0"), "-N"),
		clitest.Usage("unparsable N", a("-N", "ten"), "-N"),
		clitest.Usage("N suffix on a language workload", a("-workloads", "language/gd-small/N=10"), "-workloads"),
		clitest.Usage("empty python", a("-python", ""), "-python"),
		clitest.Usage("missing peer.py", a("-peer", "/nonexistent/peer.py"), "-peer", "/nonexistent/peer.py"),
		clitest.Usage("keep with nocheck", a("-nocheck", "-keep"), "-keep does not apply to -nocheck"),
		clitest.Usage("check-workloads with nocheck", a("-nocheck", "-check-workloads", "synthetic/gd-1"), "-check-workloads does not apply to -nocheck"),
		clitest.Usage("workload without worker", a("-workload", "synthetic/gd-1"), "-workload needs -worker"),
		clitest.Usage("unknown worker mode", a("-worker", "eval", "-workload", "synthetic/gd-1"), "-worker"),
		clitest.Usage("worker without workload", a("-worker", "train"), "-workload is required"),
		clitest.Usage("worker of an unknown workload", a("-worker", "train", "-workload", "nope"), "-workload", "nope"),
		clitest.Usage("driver flag with worker", a("-worker", "train", "-workload", "synthetic/gd-1", "-reps", "3"), "-reps does not apply to -worker"),
	})
}
