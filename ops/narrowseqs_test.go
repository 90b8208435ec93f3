package ops

import (
	"math/rand/v2"
	"testing"
)

// TestMulAddRowsSeqsBits checks mulAddRowsSeqs against mulAddRows product
// by product, bit for bit: the head's per-sequence sizes (T = 11 rows,
// Tk = 10, D = 25) and others around them (row tails of one to three
// rows, one and two vectors of columns and several chunks, k = 1 and the
// largest k of the batched path, and past it), rows of A and of Aᵀ, acc on
// and off, padded strides and gaps between the products, whose elements
// (like C's padding) must be left as they were.
func TestMulAddRowsSeqsBits(t *testing.T) {
	testMulAddRowsSeqsBits[float32](t)
	testMulAddRowsSeqsBits[float64](t)
}

func testMulAddRowsSeqsBits[F float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var scratch []F
	for _, nseq := range []int{1, 2, 7} {
		for _, m := range []int{1, 3, 4, 5, 7, 10, 11, 16} {
			for _, n := range []int{1, 5, 8, 9, 10, 16, 25, 33} {
				for _, k := range []int{1, 10, 25, 256, 300} {
					for _, trans := range []bool{false, true} {
						for _, acc := range []bool{false, true} {
							lda := k + 3
							rsA, incA, la := lda, 1, m*lda
							if trans {
								lda = m + 2
								rsA, incA, la = 1, lda, k*lda
							}
							ldb, ldc := n+1, n+2
							sa, sb, sc := la+5, k*ldb+3, m*ldc+4
							a, b := make([]F, nseq*sa), make([]F, nseq*sb)
							for i := range a {
								a[i] = F(rng.NormFloat64())
							}
							for i := range b {
								b[i] = F(rng.NormFloat64())
							}
							c0 := make([]F, nseq*sc)
							for i := range c0 {
								c0[i] = F(rng.NormFloat64())
							}
							got, want := append([]F(nil), c0...), append([]F(nil), c0...)
							scratch = mulAddRowsSeqs(nseq, m, n, k, a, rsA, incA, sa, b, ldb, sb, got, ldc, sc, acc, scratch)
							for s := 0; s < nseq; s++ {
								mulAddRows(m, n, k, a[s*sa:], rsA, incA, b[s*sb:], ldb, want[s*sc:], ldc, acc)
							}
							for i := range got {
								if got[i] != want[i] {
									t.Fatalf("%T nseq %d m %d n %d k %d trans %v acc %v: c[%d] = %v, want %v (mulAddRows)", got[i], nseq, m, n, k, trans, acc, i, got[i], want[i])
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestMulAddRowsSeqsShort checks that mulAddRowsSeqs refuses slices too
// short for the last product (a panic, as a slice expression) instead of
// reading past them.
func TestMulAddRowsSeqsShort(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a too short")
		}
	}()
	mulAddRowsSeqs(3, 8, 5, 10, make([]float32, 2*80+79), 10, 1, 80, make([]float32, 3*50), 5, 50, make([]float32, 3*40), 5, 40, false, nil)
}
