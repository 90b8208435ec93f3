package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestCommandLine runs the regression binary on bad command lines and bad
// inputs: each is refused before any training, with exit status 2 and one
// line on stderr naming the flag or file, never a stack trace.
func TestCommandLine(t *testing.T) {
	bin := clitest.Build(t, ".")
	dir := t.TempDir()
	ck, err := filepath.Abs(filepath.Join("..", "..", "gd", "testdata", "numpy-gaussian-ckpt")) // d = 3, d_y = 2, N = 4
	if err != nil {
		t.Fatal(err)
	}
	cat, err := filepath.Abs(filepath.Join("..", "..", "gd", "testdata", "numpy-ckpt"))
	if err != nil {
		t.Fatal(err)
	}
	task, _ := data.NewLinearRegression(data.LinearRegressionConfig{D: 3, DY: 2, N: 4})
	b, _ := task.Sample(3, rand.New(rand.NewPCG(1, 1)))
	x, y := writeRegression(t, dir, b)
	other, _ := data.NewLinearRegression(data.LinearRegressionConfig{D: 3, DY: 1, N: 4})
	b1, _ := other.Sample(3, rand.New(rand.NewPCG(1, 1)))
	sub := filepath.Join(dir, "dy1")
	os.Mkdir(sub, 0o755)
	_, y1 := writeRegression(t, sub, b1)
	garbage := filepath.Join(dir, "garbage.npy")
	os.WriteFile(garbage, []byte("not an npy file"), 0o644)
	eval := func(more ...string) []string {
		return append([]string{"-eval", ck, "-x", x, "-y", y, "-pred", filepath.Join(dir, "p.npy")}, more...)
	}
	cases := []clitest.Case{
		clitest.OK("help", []string{"-h"}, "Usage:", "-steps", "-eval"),
		clitest.OK("eval", eval(), "wrote query predictions (3, 2)"),
		clitest.Usage("stray argument", []string{"train"}, `unexpected argument "train"`),
		clitest.Usage("unknown flag", []string{"-nope"}, "-nope"),
		clitest.Usage("bad exp", []string{"-exp", "cubic"}, "-exp"),
		clitest.Usage("bad steps", []string{"-steps", "1,0"}, "-steps"),
		clitest.Usage("huge steps", []string{"-steps", "1000"}, "-steps"),
		clitest.Usage("bad Ls", []string{"-Ls", "16,x"}, "-Ls"),
		clitest.Usage("zero L", []string{"-L", "0"}, "-L"),
		clitest.Usage("zero M", []string{"-M", "0"}, "-M"),
		clitest.Usage("zero d", []string{"-d", "0"}, "-d"),
		clitest.Usage("huge N", []string{"-N", "2000000000"}, "-N"),
		clitest.Usage("negative noise", []string{"-noise", "-1"}, "-noise"),
		clitest.Usage("NaN noise", []string{"-noise", "NaN"}, "-noise"),
		clitest.Usage("NaN lr", []string{"-lr", "NaN"}, "-lr"),
		clitest.Usage("zero epochs", []string{"-epochs", "0"}, "-epochs"),
		clitest.Usage("zero seeds", []string{"-seeds", "0"}, "-seeds"),
		clitest.Usage("dtype", []string{"-dtype", "float16"}, "-dtype"),
		clitest.Usage("x without eval", []string{"-x", x}, "-x needs -eval"),
		clitest.Usage("pred without eval", []string{"-pred", "p.npy"}, "-pred needs -eval"),
		clitest.Usage("eval without y", []string{"-eval", ck, "-x", x}, "-eval needs -x and -y"),
		clitest.Usage("training flag with eval", eval("-L", "8"), "-L does not apply to -eval"),
		clitest.Usage("empty pred", eval("-pred", ""), "-pred"),
		clitest.Usage("missing checkpoint", []string{"-eval", filepath.Join(dir, "nope"), "-x", x, "-y", y}, "nope"),
		clitest.Usage("missing x", []string{"-eval", ck, "-x", filepath.Join(dir, "nope.npy"), "-y", y}, "nope.npy"),
		clitest.Usage("garbage y", []string{"-eval", ck, "-x", x, "-y", garbage}, "garbage.npy"),
		clitest.Usage("y of another d_y", []string{"-eval", ck, "-x", x, "-y", y1}, "-y"),
		clitest.Usage("x as y", []string{"-eval", ck, "-x", y, "-y", y}, "-x"),
		clitest.Usage("categorical checkpoint", []string{"-eval", cat, "-x", x, "-y", y}, "categorical"),
	}
	clitest.Run(t, bin, "regression", cases)
}

