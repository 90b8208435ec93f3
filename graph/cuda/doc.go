// Package cuda runs gdattn's compiled Gorgonia graphs on an NVIDIA GPU. This
// file documents its device layer: the [Backend] interface (device memory,
// copies, kernel launches by name, strided batched Gemm), its two
// implementations, and the kernels in kernels/*.cu. The executor (exec*.go,
// op*.go) maps graph operations onto a Backend, runs chains of elementwise
// nodes as one launch (fuse.go) and lays the node buffers out by liveness
// (memplan.go).
//
// # Build tags
//
//   - none: pure Go, no cgo. [Open] and [OpenEmulator] return errors wrapping
//     [ErrNoDevice]; this is what go build ./... and go test ./... use.
//   - gdcuda: the GPU backend (driver_cuda.go). cgo with only <dlfcn.h> and
//     -ldl: libcuda.so.1 and cuBLAS (libcublas.so.13, .12, .11 or
//     libcublas.so, also looked up in $CUDA_HOME/lib64 and
//     /usr/local/cuda/lib64, or the path in $GDATTN_CUBLAS) are opened with
//     dlopen when [Open] is called, so building needs gcc but no CUDA
//     headers or libraries, and one binary works with CUDA 11, 12 or 13. The
//     tag is not "cuda" because under -tags cuda Gorgonia v0.9.18 compiles
//     its own CUDA engine (gorgonia.org/cu and cuDNN headers), which does not
//     build against CUDA 12/13, so nothing that imports Gorgonia would build.
//   - cudaemu: the CPU emulator (emu_backend.go, emu_kernels.c). cgo with gcc
//     only (no g++): the kernel sources are compiled as C11 through
//     kernels/emu.h and every launch runs as one serial thread, memory is C
//     heap memory and Gemm is gonum's BLAS. It checks what a GPU does not:
//     pointer arguments must point into live allocations, copies and Gemm
//     operands must fit inside one, and fresh allocations read as NaN.
//
// Both tags may be given together. [Open] returns the device with the given
// ordinal: it retains the primary context, JIT-compiles the embedded PTX and
// creates a cuBLAS handle. Every call makes the context current on the
// calling OS thread first (goroutines migrate), and a mutex serialises calls.
// Launches use 256-thread blocks and min(ceil(n/256), 65535) blocks (for a
// warp kernel, a warp of 32 threads per work item: min(ceil(32n/256), 65535))
// on the legacy default stream, the stream cuBLAS uses too, so work runs in issue
// order; copies to and from host memory are synchronous. Row-major Gemm calls
// column-major cuBLAS on the transposes (B first, m and n swapped); when no
// cuBLAS can be loaded or initialised, or GDATTN_NO_CUBLAS is set, Gemm runs the
// gemm_naive kernel of kernels/selftest.cu instead (one thread per output
// element, double sums: correct, slow) and Name says so.
//
// # Kernels
//
// Kernels live in kernels/*.cu and follow kernels/common.h: C-compatible CUDA
// (no templates), declared with GDATTN_KERNEL (extern "C" __global__ void),
// one grid-stride loop, the first parameter long long n (the work items),
// parameters pointer/int/long long/float/double, float and double variants
// from one macro with GDATTN_FLOATS (names end in _f32, _f64). Reductions
// over long rows and sums of up to 4096 terms per output (warpSumMax) are
// warp kernels (GDATTN_WARP_KERNEL): one warp per work
// item, lanes reading with a stride of 32, partial results combined by a
// __shfl_xor_sync butterfly over the offsets 16, 8, 4, 2, 1 in a fixed
// order; the emulator runs a warp's 32 lanes as arrays in one thread with the
// same butterfly, so it computes the device's sums in the device's order.
// kernels/selftest.cu holds fill, axpy, scale, iota, sum, gemm_naive and
// warp_rowsum. After changing a kernel:
//
//	go generate ./graph/cuda   # emu_kernels.c and ptx_kernels.go (kernel table; runs gcc -E)
//	scripts/build-ptx.sh       # kernels/gdattn.ptx (needs nvcc; runs go generate too)
//
// The generator (internal/gen) preprocesses each kernel file with gcc and
// reads the expanded signatures; the resulting table of names and parameter
// kinds is what both backends check Launch arguments against (wrong count or
// type is an error, not a crash). scripts/build-ptx.sh compiles all
// kernels/*.cu as one translation unit with nvcc -ptx -arch=compute_70, so
// that the PTX loads on every GPU of compute capability 7.0 or newer (V100
// and later; the kernels need only a native double atomicAdd, sm_60+, and
// __shfl_xor_sync, sm_30+ with CUDA 9 or newer, and
// the driver JIT-compiles the PTX for the GPU it finds, e.g. sm_90),
// assembles the result with ptxas -arch=sm_70 and -arch=sm_90 as a check,
// and writes the SHA-256 of the kernel sources into the PTX header;
// TestPTXMatchesSources (-tags gdcuda, no GPU needed) fails on a stale PTX,
// TestPTXTargetsVolta on PTX for another target, and
// scripts/build-ptx.sh --check checks both without nvcc. nvcc 11.8 comes
// from Debian 12: add "non-free non-free-firmware" to the apt components,
// then apt-get install nvidia-cuda-toolkit (about 2.8 GB).
//
// # Running on a GPU machine without Go
//
// scripts/gpu-bundle.sh builds, here, the -tags gdcuda test binary (go test
// -c) and bench/gpu, stripped and xz-compressed with the language corpus into
// results/gpu-bundle/gpu-bundle.tar.xz (about 12 MB); scripts/gpu-device.sh,
// run on the GPU machine from the repository root with $OUT set, unpacks it
// and runs the tests with GDATTN_REQUIRE_GPU=1 (a missing device or cuBLAS
// fails instead of skipping), the exactness check through the executor, the
// CPU/GPU loss parity, step times against PyTorch on the same GPU and a
// training curve, each stage under its own time limit, writing its results
// under $OUT as they come (docs/gpu.md). The binaries are linked dynamically
// against glibc: this build machine has glibc 2.36 (Debian 12), and the
// newest symbol version they import is GLIBC_2.34 (objdump -T, recorded in
// BUILD-INFO), so the GPU machine needs glibc 2.34 or newer.
//
// # What is verified where
//
// Without a GPU (scripts/ci-cuda.sh): go vet and go build with -tags gdcuda;
// go test -tags gdcuda, whose GPU tests skip with the reason ("cuda: no CUDA
// device found: libcuda.so.1: cannot open shared object file ..." or
// "... cuInit: CUDA_ERROR_NO_DEVICE ...") while the PTX/kernel-table checks
// run; go test -tags cudaemu, the same self-test (copies, every selftest
// kernel and parameter kind, atomics, Gemm with all transposes, padded
// leading dimensions, batches and stride-0 operands against a Go reference)
// and the argument-validation tests on the emulator; and
// TestGPUBackendOnFakeDriver, which compiles testdata/fakecuda.c (a CPU
// stand-in for libcuda.so.1 and cuBLAS: strict about contexts, launch
// geometry and JIT options, column-major Gemm written from the BLAS
// definition) with the kernels into a shared library and re-runs the
// package's tests against it through LD_LIBRARY_PATH, so the GPU backend's
// own code (dlopen, symbols, kernelParams, the row-major Gemm swap, error
// paths) and the executor's -tags gdcuda tests run end to end; and, with
// GDATTN_FAKE_TSAN=1, TestGPUKernelRaces, the same on a fake driver that runs
// each launch as 4 OS threads with real atomics under ThreadSanitizer, which
// reports any two work items of a kernel touching the same memory without
// atomics (a race the serial emulator cannot see; none found), and
// TestGPUKernelRacesCaught, which requires it to report a deliberate one (a
// scatter order naming one id twice). On the development
// machine, beyond CI: Open reached cuInit through a real libcuda.so.1
// (Debian's 535 driver library, no device) and got CUDA_ERROR_NO_DEVICE, all
// cuBLAS entry points resolved in libcublas.so.11 (TestLoadCuBLAS), and the
// hand-written declarations were compared with the CUDA 11.8 cuda.h and
// cublas_api.h (they differ only in enum versus int parameters of the same
// size). Only a GPU run (scripts/gpu-device.sh) executes the kernels, the
// JIT of the PTX by the installed driver and the cuBLAS calls.
//
// # Streams and graph capture
//
// With ExecOptions.GraphCapture an executor queues its work on a stream of
// its own and replays the steady-state step (program, gradient statistics,
// step_finish) as one captured CUDA graph (exec_graph.go; docs/gpu.md says
// what stays outside the graph and when the executor falls back to
// ordinary launches). The stream and capture entry points are optional
// symbols of the driver (driver_cuda.go), declared from the CUDA 11.8
// cuda.h; the emulator (emu_stream.go) and the fake driver emulate capture
// by recording calls and replaying them in order; a fake driver built
// without cuGraphLaunch (TestGPUGraphCaptureUnsupported) checks that an old
// driver still opens and that the option is then an error naming the
// missing entry point. The option is off by default and has not run on a
// GPU.
package cuda

//go:generate go run ./internal/gen
