package cuda

import (
	"unsafe"

	"gorgonia.org/tensor"
)

// Ptr is an address in device memory (a CUdeviceptr on a GPU; a host address
// on the emulator backend). The zero Ptr is never a valid allocation.
type Ptr uintptr

// Backend is what the executor needs from a device: memory, copies, kernel
// launches by name and strided batched matrix products. Two implementations
// exist: the GPU driver (build tag gdcuda; libcuda and cuBLAS loaded with
// dlopen) and the emulator (build tag cudaemu), which compiles the very same kernel
// sources of kernels/*.cu as C and runs every launch as one serial thread, so
// the executor and the kernels' arithmetic are tested on machines without a
// GPU.
//
// The GPU tag is gdcuda, not cuda: under -tags cuda Gorgonia v0.9.18 compiles
// its own CUDA engine (gorgonia.org/cu, cuDNN headers), which does not build,
// so no package that imports Gorgonia builds with -tags cuda.
//
// Kernel contract (kernels/common.h): every kernel is an extern "C" __global__
// function whose body is one grid-stride loop over n work items (its first
// parameter) and uses neither shared memory nor __syncthreads; it gives the
// same bits every run (atomicAdd only where its order cannot change the
// result, and in the few accumulators common.h lists); a warp kernel gives
// each work item a warp of 32 threads whose lanes combine values only
// through the contract's __shfl_xor_sync butterfly. Parameters are pointers (passed as Ptr), int (int32), long long
// (int64), float (float32) or double (float64).
type Backend interface {
	// Name describes the device for logs, e.g. "NVIDIA H200 (sm_90, 139 GiB)".
	Name() string
	// Alloc returns bytes of uninitialised device memory.
	Alloc(bytes int64) (Ptr, error)
	// Free releases an allocation made by Alloc.
	Free(p Ptr) error
	// CopyHtoD, CopyDtoH and CopyDtoD copy bytes between host and device.
	CopyHtoD(dst Ptr, src unsafe.Pointer, bytes int64) error
	CopyDtoH(dst unsafe.Pointer, src Ptr, bytes int64) error
	CopyDtoD(dst, src Ptr, bytes int64) error
	// Zero sets bytes of device memory to zero.
	Zero(p Ptr, bytes int64) error
	// Launch runs the kernel called name over n work items with args in the
	// kernel's parameter order: Ptr for a pointer, int32 for int, int64 for
	// long long, float32 for float, float64 for double (a Go int is accepted
	// for int and long long when it fits). n only sizes the grid (a thread
	// per item, or a warp per item for a warp kernel): the kernel receives
	// its own count among its parameters. n == 0 launches nothing;
	// n < 0, an unknown name, or a wrong number or kind of arguments is an
	// error, checked against the kernel table generated from kernels/*.cu.
	// Launch is asynchronous on a GPU: kernel faults surface at Sync.
	Launch(name string, n int64, args ...any) error
	// Gemm computes, for b in [0, batch), the row-major product
	// C_b = alpha·op(A_b)·op(B_b) + beta·C_b with op(A_b) m×k, op(B_b) k×n,
	// C_b m×n, leading dimensions lda, ldb, ldc (row strides, in elements)
	// and batch strides sA, sB, sC (in elements). dt is tensor.Float32 or
	// tensor.Float64.
	Gemm(dt tensor.Dtype, transA, transB bool, m, n, k int, alpha float64,
		a Ptr, lda int, sA int64, b Ptr, ldb int, sB int64,
		beta float64, c Ptr, ldc int, sC int64, batch int) error
	// Sync waits for all queued work and returns the first asynchronous
	// error.
	Sync() error
	// Close releases the device; the Backend is unusable afterwards.
	Close() error
}

// streamer is implemented by backends that can give an executor a queue of
// its own (a CUDA stream): NewStream returns a Backend on the same device
// whose launches, products, copies and Sync use that queue; its Close
// releases the queue (and any captured graph), not the device.
type streamer interface {
	NewStream() (Backend, error)
}

// grapher is implemented by the stream Backends of NewStream that can
// capture queued work into a graph and replay it (ExecOptions.GraphCapture).
// Between BeginCapture and EndCapture, Launch, Gemm, Zero and CopyDtoD are
// recorded instead of run; CopyHtoD, CopyDtoH and Sync are errors (they
// would wait for, or race with, work that has not run), and so is any
// error of a recorded call: EndCapture then reports the capture failed and
// keeps no graph. EndCapture makes the recording the stream's graph
// (replacing the previous one); LaunchGraph queues one replay of it, in
// order, on the stream; DropGraph releases it.
type grapher interface {
	CanCapture() error
	BeginCapture() error
	EndCapture() error
	LaunchGraph() error
	DropGraph() error
}
