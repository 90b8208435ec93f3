//go:build openblas

package ops

import _ "github.com/gdattn/gdattn/graph/openblas" // OpenBLAS behind Gorgonia's products

// BLASName names the BLAS behind Gorgonia's matrix products: with the
// openblas build tag, OpenBLAS through cgo (package graph/openblas; Debian:
// apt-get install libopenblas-dev; go build -tags openblas). Gemm,
// MatMul, BatchedMatMul and TiedLogits keep package gemm.
const BLASName = "OpenBLAS (cgo, -tags openblas) for Gorgonia's products"
