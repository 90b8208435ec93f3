package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph/npy"
	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestEvalPrintsMSE checks that -eval prints the query MSE when the query
// rows of -y are known (the value recomputed from -pred's file and the
// targets), the Bayes error with -bayes (inputs written by
// data.Batch.WriteNPY), and says why there is none when a query row is NaN.
func TestEvalPrintsMSE(t *testing.T) {
	bin := clitest.Build(t, ".")
	dir := t.TempDir()
	ck, err := filepath.Abs(filepath.Join("..", "..", "gd", "testdata", "numpy-gaussian-ckpt")) // d = 3, d_y = 2, N = 4
	if err != nil {
		t.Fatal(err)
	}
	task, _ := data.NewLinearRegression(data.LinearRegressionConfig{D: 3, DY: 2, N: 4, Noise: 0.1})
	b, err := task.Sample(6, rand.New(rand.NewPCG(3, 1)))
	if err != nil {
		t.Fatal(err)
	}
	paths, err := b.WriteNPY(filepath.Join(dir, "in"))
	if err != nil || len(paths) != 3 {
		t.Fatalf("WriteNPY: %v, %v (want x, y and bayes)", paths, err)
	}
	pred := filepath.Join(dir, "p.npy")
	code, out, stderr := clitest.Exec(t, bin, "-eval", ck, "-x", paths[0], "-y", paths[1], "-bayes", paths[2], "-pred", pred)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	p, err := npy.ReadFile(pred)
	if err != nil {
		t.Fatal(err)
	}
	mse := 0.0
	for i, y := range b.QueryTargets() {
		mse += (p.F64[i] - y) * (p.F64[i] - y)
	}
	mse /= float64(len(p.F64))
	want := fmt.Sprintf("query MSE %.6g over 6 contexts (per target entry); Bayes error %.6g", mse, b.Oracle())
	if !strings.Contains(out, want) {
		t.Errorf("stdout %q, want it to contain %q", out, want)
	}

	// No -bayes: the MSE alone.
	if _, out, _ = clitest.Exec(t, bin, "-eval", ck, "-x", paths[0], "-y", paths[1], "-pred", pred); !strings.Contains(out, fmt.Sprintf("query MSE %.6g over 6 contexts (per target entry)\n", mse)) {
		t.Errorf("without -bayes: stdout %q", out)
	}
	// A NaN query target: predictions, no MSE, and why.
	r := append([]float64(nil), b.R...)
	r[(b.T-1)*b.DY] = math.NaN()
	yNaN := filepath.Join(dir, "ynan.npy")
	if err := npy.WriteFile(yNaN, &npy.Array{Shape: []int{b.B, b.T, b.DY}, Dtype: npy.Float64, F64: r}); err != nil {
		t.Fatal(err)
	}
	code, out, _ = clitest.Exec(t, bin, "-eval", ck, "-x", paths[0], "-y", yNaN, "-pred", pred)
	if code != 0 || !strings.Contains(out, "query MSE: not computed") {
		t.Errorf("NaN query target: exit %d, stdout %q", code, out)
	}
	// A -bayes of the wrong length is refused before any work.
	code, _, stderr = clitest.Exec(t, bin, "-eval", ck, "-x", paths[0], "-y", paths[1], "-bayes", paths[1], "-pred", pred)
	if code != 2 || !strings.Contains(stderr, "-bayes") {
		t.Errorf("bad -bayes: exit %d, stderr %q", code, stderr)
	}
}
