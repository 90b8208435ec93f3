//go:build !openblas

package ops

// BLASName names the BLAS behind Gorgonia's matrix products: gonum's pure
// Go implementation (the default; build with -tags openblas for OpenBLAS,
// see blas_openblas.go).
const BLASName = "gonum (pure Go)"
