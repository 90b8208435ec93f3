//go:build gdcuda

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The few CUDA driver and cuBLAS types and entry points the backend uses,
// declared here so that no CUDA header or library is needed at build time;
// both libraries are opened with dlopen at run time. The values match
// cuda.h and cublas_api.h of CUDA 11 to 13 (a stable ABI).
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;
typedef int cublasStatus_t;
typedef void *cublasHandle_t;
typedef void *CUgraph;
typedef void *CUgraphExec;

enum {
	GD_CUDA_SUCCESS = 0,
	GD_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
	GD_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	GD_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
	GD_CU_JIT_INFO_LOG_BUFFER = 3,
	GD_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
	GD_CU_JIT_ERROR_LOG_BUFFER = 5,
	GD_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
	GD_CUBLAS_OP_N = 0,
	GD_CUBLAS_OP_T = 1,
	GD_CU_STREAM_NON_BLOCKING = 1,
	GD_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
};

static CUresult (*p_cuInit)(unsigned int);
static CUresult (*p_cuDeviceGetCount)(int *);
static CUresult (*p_cuDeviceGet)(CUdevice *, int);
static CUresult (*p_cuDeviceGetName)(char *, int, CUdevice);
static CUresult (*p_cuDeviceTotalMem)(size_t *, CUdevice);
static CUresult (*p_cuDeviceGetAttribute)(int *, int, CUdevice);
static CUresult (*p_cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*p_cuDevicePrimaryCtxRelease)(CUdevice);
static CUresult (*p_cuCtxSetCurrent)(CUcontext);
static CUresult (*p_cuCtxSynchronize)(void);
static CUresult (*p_cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*p_cuMemFree)(CUdeviceptr);
static CUresult (*p_cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
static CUresult (*p_cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
static CUresult (*p_cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
static CUresult (*p_cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
static CUresult (*p_cuModuleLoadDataEx)(CUmodule *, const void *, unsigned int, int *, void **);
static CUresult (*p_cuModuleUnload)(CUmodule);
static CUresult (*p_cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*p_cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int,
                                    unsigned int, unsigned int, unsigned int, unsigned int,
                                    CUstream, void **, void **);
static CUresult (*p_cuGetErrorString)(CUresult, const char **);
static CUresult (*p_cuGetErrorName)(CUresult, const char **);

// Streams (NewStream) and graph capture (ExecOptions.GraphCapture): looked
// up at load but optional, so that an old driver without them still opens;
// gd_missing_stream and gd_missing_graph name the first one missing.
static CUresult (*p_cuStreamCreate)(CUstream *, unsigned int);
static CUresult (*p_cuStreamDestroy)(CUstream);
static CUresult (*p_cuStreamSynchronize)(CUstream);
static CUresult (*p_cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
static CUresult (*p_cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
static CUresult (*p_cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
static CUresult (*p_cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
static CUresult (*p_cuStreamBeginCapture)(CUstream, int);
static CUresult (*p_cuStreamEndCapture)(CUstream, CUgraph *);
static CUresult (*p_cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
static CUresult (*p_cuGraphLaunch)(CUgraphExec, CUstream);
static CUresult (*p_cuGraphExecDestroy)(CUgraphExec);
static CUresult (*p_cuGraphDestroy)(CUgraph);
static cublasStatus_t (*p_cublasSetStream)(cublasHandle_t, CUstream);
static const char *gd_missing_stream_name;
static const char *gd_missing_graph_name;
static const char *gd_missing_stream(void) { return gd_missing_stream_name; }
static const char *gd_missing_graph(void) { return gd_missing_graph_name; }
static int gd_have_blas_stream(void) { return p_cublasSetStream != NULL; }

static cublasStatus_t (*p_cublasCreate)(cublasHandle_t *);
static cublasStatus_t (*p_cublasDestroy)(cublasHandle_t);
static cublasStatus_t (*p_cublasSgemmStridedBatched)(cublasHandle_t, int, int, int, int, int,
	const float *, const float *, int, long long, const float *, int, long long,
	const float *, float *, int, long long, int);
static cublasStatus_t (*p_cublasDgemmStridedBatched)(cublasHandle_t, int, int, int, int, int,
	const double *, const double *, int, long long, const double *, int, long long,
	const double *, double *, int, long long, int);

static void *gd_libcuda;
static void *gd_libcublas;

// gd_sym looks name up in lib; on failure it writes the reason to err.
static void *gd_sym(void *lib, const char *name, char *err, size_t errlen) {
	void *p = dlsym(lib, name);
	if (p == NULL && err[0] == 0) {
		snprintf(err, errlen, "symbol %s not found", name);
	}
	return p;
}

// gd_load_cuda opens libcuda.so.1 and resolves every driver entry point;
// it returns 0, 1 (library not found; err has dlerror) or 2 (symbol missing).
static int gd_load_cuda(char *err, size_t errlen) {
	err[0] = 0;
	if (gd_libcuda != NULL) return 0;
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "dlopen libcuda.so.1 failed");
		return 1;
	}
#define GD_LOAD(var, name) *(void **)(&var) = gd_sym(h, name, err, errlen)
	GD_LOAD(p_cuInit, "cuInit");
	GD_LOAD(p_cuDeviceGetCount, "cuDeviceGetCount");
	GD_LOAD(p_cuDeviceGet, "cuDeviceGet");
	GD_LOAD(p_cuDeviceGetName, "cuDeviceGetName");
	GD_LOAD(p_cuDeviceTotalMem, "cuDeviceTotalMem_v2");
	GD_LOAD(p_cuDeviceGetAttribute, "cuDeviceGetAttribute");
	GD_LOAD(p_cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	GD_LOAD(p_cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
	GD_LOAD(p_cuCtxSetCurrent, "cuCtxSetCurrent");
	GD_LOAD(p_cuCtxSynchronize, "cuCtxSynchronize");
	GD_LOAD(p_cuMemAlloc, "cuMemAlloc_v2");
	GD_LOAD(p_cuMemFree, "cuMemFree_v2");
	GD_LOAD(p_cuMemcpyHtoD, "cuMemcpyHtoD_v2");
	GD_LOAD(p_cuMemcpyDtoH, "cuMemcpyDtoH_v2");
	GD_LOAD(p_cuMemcpyDtoD, "cuMemcpyDtoD_v2");
	GD_LOAD(p_cuMemsetD8, "cuMemsetD8_v2");
	GD_LOAD(p_cuModuleLoadDataEx, "cuModuleLoadDataEx");
	GD_LOAD(p_cuModuleUnload, "cuModuleUnload");
	GD_LOAD(p_cuModuleGetFunction, "cuModuleGetFunction");
	GD_LOAD(p_cuLaunchKernel, "cuLaunchKernel");
	GD_LOAD(p_cuGetErrorString, "cuGetErrorString");
	GD_LOAD(p_cuGetErrorName, "cuGetErrorName");
	if (err[0] != 0) {
		dlclose(h);
		return 2;
	}
#define GD_OPT(var, name, missing) do { *(void **)(&var) = dlsym(h, name); \
		if (var == NULL && missing == NULL) missing = name; } while (0)
	GD_OPT(p_cuStreamCreate, "cuStreamCreate", gd_missing_stream_name);
	GD_OPT(p_cuStreamDestroy, "cuStreamDestroy_v2", gd_missing_stream_name);
	GD_OPT(p_cuStreamSynchronize, "cuStreamSynchronize", gd_missing_stream_name);
	GD_OPT(p_cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", gd_missing_stream_name);
	GD_OPT(p_cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", gd_missing_stream_name);
	GD_OPT(p_cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", gd_missing_stream_name);
	GD_OPT(p_cuMemsetD8Async, "cuMemsetD8Async", gd_missing_stream_name);
	GD_OPT(p_cuStreamBeginCapture, "cuStreamBeginCapture_v2", gd_missing_graph_name);
	GD_OPT(p_cuStreamEndCapture, "cuStreamEndCapture", gd_missing_graph_name);
	GD_OPT(p_cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", gd_missing_graph_name);
	GD_OPT(p_cuGraphLaunch, "cuGraphLaunch", gd_missing_graph_name);
	GD_OPT(p_cuGraphExecDestroy, "cuGraphExecDestroy", gd_missing_graph_name);
	GD_OPT(p_cuGraphDestroy, "cuGraphDestroy", gd_missing_graph_name);
	gd_libcuda = h;
	return 0;
}

// gd_load_cublas opens the first cuBLAS of names (NUL-separated, ending in
// an empty name) and resolves its entry points; it returns 0 or 1 (err says
// why) and, on success, the name it opened in used.
static int gd_load_cublas(const char *names, char *used, size_t usedlen, char *err, size_t errlen) {
	err[0] = 0;
	if (gd_libcublas != NULL) return 0;
	size_t off = 0;
	for (const char *n = names; *n != 0; n += strlen(n) + 1) {
		void *h = dlopen(n, RTLD_NOW | RTLD_LOCAL);
		if (h == NULL) {
			const char *e = dlerror();
			int w = snprintf(err + off, errlen - off, "%s%s", off ? "; " : "", e ? e : n);
			if (w > 0 && off + (size_t)w < errlen) off += (size_t)w;
			continue;
		}
		char serr[256];
		serr[0] = 0;
		*(void **)(&p_cublasCreate) = gd_sym(h, "cublasCreate_v2", serr, sizeof serr);
		*(void **)(&p_cublasDestroy) = gd_sym(h, "cublasDestroy_v2", serr, sizeof serr);
		*(void **)(&p_cublasSgemmStridedBatched) = gd_sym(h, "cublasSgemmStridedBatched", serr, sizeof serr);
		*(void **)(&p_cublasDgemmStridedBatched) = gd_sym(h, "cublasDgemmStridedBatched", serr, sizeof serr);
		*(void **)(&p_cublasSetStream) = dlsym(h, "cublasSetStream_v2"); // optional: streams need it
		if (serr[0] != 0) {
			int w = snprintf(err + off, errlen - off, "%s%s: %s", off ? "; " : "", n, serr);
			if (w > 0 && off + (size_t)w < errlen) off += (size_t)w;
			dlclose(h);
			continue;
		}
		gd_libcublas = h;
		snprintf(used, usedlen, "%s", n);
		err[0] = 0;
		return 0;
	}
	return 1;
}

// Trampolines: cgo cannot call C function pointers, so each entry point has
// a small C function that calls it. Those that need the context make it
// current first: goroutines move between OS threads, and a CUDA context is
// current per thread.
static CUresult gd_cuInit(void) { return p_cuInit(0); }
static CUresult gd_cuDeviceGetCount(int *n) { return p_cuDeviceGetCount(n); }
static CUresult gd_cuDeviceGet(CUdevice *d, int ordinal) { return p_cuDeviceGet(d, ordinal); }
static CUresult gd_cuDeviceGetName(char *name, int len, CUdevice d) { return p_cuDeviceGetName(name, len, d); }
static CUresult gd_cuDeviceTotalMem(size_t *b, CUdevice d) { return p_cuDeviceTotalMem(b, d); }
static CUresult gd_cuDeviceGetAttribute(int *v, int attr, CUdevice d) { return p_cuDeviceGetAttribute(v, attr, d); }
static CUresult gd_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { return p_cuDevicePrimaryCtxRetain(c, d); }
static CUresult gd_cuDevicePrimaryCtxRelease(CUdevice d) { return p_cuDevicePrimaryCtxRelease(d); }

static const char *gd_errname(CUresult r) {
	const char *s = NULL;
	if (p_cuGetErrorName == NULL || p_cuGetErrorName(r, &s) != GD_CUDA_SUCCESS || s == NULL) return "CUDA_ERROR_UNKNOWN_CODE";
	return s;
}
static const char *gd_errstring(CUresult r) {
	const char *s = NULL;
	if (p_cuGetErrorString == NULL || p_cuGetErrorString(r, &s) != GD_CUDA_SUCCESS || s == NULL) return "unrecognized error code";
	return s;
}

#define GD_CTX(ctx) do { CUresult r_ = p_cuCtxSetCurrent(ctx); if (r_ != GD_CUDA_SUCCESS) return r_; } while (0)

static CUresult gd_cuCtxSynchronize(CUcontext ctx) { GD_CTX(ctx); return p_cuCtxSynchronize(); }
static CUresult gd_cuMemAlloc(CUcontext ctx, CUdeviceptr *p, size_t n) { GD_CTX(ctx); return p_cuMemAlloc(p, n); }
static CUresult gd_cuMemFree(CUcontext ctx, CUdeviceptr p) { GD_CTX(ctx); return p_cuMemFree(p); }
static CUresult gd_cuMemcpyHtoD(CUcontext ctx, CUdeviceptr d, const void *s, size_t n) { GD_CTX(ctx); return p_cuMemcpyHtoD(d, s, n); }
static CUresult gd_cuMemcpyDtoH(CUcontext ctx, void *d, CUdeviceptr s, size_t n) { GD_CTX(ctx); return p_cuMemcpyDtoH(d, s, n); }
static CUresult gd_cuMemcpyDtoD(CUcontext ctx, CUdeviceptr d, CUdeviceptr s, size_t n) { GD_CTX(ctx); return p_cuMemcpyDtoD(d, s, n); }
static CUresult gd_cuMemsetD8(CUcontext ctx, CUdeviceptr d, size_t n) { GD_CTX(ctx); return p_cuMemsetD8(d, 0, n); }
static CUresult gd_cuModuleUnload(CUcontext ctx, CUmodule m) { GD_CTX(ctx); return p_cuModuleUnload(m); }
static CUresult gd_cuModuleGetFunction(CUcontext ctx, CUfunction *f, CUmodule m, const char *name) {
	GD_CTX(ctx);
	return p_cuModuleGetFunction(f, m, name);
}

// gd_load_module JIT-compiles the NUL-terminated PTX image; on failure the
// JIT's error log is in log.
static CUresult gd_load_module(CUcontext ctx, CUmodule *m, const char *ptx, char *log, size_t loglen) {
	GD_CTX(ctx);
	int opts[2] = {GD_CU_JIT_ERROR_LOG_BUFFER, GD_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void *vals[2] = {log, (void *)(uintptr_t)loglen};
	log[0] = 0;
	return p_cuModuleLoadDataEx(m, ptx, 2, opts, vals);
}

// gd_launch launches f on stream s (NULL: the default stream) with grid
// blocks of block threads; args[i] points at parameter i's value.
static CUresult gd_launch(CUcontext ctx, CUstream s, CUfunction f, unsigned int grid, unsigned int block, uint64_t *slots, int nargs) {
	GD_CTX(ctx);
	void *args[64];
	for (int i = 0; i < nargs && i < 64; i++) args[i] = &slots[i];
	return p_cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, args, NULL);
}

// Streams: a non-blocking stream per executor (NewStream); copies and
// memsets are queued on it, and the wait is a stream synchronise.
static CUresult gd_stream_create(CUcontext ctx, CUstream *s) { GD_CTX(ctx); return p_cuStreamCreate(s, GD_CU_STREAM_NON_BLOCKING); }
static CUresult gd_stream_destroy(CUcontext ctx, CUstream s) { GD_CTX(ctx); return p_cuStreamDestroy(s); }
static CUresult gd_stream_sync(CUcontext ctx, CUstream s) { GD_CTX(ctx); return p_cuStreamSynchronize(s); }
static CUresult gd_htod_async(CUcontext ctx, CUdeviceptr d, const void *src, size_t n, CUstream s) {
	GD_CTX(ctx);
	return p_cuMemcpyHtoDAsync(d, src, n, s);
}
// gd_dtoh_sync copies to host memory and waits for the copy.
static CUresult gd_dtoh_sync(CUcontext ctx, void *d, CUdeviceptr src, size_t n, CUstream s) {
	GD_CTX(ctx);
	CUresult r = p_cuMemcpyDtoHAsync(d, src, n, s);
	if (r != GD_CUDA_SUCCESS) return r;
	return p_cuStreamSynchronize(s);
}
static CUresult gd_dtod_async(CUcontext ctx, CUdeviceptr d, CUdeviceptr src, size_t n, CUstream s) {
	GD_CTX(ctx);
	return p_cuMemcpyDtoDAsync(d, src, n, s);
}
static CUresult gd_zero_async(CUcontext ctx, CUdeviceptr d, size_t n, CUstream s) { GD_CTX(ctx); return p_cuMemsetD8Async(d, 0, n, s); }

// Graph capture in thread-local mode (the executor locks its OS thread
// for the capture): gd_end_capture ends it and instantiates the graph
// (the CUgraph itself is not kept: the executable graph is independent).
static CUresult gd_begin_capture(CUcontext ctx, CUstream s) {
	GD_CTX(ctx);
	return p_cuStreamBeginCapture(s, GD_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
}
static CUresult gd_end_capture(CUcontext ctx, CUstream s, CUgraphExec *ge, int *stage) {
	GD_CTX(ctx);
	CUgraph g = NULL;
	*stage = 0;
	CUresult r = p_cuStreamEndCapture(s, &g);
	if (r != GD_CUDA_SUCCESS) {
		if (g != NULL) p_cuGraphDestroy(g);
		return r;
	}
	*stage = 1;
	r = p_cuGraphInstantiateWithFlags(ge, g, 0);
	p_cuGraphDestroy(g);
	return r;
}
static CUresult gd_graph_launch(CUcontext ctx, CUgraphExec ge, CUstream s) { GD_CTX(ctx); return p_cuGraphLaunch(ge, s); }
static CUresult gd_graph_exec_destroy(CUcontext ctx, CUgraphExec ge) { GD_CTX(ctx); return p_cuGraphExecDestroy(ge); }

static cublasStatus_t gd_cublasCreate(CUcontext ctx, cublasHandle_t *h) {
	CUresult r = p_cuCtxSetCurrent(ctx);
	if (r != GD_CUDA_SUCCESS) return -r;
	return p_cublasCreate(h);
}
static cublasStatus_t gd_cublasDestroy(CUcontext ctx, cublasHandle_t h) {
	CUresult r = p_cuCtxSetCurrent(ctx);
	if (r != GD_CUDA_SUCCESS) return -r;
	return p_cublasDestroy(h);
}

// gd_gemm computes the row-major C = alpha·op(A)·op(B) + beta·C batch by
// calling column-major cuBLAS on the transposes: Cᵀ = op(B)ᵀ·op(A)ᵀ, so B
// goes first and m, n swap. A negative return is a CUresult of making the
// context current, negated.
static cublasStatus_t gd_gemm(CUcontext ctx, cublasHandle_t h, CUstream s, int dbl, int ta, int tb,
		int m, int n, int k, double alpha,
		CUdeviceptr a, int lda, long long sa, CUdeviceptr b, int ldb, long long sb,
		double beta, CUdeviceptr c, int ldc, long long sc, int batch) {
	CUresult r = p_cuCtxSetCurrent(ctx);
	if (r != GD_CUDA_SUCCESS) return -r;
	if (p_cublasSetStream != NULL) {
		cublasStatus_t st = p_cublasSetStream(h, s);
		if (st != 0) return st;
	} else if (s != NULL) {
		return 7; // CUBLAS_STATUS_INVALID_VALUE: NewStream refuses this case
	}
	int opa = ta ? GD_CUBLAS_OP_T : GD_CUBLAS_OP_N;
	int opb = tb ? GD_CUBLAS_OP_T : GD_CUBLAS_OP_N;
	if (dbl) {
		return p_cublasDgemmStridedBatched(h, opb, opa, n, m, k, &alpha,
			(const double *)(uintptr_t)b, ldb, sb, (const double *)(uintptr_t)a, lda, sa,
			&beta, (double *)(uintptr_t)c, ldc, sc, batch);
	}
	float alpha32 = (float)alpha, beta32 = (float)beta;
	return p_cublasSgemmStridedBatched(h, opb, opa, n, m, k, &alpha32,
		(const float *)(uintptr_t)b, ldb, sb, (const float *)(uintptr_t)a, lda, sa,
		&beta32, (float *)(uintptr_t)c, ldc, sc, batch);
}
*/
import "C"

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"gorgonia.org/tensor"
)

// ptxSource is kernels/gdattn.ptx, built by scripts/build-ptx.sh from
// kernels/*.cu; the driver JIT-compiles it for the GPU at Open.
//
//go:embed kernels/gdattn.ptx
var ptxSource string

// cudaNoDevice is CUDA_ERROR_NO_DEVICE.
const cudaNoDevice = 100

// cudaError is a failed CUDA driver call.
type cudaError struct {
	call string
	code int
	name string
	text string
}

func (e *cudaError) Error() string {
	return fmt.Sprintf("cuda: %s: %s (%s, code %d)", e.call, e.name, e.text, e.code)
}

// check turns a CUresult into an error naming the call.
func check(call string, r C.CUresult) error {
	if r == C.GD_CUDA_SUCCESS {
		return nil
	}
	return &cudaError{call: call, code: int(r),
		name: C.GoString(C.gd_errname(r)), text: C.GoString(C.gd_errstring(r))}
}

// cublasStatusNames maps cublasStatus_t values to their names.
var cublasStatusNames = map[int]string{
	1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED",
	7: "CUBLAS_STATUS_INVALID_VALUE", 8: "CUBLAS_STATUS_ARCH_MISMATCH",
	11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// checkBLAS turns a cublasStatus_t (or a negated CUresult from making the
// context current) into an error.
func checkBLAS(call string, s C.cublasStatus_t) error {
	switch {
	case s == 0:
		return nil
	case s < 0:
		return check("cuCtxSetCurrent before "+call, C.CUresult(-s))
	}
	name, ok := cublasStatusNames[int(s)]
	if !ok {
		name = "unknown cuBLAS status"
	}
	return fmt.Errorf("cuda: %s: %s (status %d)", call, name, int(s))
}

var (
	loadMu     sync.Mutex
	cublasUsed string
)

// cublasCandidates lists the cuBLAS libraries tried in order: $GDATTN_CUBLAS
// (a path), then the sonames of CUDA 13, 12 and 11 and the unversioned name,
// each first on the loader's search path and then in $CUDA_HOME/lib64 and
// /usr/local/cuda/lib64.
func cublasCandidates() []string {
	var out []string
	if p := os.Getenv("GDATTN_CUBLAS"); p != "" {
		out = append(out, p)
	}
	names := []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}
	out = append(out, names...)
	dirs := []string{"/usr/local/cuda/lib64"}
	if h := os.Getenv("CUDA_HOME"); h != "" {
		dirs = append([]string{filepath.Join(h, "lib64")}, dirs...)
	}
	for _, d := range dirs {
		for _, n := range names {
			out = append(out, filepath.Join(d, n))
		}
	}
	return out
}

// loadCuBLAS opens the first of cublasCandidates that has every entry point
// the backend uses and records its name in cublasUsed. Callers hold loadMu.
func loadCuBLAS() error {
	var used [512]C.char
	var errbuf [4096]C.char
	names := strings.Join(cublasCandidates(), "\x00") + "\x00\x00"
	// The C string is malloc'd, read by the driver and freed on one OS
	// thread: ThreadSanitizer (the fake driver's race test) cannot see
	// the Go scheduler's ordering when the goroutine moves in between.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cnames := C.CString(names)
	defer C.free(unsafe.Pointer(cnames))
	if C.gd_load_cublas(cnames, &used[0], C.size_t(len(used)), &errbuf[0], C.size_t(len(errbuf))) != 0 {
		return fmt.Errorf("cuda: cannot load cuBLAS (set GDATTN_CUBLAS to its path): %s", C.GoString(&errbuf[0]))
	}
	if cublasUsed == "" {
		cublasUsed = C.GoString(&used[0])
	}
	return nil
}

// gpu is the Backend of Open.
type gpu struct {
	mu      sync.Mutex
	ordinal int
	dev     C.CUdevice
	ctx     C.CUcontext
	mod     C.CUmodule
	blas    C.cublasHandle_t
	funcs   []C.CUfunction // by kernelTable index, loaded on first use
	slots   *[maxArgs]uint64
	name    string
	closed  bool
	sms     int
	ccMajor int
	ccMinor int
}

// Open returns the GPU with the given ordinal (0 for the first). It loads
// libcuda.so.1 and cuBLAS with dlopen, retains the device's primary context,
// JIT-compiles the embedded PTX (kernels/gdattn.ptx) and creates a cuBLAS
// handle. Without a usable device the error wraps ErrNoDevice, with the
// reason: libcuda.so.1 missing, cuInit failing (e.g. CUDA_ERROR_NO_DEVICE) or
// zero devices.
func Open(ordinal int) (Backend, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	var errbuf [2048]C.char
	switch C.gd_load_cuda(&errbuf[0], C.size_t(len(errbuf))) {
	case 0:
	case 1:
		return nil, fmt.Errorf("%w: %s", ErrNoDevice, C.GoString(&errbuf[0]))
	default:
		return nil, fmt.Errorf("%w: libcuda.so.1 is too old: %s", ErrNoDevice, C.GoString(&errbuf[0]))
	}
	if err := check("cuInit", C.gd_cuInit()); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNoDevice, strings.TrimPrefix(err.Error(), "cuda: "))
	}
	var count C.int
	if err := check("cuDeviceGetCount", C.gd_cuDeviceGetCount(&count)); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNoDevice, strings.TrimPrefix(err.Error(), "cuda: "))
	}
	if count == 0 {
		return nil, fmt.Errorf("%w: the driver reports 0 devices", ErrNoDevice)
	}
	if ordinal < 0 || ordinal >= int(count) {
		return nil, fmt.Errorf("cuda: device ordinal %d out of range [0, %d)", ordinal, int(count))
	}
	g := &gpu{ordinal: ordinal}
	if err := check("cuDeviceGet", C.gd_cuDeviceGet(&g.dev, C.int(ordinal))); err != nil {
		return nil, err
	}
	var name [256]C.char
	if err := check("cuDeviceGetName", C.gd_cuDeviceGetName(&name[0], C.int(len(name)), g.dev)); err != nil {
		return nil, err
	}
	var mem C.size_t
	if err := check("cuDeviceTotalMem", C.gd_cuDeviceTotalMem(&mem, g.dev)); err != nil {
		return nil, err
	}
	for _, a := range []struct {
		attr C.int
		dst  *int
	}{
		{C.GD_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &g.ccMajor},
		{C.GD_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &g.ccMinor},
		{C.GD_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &g.sms},
	} {
		var v C.int
		if err := check("cuDeviceGetAttribute", C.gd_cuDeviceGetAttribute(&v, a.attr, g.dev)); err != nil {
			return nil, err
		}
		*a.dst = int(v)
	}
	g.name = fmt.Sprintf("%s (sm_%d%d, %d SMs, %.0f GiB)", C.GoString(&name[0]), g.ccMajor, g.ccMinor, g.sms,
		float64(mem)/(1<<30))
	if err := check("cuDevicePrimaryCtxRetain", C.gd_cuDevicePrimaryCtxRetain(&g.ctx, g.dev)); err != nil {
		return nil, err
	}
	fail := func(err error) (Backend, error) {
		g.release()
		return nil, err
	}
	if err := g.loadModule(); err != nil {
		return fail(err)
	}
	// Gemm uses cuBLAS, or the gemm_naive kernel when cuBLAS cannot be
	// loaded or GDATTN_NO_CUBLAS is set.
	if os.Getenv("GDATTN_NO_CUBLAS") != "" {
		g.name += ", Gemm by the gemm_naive kernel (GDATTN_NO_CUBLAS set)"
	} else if err := loadCuBLAS(); err != nil {
		g.name += ", Gemm by the gemm_naive kernel (" + err.Error() + ")"
	} else if err := checkBLAS("cublasCreate", C.gd_cublasCreate(g.ctx, &g.blas)); err != nil {
		g.blas = nil
		g.name += ", Gemm by the gemm_naive kernel (" + err.Error() + ")"
	} else {
		g.name += ", " + filepath.Base(cublasUsed)
	}
	g.funcs = make([]C.CUfunction, len(kernelTable))
	g.slots = (*[maxArgs]uint64)(C.malloc(maxArgs * 8)) // packArgs writes every slot a launch reads
	if g.slots == nil {
		return fail(errors.New("cuda: out of host memory"))
	}
	return g, nil
}

// loadModule JIT-compiles the embedded PTX into the context.
func (g *gpu) loadModule() error {
	if ptxSource == "" {
		return errors.New("cuda: the embedded kernels/gdattn.ptx is empty: run scripts/build-ptx.sh")
	}
	// The C string is malloc'd, read by the driver and freed on one OS
	// thread: ThreadSanitizer (the fake driver's race test) cannot see
	// the Go scheduler's ordering when the goroutine moves in between.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	src := C.CString(ptxSource)
	defer C.free(unsafe.Pointer(src))
	var log [8192]C.char
	r := C.gd_load_module(g.ctx, &g.mod, src, &log[0], C.size_t(len(log)))
	if err := check("cuModuleLoadDataEx (JIT of kernels/gdattn.ptx)", r); err != nil {
		if l := strings.TrimSpace(C.GoString(&log[0])); l != "" {
			return fmt.Errorf("%w\n%s", err, l)
		}
		return err
	}
	return nil
}

// release undoes a partly finished Open.
func (g *gpu) release() {
	if g.blas != nil {
		C.gd_cublasDestroy(g.ctx, g.blas)
		g.blas = nil
	}
	if g.mod != nil {
		C.gd_cuModuleUnload(g.ctx, g.mod)
		g.mod = nil
	}
	C.gd_cuDevicePrimaryCtxRelease(g.dev)
	if g.slots != nil {
		C.free(unsafe.Pointer(g.slots))
		g.slots = nil
	}
}

func (g *gpu) Name() string { return g.name }

func (g *gpu) Alloc(bytes int64) (Ptr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("cuda: Alloc(%d): size must be positive", bytes)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return 0, errClosed
	}
	var p C.CUdeviceptr
	if err := check(fmt.Sprintf("cuMemAlloc(%d bytes)", bytes), C.gd_cuMemAlloc(g.ctx, &p, C.size_t(bytes))); err != nil {
		return 0, err
	}
	return Ptr(p), nil
}

func (g *gpu) Free(p Ptr) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errClosed
	}
	return check("cuMemFree", C.gd_cuMemFree(g.ctx, C.CUdeviceptr(p)))
}

// ready checks a copy's size and the backend's state. Callers hold g.mu.
func (g *gpu) ready(bytes int64) error {
	if g.closed {
		return errClosed
	}
	if bytes < 0 {
		return fmt.Errorf("cuda: negative byte count %d", bytes)
	}
	return nil
}

func (g *gpu) CopyHtoD(dst Ptr, src unsafe.Pointer, bytes int64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.ready(bytes); err != nil || bytes == 0 {
		return err
	}
	return check("cuMemcpyHtoD", C.gd_cuMemcpyHtoD(g.ctx, C.CUdeviceptr(dst), src, C.size_t(bytes)))
}

func (g *gpu) CopyDtoH(dst unsafe.Pointer, src Ptr, bytes int64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.ready(bytes); err != nil || bytes == 0 {
		return err
	}
	return check("cuMemcpyDtoH", C.gd_cuMemcpyDtoH(g.ctx, dst, C.CUdeviceptr(src), C.size_t(bytes)))
}

func (g *gpu) CopyDtoD(dst, src Ptr, bytes int64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.ready(bytes); err != nil || bytes == 0 {
		return err
	}
	return check("cuMemcpyDtoD", C.gd_cuMemcpyDtoD(g.ctx, C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(bytes)))
}

func (g *gpu) Zero(p Ptr, bytes int64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.ready(bytes); err != nil || bytes == 0 {
		return err
	}
	return check("cuMemsetD8", C.gd_cuMemsetD8(g.ctx, C.CUdeviceptr(p), C.size_t(bytes)))
}

// function returns the kernel's handle, looking it up in the module once.
// Callers hold g.mu.
func (g *gpu) function(idx int) (C.CUfunction, error) {
	if f := g.funcs[idx]; f != nil {
		return f, nil
	}
	// The C string is malloc'd, read by the driver and freed on one OS
	// thread: ThreadSanitizer (the fake driver's race test) cannot see
	// the Go scheduler's ordering when the goroutine moves in between.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	name := C.CString(kernelTable[idx].name)
	defer C.free(unsafe.Pointer(name))
	var f C.CUfunction
	if err := check("cuModuleGetFunction("+kernelTable[idx].name+")", C.gd_cuModuleGetFunction(g.ctx, &f, g.mod, name)); err != nil {
		return nil, fmt.Errorf("%w: kernels/gdattn.ptx lacks it; run scripts/build-ptx.sh", err)
	}
	g.funcs[idx] = f
	return f, nil
}

func (g *gpu) Launch(name string, n int64, args ...any) error {
	idx, err := lookupKernel(name)
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("cuda: Launch %s: negative work-item count %d", name, n)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errClosed
	}
	return g.launch(idx, n, args)
}

// launch packs args and launches kernel idx over n work items. Callers hold
// g.mu.
func (g *gpu) launch(idx int, n int64, args []any) error {
	return g.launchOn(nil, idx, n, args)
}

// launchOn is launch on stream s (nil: the default stream). Callers hold
// g.mu.
func (g *gpu) launchOn(s C.CUstream, idx int, n int64, args []any) error {
	if err := packArgs(&kernelTable[idx], args, g.slots[:], nil); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	f, err := g.function(idx)
	if err != nil {
		return err
	}
	r := C.gd_launch(g.ctx, s, f, C.uint(gridFor(launchThreads(&kernelTable[idx], n))), threadsPerBlock, (*C.uint64_t)(unsafe.Pointer(g.slots)), C.int(len(args)))
	return check("cuLaunchKernel("+kernelTable[idx].name+")", r)
}

func (g *gpu) Gemm(dt tensor.Dtype, transA, transB bool, m, n, k int, alpha float64,
	a Ptr, lda int, sA int64, b Ptr, ldb int, sB int64,
	beta float64, c Ptr, ldc int, sC int64, batch int) error {
	return g.gemmOn(nil, dt, transA, transB, m, n, k, alpha, a, lda, sA, b, ldb, sB, beta, c, ldc, sC, batch)
}

// gemmOn is Gemm on stream st (nil: the default stream).
func (g *gpu) gemmOn(st C.CUstream, dt tensor.Dtype, transA, transB bool, m, n, k int, alpha float64,
	a Ptr, lda int, sA int64, b Ptr, ldb int, sB int64,
	beta float64, c Ptr, ldc int, sC int64, batch int) error {
	s, err := checkGemm(dt, transA, transB, m, n, k, alpha, a, lda, sA, b, ldb, sB, beta, c, ldc, sC, batch)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errClosed
	}
	if s.noop {
		return nil
	}
	if g.blas == nil {
		name := "gemm_naive_f32"
		if dt == tensor.Float64 {
			name = "gemm_naive_f64"
		}
		idx, err := lookupKernel(name)
		if err != nil {
			return err
		}
		items := int64(batch) * int64(m) * int64(n)
		return g.launchOn(st, idx, items, []any{items, cbool32(transA), cbool32(transB), int32(m), int32(n), int32(k), alpha,
			a, int32(lda), sA, b, int32(ldb), sB, beta, c, int32(ldc), sC})
	}
	dbl := C.int(0)
	call := "cublasSgemmStridedBatched"
	if dt == tensor.Float64 {
		dbl, call = 1, "cublasDgemmStridedBatched"
	}
	rc := C.gd_gemm(g.ctx, g.blas, st, dbl, cbool(transA), cbool(transB), C.int(m), C.int(n), C.int(k), C.double(alpha),
		C.CUdeviceptr(a), C.int(lda), C.longlong(sA), C.CUdeviceptr(b), C.int(ldb), C.longlong(sB),
		C.double(beta), C.CUdeviceptr(c), C.int(ldc), C.longlong(sC), C.int(batch))
	return checkBLAS(call, rc)
}

func cbool32(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func (g *gpu) Sync() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errClosed
	}
	return check("cuCtxSynchronize", C.gd_cuCtxSynchronize(g.ctx))
}

func (g *gpu) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	err := check("cuCtxSynchronize", C.gd_cuCtxSynchronize(g.ctx))
	g.release()
	g.closed = true
	return err
}

// warpSize is the number of threads of a warp kernel's work item
// (GDATTN_WARP_KERNEL in kernels/common.h): its lanes.
const warpSize = 32

// A block holds whole warps (a compile-time check: a negative constant does
// not convert to uint).
const _ uint = -(threadsPerBlock % warpSize)

// launchThreads is the number of threads a launch of kernel k over n work
// items needs: n, or warpSize·n for a warp kernel (saturating; a grid-stride
// loop covers what the grid does not).
func launchThreads(k *kernelSig, n int64) int64 {
	if !k.warp {
		return n
	}
	if n > math.MaxInt64/warpSize {
		return math.MaxInt64
	}
	return n * warpSize
}

// gridFor returns the number of blocks of threadsPerBlock threads for n
// threads: ceil(n/256), at most maxBlocks.
func gridFor(n int64) uint32 {
	b := (n + threadsPerBlock - 1) / threadsPerBlock
	if b > maxBlocks {
		b = maxBlocks
	}
	return uint32(b)
}

// gpuStream is a stream of the GPU backend (NewStream): a non-blocking
// CUDA stream that carries every launch, cuBLAS product (cublasSetStream
// before each), copy and memset of one executor; Sync is a stream
// synchronise and CopyDtoH waits for its copy. It captures graphs
// (grapher) in thread-local mode.
type gpuStream struct {
	g         *gpu
	s         C.CUstream
	exec      C.CUgraphExec // the captured graph, nil if none
	capturing bool
	failed    error // first error while capturing
	closed    bool
}

// NewStream returns a stream of the GPU (see streamer). It fails when the
// driver lacks the stream entry points, or cuBLAS lacks cublasSetStream_v2.
func (g *gpu) NewStream() (Backend, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, errClosed
	}
	if m := C.gd_missing_stream(); m != nil {
		return nil, fmt.Errorf("cuda: NewStream: the CUDA driver lacks %s", C.GoString(m))
	}
	if g.blas != nil && C.gd_have_blas_stream() == 0 {
		return nil, fmt.Errorf("cuda: NewStream: %s lacks cublasSetStream_v2", cublasUsed)
	}
	st := &gpuStream{g: g}
	if err := check("cuStreamCreate", C.gd_stream_create(g.ctx, &st.s)); err != nil {
		return nil, err
	}
	return st, nil
}

