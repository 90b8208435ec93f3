//go:build !openblas

package ops

import (
	"fmt"
	"testing"

	gemmpkg "github.com/gdattn/gdattn/gemm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestGorgoniaBLAS checks that importing ops hands package gemm to
// Gorgonia: G.Mul and tensor.MatMul run on gemm.Implementation.
func TestGorgoniaBLAS(t *testing.T) {
	if _, ok := G.WhichBLAS().(gemmpkg.Implementation); !ok {
		t.Fatalf("Gorgonia's BLAS is %T, want gemm.Implementation", G.WhichBLAS())
	}
	x := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float32{1, 2, 3, 4, 5, 6}))
	y := tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float32{1, 0, 0, 1, 1, 1}))
	z, err := tensor.MatMul(x, y)
	if err != nil || fmt.Sprint(z.Data()) != "[4 5 10 11]" {
		t.Errorf("tensor.MatMul: %v, %v; want [4 5 10 11]", z, err)
	}
}
