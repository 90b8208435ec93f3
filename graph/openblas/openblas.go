//go:build openblas

package openblas

/*
#cgo LDFLAGS: -lopenblas
#include <cblas.h>
void openblas_set_num_threads(int num_threads);
*/
import "C"

import (
	"runtime"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	G "gorgonia.org/gorgonia"
)

// Implementation is gonum's pure-Go BLAS with Sgemm and Dgemm replaced by
// OpenBLAS's cblas_sgemm and cblas_dgemm (row-major); every other routine
// stays gonum's.
type Implementation struct{ gonum.Implementation }

// The init hands Implementation to Gorgonia (G.Use, which also sets package
// tensor's BLAS) and gives OpenBLAS GOMAXPROCS threads.
func init() {
	C.openblas_set_num_threads(C.int(runtime.GOMAXPROCS(0)))
	G.Use(Implementation{})
}

func cblasTrans(t blas.Transpose) C.enum_CBLAS_TRANSPOSE {
	if t == blas.NoTrans {
		return C.CblasNoTrans
	}
	return C.CblasTrans
}

// Sgemm is C = alpha op(A) op(B) + beta C in float32 by cblas_sgemm.
func (Implementation) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || len(a) == 0 || len(b) == 0 {
		gonum.Implementation{}.Sgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	C.cblas_sgemm(C.CblasRowMajor, cblasTrans(tA), cblasTrans(tB), C.blasint(m), C.blasint(n), C.blasint(k),
		C.float(alpha), (*C.float)(&a[0]), C.blasint(lda), (*C.float)(&b[0]), C.blasint(ldb),
		C.float(beta), (*C.float)(&c[0]), C.blasint(ldc))
}

// Dgemm is C = alpha op(A) op(B) + beta C in float64 by cblas_dgemm.
func (Implementation) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || len(a) == 0 || len(b) == 0 {
		gonum.Implementation{}.Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	C.cblas_dgemm(C.CblasRowMajor, cblasTrans(tA), cblasTrans(tB), C.blasint(m), C.blasint(n), C.blasint(k),
		C.double(alpha), (*C.double)(&a[0]), C.blasint(lda), (*C.double)(&b[0]), C.blasint(ldb),
		C.double(beta), (*C.double)(&c[0]), C.blasint(ldc))
}