// lock takes the device's lock and checks the stream is usable.
func (s *gpuStream) lock() error {
	s.g.mu.Lock()
	if s.g.closed {
		s.g.mu.Unlock()
		return errClosed
	}
	if s.closed {
		s.g.mu.Unlock()
		return errors.New("cuda: stream is closed")
	}
	return nil
}

// note records err as the capture's failure when capturing.
func (s *gpuStream) note(err error) error {
	if err != nil && s.capturing && s.failed == nil {
		s.failed = err
	}
	return err
}

// refuse is the error of a call that cannot be captured.
func (s *gpuStream) refuse(call string) error {
	return s.note(fmt.Errorf("cuda: %s while the stream is capturing", call))
}

func (s *gpuStream) Name() string                   { return s.g.Name() }
func (s *gpuStream) Alloc(bytes int64) (Ptr, error) { return s.g.Alloc(bytes) }
func (s *gpuStream) Free(p Ptr) error               { return s.g.Free(p) }

func (s *gpuStream) CopyHtoD(dst Ptr, src unsafe.Pointer, bytes int64) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.g.mu.Unlock()
	if s.capturing {
		return s.refuse("CopyHtoD")
	}
	if err := s.g.ready(bytes); err != nil || bytes == 0 {
		return err
	}
	return check("cuMemcpyHtoDAsync", C.gd_htod_async(s.g.ctx, C.CUdeviceptr(dst), src, C.size_t(bytes), s.s))
}

