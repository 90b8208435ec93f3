// Package gemm is gdattn's general matrix multiplication: C = alpha·op(A)·op(B)
// + beta·C on row-major float32 and float64 slices, op transposing or not,
// single or strided-batched, in pure Go with Go assembly micro-kernels.
//
// # Algorithm
//
// A large product runs the five loops of a packed GEMM (Goto and van de
// Geijn; BLIS, with rows and columns exchanged for row-major C): for every
// block of MC rows of C and every KC-deep slice of the inner dimension, A's
// block is packed once into micro-panels of MR rows (for the L3 cache); for
// every NC-wide block of columns, B's KC×NC block is packed into slivers of
// NR columns (for L2); then each micro-panel of A (in L1) meets every sliver
// in turn, and a register-tiled micro-kernel accumulates an MR×NR tile of C
// with fused multiply-adds, prefetching the next tile of C. On AVX2, a
// non-transposed A whose block meets a single block of B (n ≤ NC) is not
// packed: the kernel reads its micro-panels' rows where they are stored. The
// micro-kernels (kernels_amd64.s, written by gen_kernels.go) hold the tile
// in 24 vector registers: 12×32 float32 or 12×16 float64 with AVX-512, 6×16
// or 6×8 with AVX2/FMA. The instruction set is chosen at run time
// (golang.org/x/sys/cpu); other architectures, and any build with the
// purego tag, run a portable Go kernel. Transposes cost nothing beyond the
// packing, which is itself in assembly on CPUs with AVX-512 (pack_amd64.s,
// written by gen_pack.go: 16×16 float32 or 8×8 float64 blocks transposed
// in registers, masked copies of the panels' lines) and in Go elsewhere
// (full panels of the AVX2 and portable tile sizes through unrolled moves,
// pack_go.go), except the AVX2 blocking's float32 shapes on any amd64
// CPU, in SSE2 assembly (cols_amd64.s: 6-wide panels of a transposed A
// eight lines at a time with a prefetch, 16-wide slivers of B a cache line
// at a time, 16-row slivers of a transposed B by 4×4 transposes); all
// write the same packed blocks, bit for bit. Products of at least a few million flops are split over
// GOMAXPROCS goroutines, by rows of C or by columns (whichever repeats less
// packing), each packing its own operands.
//
// Small and narrow products (a few rows or columns, or a few thousand
// multiply-adds, as in the batched products of in-context attention at
// small N) skip the packing: row kernels compute one row of C at a time, 32
// float32 or 16 float64 columns per pass.
//
// # Summation order
//
// Every element of C is one sequential chain of fused multiply-adds over
// the inner dimension, in order: starting from zero and stored (beta 0), or
// added to C at the end (beta 1). A product deeper than one KC slice (256;
// with beta 0, 512 for float32 on AVX2, which stores C half as often)
// continues each chain from C's value at every further slice, so with beta
// 0 the chain is unbroken at any depth. The packed path and the row path
// give the same bits (alpha 1; with beta 1 when k ≤ 256), and neither the
// blocking nor the number of goroutines changes a result: the same inputs
// give the same bits on any GOMAXPROCS. Other alphas are applied to A while
// it is packed, other betas to C before the product. The portable Go
// kernels multiply and add without fusing, so their last bits differ from
// the assembly kernels'.
//
// # Use
//
//	// C (2×2) = A (2×3) · Bᵀ, B stored 2×3.
//	a := []float32{1, 2, 3, 4, 5, 6}
//	b := []float32{1, 0, 1, 0, 1, 0}
//	c := make([]float32, 4)
//	err := gemm.Gemm(false, true, 2, 2, 3, 1, a, 3, b, 3, 0, c, 2)
//	// c = [4 2 10 5]
//
// [Implementation] is a gonum BLAS (blas.Float32Level3, blas.Float64Level3)
// whose Sgemm and Dgemm run on this package, for Gorgonia's G.Use.
package gemm
