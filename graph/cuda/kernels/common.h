/*
 * common.h: the conventions every gdattn kernel follows. Include it first in
 * every kernels/<name>.cu file:
 *
 *     #include "common.h"
 *
 * The same source is compiled two ways:
 *   - by nvcc (scripts/build-ptx.sh) into kernels/gdattn.ptx, which the GPU
 *     backend (build tag gdcuda) embeds and loads with cuModuleLoadDataEx;
 *   - by gcc as plain C11 (build tag cudaemu, through the generated
 *     emu_kernels.c), where kernels/emu.h turns every launch into one serial
 *     thread (blockDim = gridDim = 1), so the grid-stride loop visits every
 *     work item in order.
 * CI has gcc but no g++, so kernels must be C-compatible CUDA: no templates,
 * references, classes, overloading, default arguments or `auto`.
 *
 * Kernel contract:
 *   - Declare kernels with GDATTN_KERNEL (extern "C" __global__ void under
 *     nvcc), never with a bare __global__, so that the generator
 *     (go generate ./graph/cuda) finds them and the names are not mangled.
 *   - The body is one GDATTN_GRID_STRIDE loop over n work items; no shared
 *     memory, no __syncthreads, no warp intrinsics. Items may combine results
 *     with atomicAdd (float, double, int).
 *   - Parameters are pointers (any element type; Go passes cuda.Ptr), int
 *     (Go int32 or int), long long (Go int64 or int), float (Go float32) or
 *     double (Go float64). Nothing else (no size_t, unsigned, structs).
 *   - Kernel names are unique across all kernels/<name>.cu files; element-type
 *     variants end in _f32 and _f64. Helper functions are
 *     `GDATTN_DEVICE type name(...)`, and their names must also be unique
 *     across files: all files are compiled as one translation unit.
 *
 * float/double instantiation: write the kernel once as a macro of (T, S),
 * T the element type and S the suffix (_f32 or _f64), and instantiate it with
 * GDATTN_FLOATS. Inside, GDATTN_NAME(name, S) pastes the suffix and
 * GDATTN_FN(fn, S) calls the type-matched math function defined below (exp,
 * log, sqrt, rsqrt, tanh, fabs, fmax, fmin, pow, log1p, expm1, atomic_add),
 * so that float kernels use expf and not the double exp:
 *
 *     #define SCALE_KERNEL(T, S)                                       \
 *     GDATTN_KERNEL GDATTN_NAME(scale, S)(long long n, T a, T *x) {   \
 *         GDATTN_GRID_STRIDE(i, n) { x[i] = a * x[i]; }               \
 *     }
 *     GDATTN_FLOATS(SCALE_KERNEL)
 *
 * defines scale_f32(long long, float, float*) and
 * scale_f64(long long, double, double*). Long bodies can go in a
 * GDATTN_DEVICE helper per type instead, also instantiated by GDATTN_FLOATS.
 *
 * After adding or changing a kernel, run `go generate ./graph/cuda` (the
 * emulator dispatch and the Go kernel table) and scripts/build-ptx.sh (the
 * PTX; it needs nvcc and runs go generate too).
 */
#ifndef GDATTN_COMMON_H
#define GDATTN_COMMON_H

#if defined(__CUDACC__)
#define GDATTN_EXTERN_C extern "C"
#else
#include "emu.h"
#define GDATTN_EXTERN_C
#endif

/* GDATTN_KERNEL starts a kernel definition: GDATTN_KERNEL name(params) {...} */
#define GDATTN_KERNEL GDATTN_EXTERN_C __global__ void

/* GDATTN_DEVICE starts a device helper function. */
#define GDATTN_DEVICE static __device__ __forceinline__

/*
 * GDATTN_GRID_STRIDE(i, n) { ... } runs the block for every long long i in
 * [0, n), each GPU thread taking i = global thread index, then stepping by
 * the total number of threads in the grid.
 */
#define GDATTN_GRID_STRIDE(i, n)                                              \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;      \
         i < (long long)(n); i += (long long)blockDim.x * gridDim.x)

