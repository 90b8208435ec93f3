package kvcache

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestWideMatMulSplit: the product split over goroutines by columns (and
// with 2 to 6 rows by blocks of columns) gives the bits of the single
// product.
func TestWideMatMulSplit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	rng := rand.New(rand.NewPCG(1, 2))
	const n, k = 20011, 130
	for _, m := range []int{1, 2, 5, 7} {
		a, b := make([]float32, m*k), make([]float32, k*n)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range b {
			b[i] = float32(rng.NormFloat64())
		}
		want, got := make([]float32, m*n), make([]float32, m*n)
		MatMul(false, m, n, k, a, b, false, want)
		WideMatMul(m, n, k, a, b, got)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%d rows, element %d: %v split, %v whole", m, i, got[i], want[i])
			}
		}
	}
}

// TestTranspose checks Transpose on a matrix larger than its blocks.
func TestTranspose(t *testing.T) {
	const r, c = 70, 131
	w := make([]float64, r*c)
	for i := range w {
		w[i] = float64(i)
	}
	wt := Transpose(w, r, c)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if wt[j*r+i] != w[i*c+j] {
				t.Fatalf("(%d, %d): %v, want %v", j, i, wt[j*r+i], w[i*c+j])
			}
		}
	}
}
