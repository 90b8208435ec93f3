package main

import (
	"testing"

	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestCommandLine runs the gpu binary on bad command lines: each must be
// refused before anything is measured, with exit status 2 and one line on
// stderr naming the flag, never a stack trace. Without -tags gdcuda or
// cudaemu, -device cuda is a device error (exit status 1), not a crash.
func TestCommandLine(t *testing.T) {
	bin := clitest.Build(t, ".")
	a := func(s ...string) []string { return s }
	clitest.Run(t, bin, "gpu", []clitest.Case{
		clitest.OK("help", a("-h"), "Usage: gpu", "exact", "report"),
		clitest.OK("subcommand help", a("parity", "-h"), "Usage: gpu parity", "-tol32"),
		clitest.Usage("no subcommand", a(), "no subcommand"),
		clitest.Usage("unknown subcommand", a("bench"), `unknown subcommand "bench"`),
		clitest.Usage("stray argument", a("exact", "K"), `unexpected argument "K"`),
		clitest.Usage("unknown device", a("exact", "-device", "tpu"), "-device"),
		clitest.Usage("kmax zero", a("exact", "-kmax", "0"), "-kmax"),
		clitest.Usage("kmax huge", a("exact", "-kmax", "100"), "-kmax"),
		clitest.Usage("negative tol", a("exact", "-tol", "-1"), "-tol"),
		clitest.Usage("steps zero", a("parity", "-steps", "0"), "-steps"),
		clitest.Usage("unknown workload", a("parity", "-workloads", "synthetic/gd-9"), "-workloads", "synthetic/gd-9"),
		clitest.Usage("unknown dtype", a("parity", "-dtypes", "float16"), "-dtypes"),
		clitest.Usage("cpu timing", a("time", "-device", "cpu"), "-device"),
		clitest.Usage("warmup zero", a("time", "-warmup", "0"), "-warmup"),
		clitest.Usage("negative min-time", a("time", "-min-time", "-1s"), "-min-time"),
		clitest.Usage("unknown fusion", a("time", "-fusion", "maybe"), "-fusion"),
		clitest.Usage("unknown graph", a("time", "-graph", "maybe"), "-graph"),
		clitest.Usage("peer-args workload", a("peer-args", "-workloads", "x"), "-workloads"),
		clitest.Usage("curve without corpus", a("curve", "-device", "cpu"), "-corpus"),
		clitest.Usage("curve missing corpus", a("curve", "-device", "cpu", "-corpus", "/nonexistent/c.txt"), "-corpus", "does not exist"),
		clitest.Usage("curve zero budget", a("curve", "-corpus", "x", "-budget", "0s"), "-budget"),
		clitest.Usage("curve preset", a("curve", "-corpus", "x", "-preset", "huge"), "-preset"),
		clitest.Usage("report without in", a("report"), "-in"),
		clitest.Usage("report missing in", a("report", "-in", "/nonexistent/out"), "-in"),
		clitest.Failure("no device", a("exact", "-device", "cuda", "-kmax", "1"), "-device cuda", "no CUDA device"),
		clitest.OK("peer args", a("peer-args", "-workloads", "synthetic/tf-2,language-paper/gdlm"),
			"synthetic/tf-2\t--model tf --depth 2 --batch 512 --dprime 5 --n 10 --d 10 --c 25 --cross",
			"language-paper/gdlm\t--model gdlm --depth 1 --batch 4 --dprime 512 --vocab 50258 --context 256 --heads 8"),
	})
}
