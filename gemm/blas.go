package gemm

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Implementation is a gonum BLAS whose Sgemm and Dgemm run on [Gemm];
// every other routine is gonum's pure-Go one. Gorgonia takes it with
// G.Use(gemm.Implementation{}) (package ops does so when imported).
type Implementation struct{ gonum.Implementation }

var (
	_ blas.Float32Level3 = Implementation{}
	_ blas.Float64Level3 = Implementation{}
)

func trans(t blas.Transpose) bool {
	switch t {
	case blas.NoTrans:
		return false
	case blas.Trans, blas.ConjTrans:
		return true
	}
	panic("blas: illegal transpose")
}

// Sgemm is C = alpha·op(A)·op(B) + beta·C in float32 by [Gemm]. Like
// every gonum BLAS routine it panics on bad arguments (the blas package's
// contract).
func (Implementation) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if err := Gemm(trans(tA), trans(tB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); err != nil {
		panic(err.Error())
	}
}

// Dgemm is Sgemm in float64.
func (Implementation) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	if err := Gemm(trans(tA), trans(tB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); err != nil {
		panic(err.Error())
	}
}
