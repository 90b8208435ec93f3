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
 *     work item in order, and a warp kernel's 32 lanes are arrays that the
 *     thread loops over.
 * CI has gcc but no g++, so kernels must be C-compatible CUDA: no templates,
 * references, classes, overloading, default arguments or `auto`.
 *
 * Kernel contract:
 *   - Declare kernels with GDATTN_KERNEL (extern "C" __global__ void under
 *     nvcc), never with a bare __global__, so that the generator
 *     (go generate ./graph/cuda) finds them and the names are not mangled.
 *   - The body is one GDATTN_GRID_STRIDE loop over n work items; no shared
 *     memory, no __syncthreads, no warp intrinsics.
 *   - Deterministic: the result does not depend on how the GPU schedules the
 *     work items, so the same inputs give the same bits every run, and the
 *     emulator's serial run makes the device's additions in the device's
 *     order. A float atomicAdd adds
 *     in the order the items reach it, which varies run to run: combine
 *     items' results instead by a warp's butterfly (below), by partial
 *     results joined in a fixed order by a later launch, or, for a scatter,
 *     by arranging the items so that each output element has one writer
 *     (scatter_rows and scatter_cols, sparse.cu: the ids sorted on the host,
 *     an item per (id, column) summing its rows in position order). Sums of
 *     one value per row into a scalar (the loss, dL/dg of a learned scale)
 *     write the rows' values, then one work item adds them in row order
 *     (xent_loss, attn_g_add). The one atomicAdd left outside the self-test
 *     counts integers (adam_multi's non-finite values: exact in any order).
 *   - Or the kernel is a warp kernel (GDATTN_WARP_KERNEL, below): one warp of
 *     32 threads per work item, its body one GDATTN_WARP_STRIDE loop whose
 *     lanes share values only through the butterflies GDATTN_WARP_ALLREDUCE
 *     and GDATTN_WARP_ALLREDUCE2 (no shared memory, no __syncthreads, no
 *     other warp intrinsic).
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
 * log, sqrt, rsqrt, tanh, fabs, fmax, fmin, pow, log1p, expm1, mul_rn,
 * atomic_add),
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

/*
 * Warp kernels: one warp (32 threads, its lanes) per work item, for
 * reductions over long rows: the lanes read the row with a stride of 32
 * (neighbouring lanes read neighbouring elements), each keeps its own
 * partial result, and a butterfly of __shfl_xor_sync over the offsets 16,
 * 8, 4, 2, 1 combines them: at each offset o, lane l's new value is
 * OP(p[l], p[l ^ o]) of the old values p. The order is fixed, so the result
 * is the same bits every run, and with OP commutative (IEEE addition) every
 * lane ends with the same bits. Declared with
 * GDATTN_WARP_KERNEL, so that the generator marks them (kernelTable's warp
 * flag) and the backends launch them with blockDim a multiple of 32 and a
 * warp per item: the n of Launch counts items (warps), not threads.
 *
 *     #define ROWSUM_KERNEL(T, S)                                        \
 *     GDATTN_WARP_KERNEL GDATTN_NAME(rowsum, S)(long long n, int c,       \
 *                                               const T *x, double *y) {  \
 *         GDATTN_WARP_STRIDE(r, n) {                                      \
 *             GDATTN_LANE_VAR(double, s);                                 \
 *             GDATTN_FOR_LANES(lane) {                                    \
 *                 int j;                                                  \
 *                 GDATTN_AT(s, lane) = 0;                                 \
 *                 for (j = lane; j < c; j += 32)                          \
 *                     GDATTN_AT(s, lane) += (double)x[r * c + j];         \
 *             }                                                           \
 *             GDATTN_WARP_ALLREDUCE(double, s, GDATTN_ADD);               \
 *             GDATTN_WARP_ONCE { y[r] = GDATTN_WARP_VALUE(s); }           \
 *         }                                                               \
 *     }
 *
 *   - GDATTN_WARP_STRIDE(r, n) { ... } runs the block for every work item r
 *     in [0, n), one warp per item (on a GPU r is the global thread index
 *     over 32, stepping by the grid's warps).
 *   - GDATTN_LANE_VAR(T, v) declares a per-lane variable v (one register per
 *     lane; 32 values on the emulator); GDATTN_AT(v, lane) is lane's value.
 *   - GDATTN_FOR_LANES(lane) { ... } runs the block as every lane (on a GPU
 *     each thread once, as its own lane; on the emulator for lane = 0..31 in
 *     turn): lanes may read anything but write only their own per-lane
 *     variables and memory no other lane touches, and may use `continue`
 *     but not `break`.
 *   - GDATTN_WARP_ALLREDUCE(T, v, OP) combines per-lane v with the butterfly
 *     (OP a function or macro of two T: GDATTN_ADD or a GDATTN_DEVICE
 *     helper); GDATTN_WARP_ALLREDUCE2(T, a, b, FN) does the
 *     same for a pair, FN(&a, &b, a', b') updating a lane's pair from the
 *     partner's a', b' (FN must be symmetric in the two pairs for every lane
 *     to end equal; keep products apart from sums with __dmul_rn/__fmul_rn
 *     so that nvcc's fused multiply-adds do not make it lopsided).
 *   - GDATTN_WARP_VALUE(v) is v after a butterfly (the same on every lane);
 *     GDATTN_WARP_ONCE { ... } runs the block in one lane only (a result
 *     written once, an atomicAdd made once per item).
 *   - Every lane of a warp must reach each butterfly: the code around one
 *     may branch (or `continue` the stride loop) only on the work item.
 */
