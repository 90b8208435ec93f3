// Package openblas puts OpenBLAS (through cgo) behind Gorgonia's matrix
// products. It is compiled only with the openblas build tag; package ops
// imports it then (ops/blas_openblas.go), so
//
//	apt-get install libopenblas-dev   # Debian
//	go build -tags openblas ./...
//
// makes every G.Mul (and package tensor's MatMul) call cblas_sgemm and
// cblas_dgemm, with GOMAXPROCS threads. Without the tag gdattn is pure Go
// and this package is empty. It is a package of its own because Go does not
// build a package that uses cgo and also holds Go assembly (ops's gemm
// kernels).
package openblas
