package regression

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph/npy"
)

// writeRegression writes x (B, N+1, d) and y (B, N+1, d_y) .npy files.
func writeRegression(t *testing.T, dir string, b *data.Batch) (string, string) {
	t.Helper()
	xp, yp := filepath.Join(dir, "x.npy"), filepath.Join(dir, "y.npy")
	if err := npy.WriteFile(xp, &npy.Array{Shape: []int{b.B, b.T, b.D}, Dtype: npy.Float64, F64: b.X}); err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteFile(yp, &npy.Array{Shape: []int{b.B, b.T, b.DY}, Dtype: npy.Float64, F64: b.R}); err != nil {
		t.Fatal(err)
	}
	return xp, yp
}

// TestNumpyCheckpointEval evaluates the checkpoint written by numpy alone
// (gd/testdata/write_gaussian_ckpt.py: 3 linear-kernel GD steps, α = 0.5,
// d = 3, d_y = 2, N = 4): the predictions are the reference's, whatever the
// query rows of -y hold; a -y of the wrong d_y is refused naming -y.
func TestNumpyCheckpointEval(t *testing.T) {
	dir := t.TempDir()
	task, _ := data.NewLinearRegression(data.LinearRegressionConfig{D: 3, DY: 2, N: 4})
	b, _ := task.Sample(7, rand.New(rand.NewPCG(1, 1)))
	ref, err := gd.ReferenceReal(b.X, b.R, b.B, b.T, 3, 2, nil, gd.ReferenceConfig{Steps: 3, Alpha: 0.5, Kernel: "linear"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < b.B; i++ { // the query rows are ignored: put anything there
		b.R[(i*b.T+b.T-1)*2] = math.NaN()
		b.R[(i*b.T+b.T-1)*2+1] = math.Inf(1)
	}
	xp, yp := writeRegression(t, dir, b)
	pred := filepath.Join(dir, "p.npy")
	ck := filepath.Join("..", "..", "..", "gd", "testdata", "numpy-gaussian-ckpt")
	in, err := ReadEvalInputs(ck, xp, yp, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Evaluate(pred); err != nil {
		t.Fatal(err)
	}
	p, err := npy.ReadFile(pred)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Shape) != 2 || p.Shape[0] != 7 || p.Shape[1] != 2 {
		t.Fatalf("pred shape %v, want (7, 2)", p.Shape)
	}
	for i, v := range p.F64 {
		if math.Abs(v-ref.Pred[i]) > 1e-12 {
			t.Fatalf("pred[%d] = %v, reference %v", i, v, ref.Pred[i])
		}
	}
	// A y with d_y = 1 for a checkpoint with d_y = 2.
	b1 := *b
	b1.DY, b1.R = 1, b.R[:b.B*b.T]
	bad := t.TempDir()
	_, yBad := writeRegression(t, bad, &b1)
	if _, err := ReadEvalInputs(ck, xp, yBad, ""); err == nil || !strings.Contains(err.Error(), "-y") {
		t.Errorf("wrong d_y: error %v, want one naming -y", err)
	}
}
