package main

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gdattn/gdattn/data"
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