func (s *gpuStream) CopyDtoH(dst unsafe.Pointer, src Ptr, bytes int64) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.g.mu.Unlock()
	if s.capturing {
		return s.refuse("CopyDtoH")
	}
	if err := s.g.ready(bytes); err != nil || bytes == 0 {
		return err
	}
	return check("cuMemcpyDtoHAsync", C.gd_dtoh_sync(s.g.ctx, dst, C.CUdeviceptr(src), C.size_t(bytes), s.s))
}

func (s *gpuStream) CopyDtoD(dst, src Ptr, bytes int64) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.g.mu.Unlock()
	if err := s.g.ready(bytes); err != nil || bytes == 0 {
		return s.note(err)
	}
	return s.note(check("cuMemcpyDtoDAsync", C.gd_dtod_async(s.g.ctx, C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(bytes), s.s)))
}

func (s *gpuStream) Zero(p Ptr, bytes int64) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.g.mu.Unlock()
	if err := s.g.ready(bytes); err != nil || bytes == 0 {
		return s.note(err)
	}
	return s.note(check("cuMemsetD8Async", C.gd_zero_async(s.g.ctx, C.CUdeviceptr(p), C.size_t(bytes), s.s)))
}

func (s *gpuStream) Launch(name string, n int64, args ...any) error {
	idx, err := lookupKernel(name)
	if err != nil {
		return s.note(err)
	}
	if n < 0 {
		return s.note(fmt.Errorf("cuda: Launch %s: negative work-item count %d", name, n))
	}
	if err := s.lock(); err != nil {
		return err
	}
	defer s.g.mu.Unlock()
	return s.note(s.g.launchOn(s.s, idx, n, args))
}

