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
