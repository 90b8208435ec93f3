package gemm

import (
	"fmt"
	"math"
	"runtime"
	"sync"
)

// Float is the element type of a product: float32 or float64.
type Float interface{ float32 | float64 }

// Gemm computes C = alpha·op(A)·op(B) + beta·C on row-major slices, where
// op(X) is X, or Xᵀ when tA (tB) is set: op(A) is m×k (A is stored m×k, or
// k×m when tA, with rows lda apart), op(B) is k×n (B stored k×n, or n×k
// when tB, rows ldb apart) and C is m×n (rows ldc apart). As in BLAS, beta 0
// overwrites C (a NaN in C does not survive) and alpha 0 or k 0 reads
// neither A nor B.
//
// Gemm returns an error, computing nothing, for a negative size, a leading
// dimension below the row length it strides, or a slice too short for its
// matrix.
func Gemm[F Float](tA, tB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) error {
	if err := check(tA, tB, m, n, k, a, lda, b, ldb, c, ldc, 1, 0, 0, 0); err != nil {
		return err
	}
	threads := runtime.GOMAXPROCS(0)
	gemm(active, threads, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	return nil
}

// GemmBatched computes C_i = alpha·op(A_i)·op(B_i) + beta·C_i for i <
// batch, where A_i starts at a[i·strideA], B_i at b[i·strideB] and C_i at
// c[i·strideC], each as in [Gemm]. A stride of 0 reuses one matrix for the
// whole batch (allowed for A and B; the C_i must not overlap). Small products
// are spread over GOMAXPROCS goroutines by batch element, large ones each
// over all of them.
//
// GemmBatched returns an error, computing nothing, for a negative size or
// stride, a leading dimension below the row length it strides, C_i that
// overlap, or a slice too short for its batch.
func GemmBatched[F Float](batch int, tA, tB bool, m, n, k int, alpha F, a []F, lda, strideA int, b []F, ldb, strideB int, beta F, c []F, ldc, strideC int) error {
	if err := check(tA, tB, m, n, k, a, lda, b, ldb, c, ldc, batch, strideA, strideB, strideC); err != nil {
		return err
	}
	if batch == 0 || m == 0 || n == 0 {
		return nil
	}
	if batch > 1 && strideC < (m-1)*ldc+n {
		return fmt.Errorf("gemm: strideC %d below the size of one C (%d×%d, ldc %d): the products overlap", strideC, m, n, ldc)
	}
	if k == 0 || alpha == 0 { // C_i = beta·C_i: A and B are not read
		for i := 0; i < batch; i++ {
			scale(m, n, beta, c[i*strideC:], ldc)
		}
		return nil
	}
	threads := runtime.GOMAXPROCS(0)
	one := func(i, threads int) {
		gemm(active, threads, tA, tB, m, n, k, alpha, a[i*strideA:], lda, b[i*strideB:], ldb, beta, c[i*strideC:], ldc)
	}
	work := 2 * float64(m) * float64(n) * float64(k)
	if threads == 1 || batch == 1 || work >= minParallelFlops {
		for i := 0; i < batch; i++ {
			one(i, threads)
		}
		return nil
	}
	// Spread the batch: contiguous ranges, at least minParallelFlops each.
	parts := min(threads, batch, max(1, int(work*float64(batch)/minParallelFlops)))
	if parts <= 1 {
		for i := 0; i < batch; i++ {
			one(i, 1)
		}
		return nil
	}
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		lo, hi := p*batch/parts, (p+1)*batch/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				one(i, 1)
			}
		}()
	}
	wg.Wait()
	return nil
}

// check validates the sizes, leading dimensions, strides and slice lengths
// of a (batched) product.
func check[F Float](tA, tB bool, m, n, k int, a []F, lda int, b []F, ldb int, c []F, ldc int, batch, sA, sB, sC int) error {
	if m < 0 || n < 0 || k < 0 || batch < 0 {
		return fmt.Errorf("gemm: negative size: m %d, n %d, k %d, batch %d", m, n, k, batch)
	}
	if sA < 0 || sB < 0 || sC < 0 {
		return fmt.Errorf("gemm: negative stride: %d, %d, %d", sA, sB, sC)
	}
	ar, ac := m, k
	if tA {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB {
		br, bc = n, k
	}
	if lda < max(1, ac) || ldb < max(1, bc) || ldc < max(1, n) {
		return fmt.Errorf("gemm: leading dimensions %d, %d, %d below the row lengths %d, %d, %d", lda, ldb, ldc, ac, bc, n)
	}
	need := func(name string, s []F, rows, cols, ld, stride int) error {
		if rows == 0 || cols == 0 || batch == 0 {
			return nil
		}
		// (batch−1)·stride + (rows−1)·ld + cols, refusing what overflows an
		// int (and so exceeds any slice).
		want, ok := mulAdd(rows-1, ld, cols)
		if ok {
			want, ok = mulAdd(batch-1, stride, want)
		}
		if !ok {
			return fmt.Errorf("gemm: %s of %d×%d, leading dimension %d, batch %d, stride %d: the size overflows an int", name, rows, cols, ld, batch, stride)
		}
		if len(s) < want {
			return fmt.Errorf("gemm: %s has %d elements, want at least %d (%d×%d, leading dimension %d, batch %d, stride %d)", name, len(s), want, rows, cols, ld, batch, stride)
		}
		return nil
	}
	if m == 0 || n == 0 {
		return nil
	}
	if k > 0 {
		if err := need("A", a, ar, ac, lda, sA); err != nil {
			return err
		}
		if err := need("B", b, br, bc, ldb, sB); err != nil {
			return err
		}
	}
	return need("C", c, m, n, ldc, sC)
}

// mulAdd returns x·y + z for non-negative operands, and false when that
// overflows an int.
func mulAdd(x, y, z int) (int, bool) {
	if x != 0 && y > (math.MaxInt-z)/x {
		return 0, false
	}
	return x*y + z, true
}

func errorf(format string, args ...any) error { return fmt.Errorf("gemm: "+format, args...) }