func (s *gpuStream) Gemm(dt tensor.Dtype, transA, transB bool, m, n, k int, alpha float64,
	a Ptr, lda int, sA int64, b Ptr, ldb int, sB int64,
	beta float64, c Ptr, ldc int, sC int64, batch int) error {
	if s.closed {
		return errors.New("cuda: stream is closed")
	}
	return s.note(s.g.gemmOn(s.s, dt, transA, transB, m, n, k, alpha, a, lda, sA, b, ldb, sB, beta, c, ldc, sC, batch))
}

func (s *gpuStream) Sync() error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.g.mu.Unlock()
	if s.capturing {
		return s.refuse("Sync")
	}
	return check("cuStreamSynchronize", C.gd_stream_sync(s.g.ctx, s.s))
}

// CanCapture reports whether the driver has the graph entry points.
func (s *gpuStream) CanCapture() error {
	if m := C.gd_missing_graph(); m != nil {
		return fmt.Errorf("cuda: graph capture: the CUDA driver lacks %s", C.GoString(m))
	}
	return nil
}

func (s *gpuStream) BeginCapture() error {
	if err := s.CanCapture(); err != nil {
		return err
	}
	if err := s.lock(); err != nil {
		return err
	}
	defer s.g.mu.Unlock()
	if s.capturing {
		return errors.New("cuda: BeginCapture: the stream is already capturing")
	}
	if err := check("cuStreamBeginCapture", C.gd_begin_capture(s.g.ctx, s.s)); err != nil {
		return err
	}
	s.capturing, s.failed = true, nil
	return nil
}

