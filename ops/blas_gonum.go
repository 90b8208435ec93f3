//go:build !openblas

package ops

import (
	gemmpkg "github.com/gdattn/gdattn/gemm" // head.go has a gemm of its own
	G "gorgonia.org/gorgonia"
)

// BLASName names the BLAS behind Gorgonia's matrix products: gdattn's own
// GEMM (package gemm, pure Go with assembly kernels; build with -tags
// openblas for OpenBLAS, see blas_openblas.go).
const BLASName = "gdattn gemm (pure Go)"

// The init hands gemm.Implementation to Gorgonia (G.Use, which also sets
// package tensor's BLAS), so that G.Mul, G.BatchedMatMul and tensor.MatMul
// run on the same GEMM as MatMul, BatchedMatMul and TiedLogits. It is the
// one Gorgonia global gdattn sets, once, when ops is imported; the
// openblas build tag sets OpenBLAS instead.
func init() { G.Use(gemmpkg.Implementation{}) }
