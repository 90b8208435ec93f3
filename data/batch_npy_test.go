package data

import (
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph/npy"
)

// TestBatchWriteNPY writes a regression and a classification batch and
// reads the files back as the examples' -eval modes do.
func TestBatchWriteNPY(t *testing.T) {
	task, err := NewLinearRegression(LinearRegressionConfig{D: 3, DY: 2, N: 4, Noise: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := task.Sample(5, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	paths, err := rb.WriteNPY(filepath.Join(dir, "reg"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"x.npy", "y.npy"}
	if rb.Bayes != nil {
		want = append(want, "bayes.npy")
	}
	for i, p := range paths {
		if filepath.Base(p) != want[i] {
			t.Fatalf("paths %v, want %v", paths, want)
		}
	}
	x, err := npy.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	y, err := npy.ReadFile(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(x.Shape, []int{5, 5, 3}) || !reflect.DeepEqual(x.F64, rb.X) ||
		!reflect.DeepEqual(y.Shape, []int{5, 5, 2}) || y.Dtype != npy.Float64 || !reflect.DeepEqual(y.F64, rb.R) {
		t.Errorf("regression: read back x %v %s, y %v %s", x.Shape, x.Dtype, y.Shape, y.Dtype)
	}
	if rb.Bayes != nil {
		bz, err := npy.ReadFile(paths[2])
		if err != nil || !reflect.DeepEqual(bz.F64, rb.Bayes) {
			t.Errorf("bayes: %v, %v", bz, err)
		}
	}

	syn, err := NewSynthetic(SyntheticConfig{C: 4, D: 3, N: 6, Active: 3}, 2)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := syn.Sample(3, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	paths, err = cb.WriteNPY(filepath.Join(dir, "cls"))
	if err != nil || len(paths) != 2 {
		t.Fatalf("classification: %v, %v", paths, err)
	}
	y, err = npy.ReadFile(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	if y.Dtype != npy.Int64 || !reflect.DeepEqual(y.Shape, []int{3, 7}) {
		t.Fatalf("labels %v %s, want int64 (3, 7)", y.Shape, y.Dtype)
	}
	for i, v := range y.I64 {
		if int(v) != cb.Y[i] {
			t.Fatalf("label %d: %d, want %d", i, v, cb.Y[i])
		}
	}

	bad := &Batch{B: 1, T: 2, D: 1, C: 2, X: []float64{0}, Y: []int{0, 1}}
	if _, err := bad.WriteNPY(dir); err == nil || !strings.Contains(err.Error(), "data: write npy") {
		t.Errorf("an invalid batch: got %v", err)
	}
	var nilB *Batch
	if _, err := nilB.WriteNPY(dir); err == nil {
		t.Error("a nil batch: no error")
	}
}
