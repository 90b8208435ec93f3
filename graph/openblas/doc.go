// Package openblas puts OpenBLAS (through cgo) behind Gorgonia's matrix
// products. It is compiled only with the openblas build tag; package ops
// imports it then (ops/blas_openblas.go), so
//
//	apt-get install libopenblas-dev   # Debian
//	go build -tags openblas ./...
//
// makes every G.Mul (and package tensor's MatMul) call cblas_sgemm and
// cblas_dgemm, with GOMAXPROCS threads, instead of gdattn's own GEMM
// (package gemm, which the default build hands to Gorgonia and which gdattn's
// ops use in both builds). Without the tag gdattn is pure Go and this package
// is empty. It is a leaf package of its own so that only this cgo code
// depends on the tag.
package openblas
