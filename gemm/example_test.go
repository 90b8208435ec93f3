package gemm_test

import (
	"fmt"

	"github.com/gdattn/gdattn/gemm"
)

// C (2×2) = A (2×3) · Bᵀ, with B stored as 2×3 rows.
func ExampleGemm() {
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{1, 0, 1, 0, 1, 0}
	c := make([]float32, 4)
	if err := gemm.Gemm(false, true, 2, 2, 3, 1, a, 3, b, 3, 0, c, 2); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c)
	// A slice too short for its matrix is an error, not a panic.
	fmt.Println(gemm.Gemm(false, false, 2, 2, 3, 1, a[:5], 3, b, 2, 0, c, 2))
	// Output:
	// [4 2 10 5]
	// gemm: A has 5 elements, want at least 6 (2×3, leading dimension 3, batch 1, stride 0)
}

// Three products C_i = A_i · B with one B shared by the batch (stride 0).
func ExampleGemmBatched() {
	a := []float64{1, 2, 3, 4, 5, 6} // three 1×2 matrices
	b := []float64{1, 10, 100, 1000} // one 2×2 matrix
	c := make([]float64, 6)          // three 1×2 results
	if err := gemm.GemmBatched(3, false, false, 1, 2, 2, 1, a, 2, 2, b, 2, 0, 0, c, 2, 2); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c)
	// Output: [201 2010 403 4030 605 6050]
}
