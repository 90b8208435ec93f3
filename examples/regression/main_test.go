package main

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
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
// d = 3, d_y = 2, N = 4) with -eval: the predictions are the reference's,
// whatever the query rows of -y hold.
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
	ck := filepath.Join("..", "..", "gd", "testdata", "numpy-gaussian-ckpt")
	if err := command([]string{"-eval", ck, "-x", xp, "-y", yp, "-pred", pred}); err != nil {
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
}

// TestQuickRun runs a tiny linear and nonlinear experiment end to end: the
// results, the figures and a checkpoint that -eval then reads.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	dir := t.TempDir()
	res, ck := filepath.Join(dir, "res"), filepath.Join(dir, "ck")
	args := []string{"-quick", "-quiet", "-L", "64", "-M", "32", "-epochs", "1", "-seeds", "1", "-steps", "1,2", "-Ls", "32,64",
		"-batch", "16", "-d", "4", "-N", "5", "-results", res, "-out", ck}
	if err := command(args); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"linear.json", "linear.csv", "nonlinear.json", "nonlinear.csv", "regression-linear-quick.png", "regression-nonlinear-quick.png"} {
		if st, err := os.Stat(filepath.Join(res, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(res, "linear.json"))
	var lr struct { // the fields of linear.json checked here
		Rows []struct {
			K   int `json:"K"`
			Cos struct {
				Mean float64 `json:"mean"`
			} `json:"sensitivity_cosine"`
		} `json:"rows"`
		AlphaOpt float64 `json:"alpha_opt"`
	}
	if err := json.Unmarshal(raw, &lr); err != nil {
		t.Fatal(err)
	}
	if len(lr.Rows) != 2 || lr.Rows[0].K != 1 || !(lr.Rows[0].Cos.Mean <= 1+1e-9) || !(lr.AlphaOpt > 0) {
		t.Errorf("linear.json rows %+v, α* %v", lr.Rows, lr.AlphaOpt)
	}
	task, _ := data.NewLinearRegression(data.LinearRegressionConfig{D: 4, N: 5})
	b, _ := task.Sample(5, rand.New(rand.NewPCG(2, 2)))
	xp, yp := writeRegression(t, dir, b)
	if err := command([]string{"-eval", filepath.Join(ck, "gd-linear-K2-quick"), "-x", xp, "-y", yp, "-pred", filepath.Join(dir, "p.npy")}); err != nil {
		t.Fatal(err)
	}
}

// TestShardsAndMerge runs a tiny plan as two shards, an -index rerun and
// -merge (refused while a shard is missing), and checks that the tables equal
// a single process's.
func TestShardsAndMerge(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	dir := t.TempDir()
	base := []string{"-quick", "-quiet", "-L", "64", "-M", "32", "-epochs", "1", "-seeds", "2", "-steps", "1,2", "-Ls", "32,64",
		"-batch", "16", "-d", "4", "-N", "5", "-out", ""}
	with := func(res string, more ...string) []string {
		return append(append(append([]string{}, base...), "-results", res), more...)
	}
	one, many := filepath.Join(dir, "one"), filepath.Join(dir, "many")
	if err := command(with(one)); err != nil {
		t.Fatal(err)
	}
	if err := command(with(many, "-shard", "0/2")); err != nil {
		t.Fatal(err)
	}
	if err := command(with(many, "-merge")); err == nil || !strings.Contains(err.Error(), "8 of 16 runs") {
		t.Errorf("-merge with a shard missing: %v", err)
	}
	for _, more := range [][]string{{"-shard", "1/2"}, {"-index", "3"}, {"-merge"}} {
		if err := command(with(many, more...)); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(many, "runs", "*"))
	if len(files) != 16 {
		t.Errorf("%d files in runs/, want 16", len(files))
	}
	for _, f := range []string{"linear.csv", "nonlinear.csv"} {
		a, _ := os.ReadFile(filepath.Join(one, f))
		b, _ := os.ReadFile(filepath.Join(many, f))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s: sharded\n%s\none process\n%s", f, b, a)
		}
	}
	if err := command(with(many, "-index", "16")); err == nil || !strings.Contains(err.Error(), "-index 16") {
		t.Errorf("-index 16 of 16 runs: %v", err)
	}
}
