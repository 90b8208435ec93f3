package data

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gdattn/gdattn/graph/npy"
)

// WriteNPY writes b as the .npy files the examples' -eval modes read, in
// dir (created if missing), and returns their paths:
//
//	x.npy      float64 (B, T, D), the covariates          (-x)
//	y.npy      classification: int64 (B, T), the labels   (-y of synthetic)
//	           regression: float64 (B, T, DY), the targets (-y of regression)
//	bayes.npy  regression with Bayes: float64 (B), the Bayes error of each
//	           query (-bayes of regression)
//
// numpy.load reads them too. It returns an error for a batch that does not
// pass Validate or a file that cannot be written.
func (b *Batch) WriteNPY(dir string) ([]string, error) {
	if b == nil {
		return nil, errors.New("data: write npy: batch is nil")
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("data: write npy: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data: write npy: %w", err)
	}
	type file struct {
		name string
		a    *npy.Array
	}
	arrays := []file{{"x.npy", &npy.Array{Shape: []int{b.B, b.T, b.D}, Dtype: npy.Float64, F64: b.X}}}
	if b.Regression() {
		arrays = append(arrays, file{"y.npy", &npy.Array{Shape: []int{b.B, b.T, b.DY}, Dtype: npy.Float64, F64: b.R}})
		if len(b.Bayes) == b.B {
			arrays = append(arrays, file{"bayes.npy", &npy.Array{Shape: []int{b.B}, Dtype: npy.Float64, F64: b.Bayes}})
		}
	} else {
		y := make([]int64, len(b.Y))
		for i, v := range b.Y {
			y[i] = int64(v)
		}
		arrays = append(arrays, file{"y.npy", &npy.Array{Shape: []int{b.B, b.T}, Dtype: npy.Int64, I64: y}})
	}
	var paths []string
	for _, f := range arrays {
		p := filepath.Join(dir, f.name)
		if err := npy.WriteFile(p, f.a); err != nil {
			return paths, fmt.Errorf("data: write npy: %w", err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}
