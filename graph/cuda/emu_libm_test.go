//go:build cudaemu

package cuda

// On the emulator the kernels call the C library's exp and log: the Go
// evaluations of the warp kernels' orders use them too, and must agree bit
// for bit.
func init() {
	kernelExp, kernelLog, exactOrder = libmExp, libmLog, true
}
