//go:build !amd64 || purego

package gemm

// available lists the instruction sets this build runs: the portable Go
// kernels only.
func available() []*kernels { return []*kernels{portable} }