func (s *gpuStream) EndCapture() error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.g.mu.Unlock()
	if !s.capturing {
		return errors.New("cuda: EndCapture: the stream is not capturing")
	}
	s.capturing = false
	failed := s.failed
	s.failed = nil
	var ge C.CUgraphExec
	var stage C.int
	r := C.gd_end_capture(s.g.ctx, s.s, &ge, &stage)
	if failed != nil {
		if r == 0 {
			C.gd_graph_exec_destroy(s.g.ctx, ge)
		}
		return fmt.Errorf("cuda: capture failed: %w", failed)
	}
	call := "cuStreamEndCapture"
	if stage == 1 {
		call = "cuGraphInstantiateWithFlags"
	}
	if err := check(call, r); err != nil {
		return fmt.Errorf("cuda: capture failed: %w", err)
	}
	s.dropLocked()
	s.exec = ge
	return nil
}

func (s *gpuStream) LaunchGraph() error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.g.mu.Unlock()
	if s.capturing {
		return s.refuse("LaunchGraph")
	}
	if s.exec == nil {
		return errors.New("cuda: LaunchGraph: no graph captured")
	}
	return check("cuGraphLaunch", C.gd_graph_launch(s.g.ctx, s.exec, s.s))
}

func (s *gpuStream) DropGraph() error {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	if s.g.closed {
		return nil
	}
	return s.dropLocked()
}

// dropLocked destroys the captured graph. Callers hold g.mu.
func (s *gpuStream) dropLocked() error {
	if s.exec == nil {
		return nil
	}
	err := check("cuGraphExecDestroy", C.gd_graph_exec_destroy(s.g.ctx, s.exec))
	s.exec = nil
	return err
}

// Close waits for the stream and destroys it (and its graph); the device
// stays open.
func (s *gpuStream) Close() error {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	if s.closed || s.g.closed {
		s.closed = true
		return nil
	}
	s.closed = true
	err := check("cuStreamSynchronize", C.gd_stream_sync(s.g.ctx, s.s))
	if derr := s.dropLocked(); err == nil {
		err = derr
	}
	if derr := check("cuStreamDestroy", C.gd_stream_destroy(s.g.ctx, s.s)); err == nil {
		err = derr
	}
	return err
}