// TestInputAndOutputFiles: -x and -y read only regular files (a device or a
// FIFO with no writer is refused at once, naming the flag); -pred,
// -results, -figures and -out, and every file and checkpoint the run would
// write in them, are checked before any work starts (exit status 2, one
// line naming the flag, nothing written); a run prints the path of every
// file it writes.
func TestInputAndOutputFiles(t *testing.T) {
	bin := clitest.Build(t, ".")
	dir := t.TempDir()
	ck, err := filepath.Abs(filepath.Join("..", "..", "gd", "testdata", "numpy-gaussian-ckpt")) // d = 3, d_y = 2, N = 4
	if err != nil {
		t.Fatal(err)
	}
	task, _ := data.NewLinearRegression(data.LinearRegressionConfig{D: 3, DY: 2, N: 4})
	b, _ := task.Sample(3, rand.New(rand.NewPCG(1, 1)))
	x, y := writeRegression(t, dir, b)
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A results directory whose linear.json is a directory, and a
	// checkpoint directory whose gd-linear-K1 is a regular file.
	res := filepath.Join(dir, "res")
	if err := os.MkdirAll(filepath.Join(res, "linear.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	ckOut := filepath.Join(dir, "ck")
	if err := os.MkdirAll(ckOut, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ckOut, "gd-linear-K1"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	ylink := filepath.Join(dir, "ylink.npy")
	if err := os.Symlink(y, ylink); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh") // must stay absent: every case below is refused
	fifo := clitest.FIFO(t)
	a := func(s ...string) []string { return s }
	eval := func(xp, yp, pred string) []string { return a("-eval", ck, "-x", xp, "-y", yp, "-pred", pred) }
	train := func(more ...string) []string {
		return append(a("-L", "64", "-M", "32", "-epochs", "1", "-seeds", "1", "-steps", "1", "-Ls", "32",
			"-results", filepath.Join(fresh, "res"), "-figures", filepath.Join(fresh, "fig"), "-out", filepath.Join(fresh, "ck")), more...)
	}
	cases := []clitest.Case{
		clitest.Usage("x fifo", eval(fifo, y, filepath.Join(fresh, "p.npy")), "-x", fifo, "named pipe"),
		clitest.Usage("x device", eval("/dev/zero", y, filepath.Join(fresh, "p.npy")), "-x", "/dev/zero", "character device"),
		clitest.Usage("y fifo", eval(x, fifo, filepath.Join(fresh, "p.npy")), "-y", fifo, "named pipe"),
		clitest.Usage("y device", eval(x, "/dev/zero", filepath.Join(fresh, "p.npy")), "-y", "/dev/zero"),
		clitest.Usage("x directory", eval(dir, y, filepath.Join(fresh, "p.npy")), "-x", "directory"),
		clitest.Usage("pred is a directory", eval(x, y, dir), "-pred", dir),
		clitest.Usage("pred is -x", eval(x, y, x), "-pred", "is -x"),
		clitest.Usage("pred is -y through a link", eval(x, y, ylink), "-pred", "is -y"),
		clitest.Usage("pred inside the checkpoint", eval(x, y, filepath.Join(ck, "new.npy")), "-pred", "inside -eval"),
		clitest.Usage("pred under a file", eval(x, y, filepath.Join(file, "p.npy")), "-pred", "not a directory"),
		// Not a device such as /dev/null: a command that wrongly let it
		// through would rename its output over it (the write is atomic),
		// and as root replace the system's /dev/null.
		clitest.Usage("pred is a FIFO", eval(x, y, fifo), "-pred", fifo, "not a regular file"),
		clitest.Usage("out is a file", train("-out", file), "-out", file),
		clitest.Usage("out under a file", train("-out", filepath.Join(file, "ck")), "-out", "not a directory"),
		clitest.Usage("checkpoint is a file", train("-out", ckOut), "-out", filepath.Join(ckOut, "gd-linear-K1")),
		clitest.Usage("results is a file", train("-results", file), "-results", file),
		clitest.Usage("results file is a directory", train("-results", res), "-results", filepath.Join(res, "linear.json")),
		clitest.Usage("figures is a file", train("-figures", file), "-figures", file),
		clitest.Usage("figures under a file", train("-figures", filepath.Join(file, "fig")), "-figures", "not a directory"),
		clitest.Usage("nonlinear: results is a file", train("-exp", "nonlinear", "-results", file), "-results", file),
	}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		cases = append(cases,
			clitest.Usage("pred unwritable", eval(x, y, filepath.Join(ro, "p.npy")), "-pred", "cannot write"),
			clitest.Usage("results unwritable", train("-results", filepath.Join(ro, "res")), "-results", "cannot write"))
	}
	clitest.Run(t, bin, "regression", cases)
	if _, err := os.Stat(fresh); err == nil {
		t.Errorf("a refused command line wrote %s", fresh)
	}

	// A run that is let through says where it wrote every file, creating
	// the directories it needs.
	pred := filepath.Join(dir, "new", "sub", "p.npy")
	out := filepath.Join(dir, "run")
	clitest.Run(t, bin, "regression", []clitest.Case{
		clitest.OK("eval into a new directory", eval(x, y, pred), "wrote query predictions (3, 2) to "+pred),
		clitest.OK("run", train("-quick", "-quiet", "-batch", "16", "-d", "3", "-N", "4", "-results", filepath.Join(out, "res"),
			"-figures", filepath.Join(out, "fig"), "-out", filepath.Join(out, "ck")),
			"wrote "+filepath.Join(out, "res", "linear.json"), "wrote "+filepath.Join(out, "res", "linear.csv"),
			"wrote "+filepath.Join(out, "fig", "regression-linear-quick.png"),
			"wrote "+filepath.Join(out, "res", "nonlinear.json"), "wrote "+filepath.Join(out, "res", "nonlinear.csv"),
			"wrote "+filepath.Join(out, "fig", "regression-nonlinear-quick.png"),
			"saved checkpoint "+filepath.Join(out, "ck", "gd-linear-K1-quick")),
	})
	for _, f := range []string{pred, filepath.Join(out, "res", "linear.json"), filepath.Join(out, "fig", "regression-nonlinear-quick.png"),
		filepath.Join(out, "ck", "gd-linear-K1-quick", "config.json")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("not written: %v", err)
		}
	}
}