/* GDATTN_FLOATS(M) expands M(float, _f32) M(double, _f64). */
#define GDATTN_FLOATS(M) M(float, _f32) M(double, _f64)

/* GDATTN_NAME(name, S) is name##S, e.g. GDATTN_NAME(axpy, _f32) = axpy_f32. */
#define GDATTN_CAT_(a, b) a##b
#define GDATTN_NAME(name, S) GDATTN_CAT_(name, S)

/* GDATTN_FN(fn, S) names the math helper gdattn_<fn><S>, e.g. gdattn_exp_f32. */
#define GDATTN_FN(fn, S) GDATTN_CAT_(gdattn_##fn, S)

GDATTN_DEVICE float gdattn_exp_f32(float x) { return expf(x); }
GDATTN_DEVICE double gdattn_exp_f64(double x) { return exp(x); }
GDATTN_DEVICE float gdattn_log_f32(float x) { return logf(x); }
GDATTN_DEVICE double gdattn_log_f64(double x) { return log(x); }
GDATTN_DEVICE float gdattn_sqrt_f32(float x) { return sqrtf(x); }
GDATTN_DEVICE double gdattn_sqrt_f64(double x) { return sqrt(x); }
GDATTN_DEVICE float gdattn_rsqrt_f32(float x) { return rsqrtf(x); }
GDATTN_DEVICE double gdattn_rsqrt_f64(double x) { return rsqrt(x); }
GDATTN_DEVICE float gdattn_tanh_f32(float x) { return tanhf(x); }
GDATTN_DEVICE double gdattn_tanh_f64(double x) { return tanh(x); }
GDATTN_DEVICE float gdattn_fabs_f32(float x) { return fabsf(x); }
GDATTN_DEVICE double gdattn_fabs_f64(double x) { return fabs(x); }
GDATTN_DEVICE float gdattn_fmax_f32(float x, float y) { return fmaxf(x, y); }
GDATTN_DEVICE double gdattn_fmax_f64(double x, double y) { return fmax(x, y); }
GDATTN_DEVICE float gdattn_fmin_f32(float x, float y) { return fminf(x, y); }
GDATTN_DEVICE double gdattn_fmin_f64(double x, double y) { return fmin(x, y); }
GDATTN_DEVICE float gdattn_pow_f32(float x, float y) { return powf(x, y); }
GDATTN_DEVICE double gdattn_pow_f64(double x, double y) { return pow(x, y); }
GDATTN_DEVICE float gdattn_log1p_f32(float x) { return log1pf(x); }
GDATTN_DEVICE double gdattn_log1p_f64(double x) { return log1p(x); }
GDATTN_DEVICE float gdattn_expm1_f32(float x) { return expm1f(x); }
GDATTN_DEVICE double gdattn_expm1_f64(double x) { return expm1(x); }
/* atomic_add adds v to *p atomically (serially on the emulator); returns the old value. */
GDATTN_DEVICE float gdattn_atomic_add_f32(float *p, float v) { return atomicAdd(p, v); }
GDATTN_DEVICE double gdattn_atomic_add_f64(double *p, double v) { return atomicAdd(p, v); }

/*
 * Multi-tensor kernels (adam.cu, gradstats.cu) run over several tensors in one
 * launch: a table of long long in device memory holds the tensors' offsets
 * (prefix sums of their work items) and addresses (a device address fits a
 * long long: cast it back with (T *)tab[i]); gdattn_segment finds the tensor
 * a work item belongs to.
 */

/* gdattn_segment returns the k in [0, np) with off[k] <= i < off[k+1]. */
GDATTN_DEVICE int gdattn_segment(const long long *off, int np, long long i) {
    int lo = 0, hi = np - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (off[mid] <= i)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/*
 * __dmul_rn is CUDA's product that nvcc never contracts into a fused
 * multiply-add: the kernels use it where the host rounds a product before
 * adding (the Adam update's scaled gradient and decay factor).
 */

#endif /* GDATTN_COMMON_H */