#if defined(__CUDACC__)
#define GDATTN_WARP_MARK
#define GDATTN_WARP_STRIDE(r, n)                                              \
    for (long long r = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; \
         r < (long long)(n); r += ((long long)blockDim.x * gridDim.x) >> 5)
#define GDATTN_LANE_VAR(T, v) T v
#define GDATTN_AT(v, lane) (v)
#define GDATTN_FOR_LANES(lane)                                                \
    for (int lane = (int)(threadIdx.x & 31u), gdattn_once_##lane = 1;         \
         gdattn_once_##lane; gdattn_once_##lane = 0)
#define GDATTN_WARP_VALUE(v) (v)
#define GDATTN_WARP_ONCE if ((threadIdx.x & 31u) == 0)
#define GDATTN_WARP_ALLREDUCE(T, v, OP)                                       \
    for (int gdattn_o_ = 16; gdattn_o_ > 0; gdattn_o_ >>= 1) {                \
        T gdattn_w_ = __shfl_xor_sync(0xffffffffu, (v), gdattn_o_);           \
        (v) = OP((v), gdattn_w_);                                             \
    }
#define GDATTN_WARP_ALLREDUCE2(T, a, b, FN)                                   \
    for (int gdattn_o_ = 16; gdattn_o_ > 0; gdattn_o_ >>= 1) {                \
        T gdattn_wa_ = __shfl_xor_sync(0xffffffffu, (a), gdattn_o_);          \
        T gdattn_wb_ = __shfl_xor_sync(0xffffffffu, (b), gdattn_o_);          \
        FN(&(a), &(b), gdattn_wa_, gdattn_wb_);                               \
    }
#endif

/* GDATTN_WARP_KERNEL starts a warp kernel definition (see above). */
#define GDATTN_WARP_KERNEL GDATTN_EXTERN_C GDATTN_WARP_MARK __global__ void

/* GDATTN_ADD is the butterfly's sum. */
#define GDATTN_ADD(x, y) ((x) + (y))

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
/* mul_rn: a product nvcc never contracts into a fused multiply-add (below). */
GDATTN_DEVICE float gdattn_mul_rn_f32(float x, float y) { return __fmul_rn(x, y); }
GDATTN_DEVICE double gdattn_mul_rn_f64(double x, double y) { return __dmul_rn(x, y); }
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
 * gdattn_lse_join: the butterfly's join of two (m, s) pairs, a running
 * maximum and Σ exp(v − m) of a log-sum-exp or softmax row (warp kernels):
 * (m, s) ← (mx, s·e^(m−mx) + s'·e^(m'−mx)), mx = max(m, m'), an empty pair
 * (s = 0) adding 0; symmetric in the two pairs, the products kept out of
 * fused multiply-adds.
 */
GDATTN_DEVICE void gdattn_lse_join(double *m, double *s, double om, double os) {
    double mx = *m > om ? *m : om;
    double a = *s == 0 ? 0 : __dmul_rn(*s, exp(*m - mx));
    double b = os == 0 ? 0 : __dmul_rn(os, exp(om - mx));
    *s = a + b;
    *m = mx;
}

/*
 * gdattn_lse_step: one value v into a lane's running (m, s): the sum
 * rescaled when v raises the maximum, −Inf adding nothing (a lane without a
 * finite value keeps s = 0, an empty pair for gdattn_lse_join), NaN
 * reaching s.
 */
GDATTN_DEVICE void gdattn_lse_step(double *m, double *s, double v) {
    if (v > *m) {
        *s = *s == 0 ? 0 : __dmul_rn(*s, exp(*m - v));
        *m = v;
    }
    if (v != -INFINITY) *s += exp(v - *m);
}

/*
 * __dmul_rn is CUDA's product that nvcc never contracts into a fused
 * multiply-add: the kernels use it where the host rounds a product before
 * adding (the Adam update's scaled gradient and decay factor).
 */

#endif /* GDATTN_COMMON_H */
