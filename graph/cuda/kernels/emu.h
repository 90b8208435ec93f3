/*
 * emu.h: just enough CUDA for gcc to compile the kernels as C11 (build tag
 * cudaemu). kernels/common.h includes it when __CUDACC__ is not defined; do
 * not include it directly.
 *
 * A launch on the emulator is one serial thread: threadIdx = blockIdx = 0 and
 * blockDim = gridDim = 1, so a GDATTN_GRID_STRIDE loop visits i = 0, 1, ...,
 * n-1 in order, and atomicAdd is a plain read-modify-write. A warp kernel's
 * thread is one whole warp: GDATTN_WARP_STRIDE visits its items in order, a
 * per-lane variable is an array of 32, GDATTN_FOR_LANES loops over the lanes
 * 0..31, and the butterflies compute p'[l] = OP(p[l], p[l ^ o]) for every
 * lane from the old values p, offset by offset (16, 8, 4, 2, 1): the device's
 * arithmetic in the device's order. Anything a kernel uses that is not
 * defined here (shared memory, __syncthreads, warp intrinsics such as
 * __shfl_xor_sync, C++) fails to compile, which is the point: the kernel
 * contract in common.h forbids it outside its warp macros.
 *
 * With GDATTN_GEN defined (only by the generator, graph/cuda/internal/gen, which
 * runs `gcc -E` over each kernel file), __global__ expands to a marker that
 * the generator looks for to find every kernel's signature after all macros
 * have been expanded, and GDATTN_WARP_MARK a second marker just before it
 * on warp kernels.
 */
#ifndef GDATTN_EMU_H
#define GDATTN_EMU_H

#include <math.h>
#include <stdint.h>

typedef struct {
    unsigned int x, y, z;
} gdattn_dim3;

#if defined(GDATTN_EMU_THREADS)
/*
 * Threaded emulation (only testdata/fakecuda.c builds it, for the race test
 * of driver_fake_test.go): a launch runs blockDim.x OS threads, thread t with
 * threadIdx.x = t, and atomicAdd is a real atomic, so that kernels whose
 * work items write the same memory without atomics race, which
 * ThreadSanitizer reports.
 */
extern __thread gdattn_dim3 threadIdx;
extern gdattn_dim3 blockDim;
#else
static const gdattn_dim3 threadIdx = {0, 0, 0};
static const gdattn_dim3 blockDim = {1, 1, 1};
#endif
static const gdattn_dim3 blockIdx = {0, 0, 0};
static const gdattn_dim3 gridDim = {1, 1, 1};

#if defined(GDATTN_GEN)
#define __global__ gdattn_kernel_marker
#define GDATTN_WARP_MARK gdattn_warp_marker
#else
#define __global__
#define GDATTN_WARP_MARK
#endif
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict

/* CUDA math functions that C lacks. */
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
/* glibc declares __expf and __logf itself, so these are macros. */
#define __expf(x) expf(x)
#define __logf(x) logf(x)
#define __fdividef(x, y) ((x) / (y))
static inline float __fmul_rn(float x, float y) { return x * y; }
static inline double __dmul_rn(double x, double y) { return x * y; }

/* CUDA's min and max for int, long long, float and double operands. */
#ifndef min
#define min(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef max
#define max(a, b) ((a) > (b) ? (a) : (b))
#endif

#if defined(GDATTN_EMU_THREADS)
/* atomicAdd: compare-and-swap loops; returns the old value like CUDA's. */
#define GDATTN_EMU_ATOMIC(NAME, T)                                            \
    static inline T NAME(T *p, T v) {                                         \
        T old, nw;                                                            \
        __atomic_load(p, &old, __ATOMIC_RELAXED);                             \
        do {                                                                  \
            nw = old + v;                                                     \
        } while (!__atomic_compare_exchange(p, &old, &nw, 0, __ATOMIC_SEQ_CST, \
                                            __ATOMIC_RELAXED));               \
        return old;                                                           \
    }
#else
/* atomicAdd: serial, so a plain add; returns the old value like CUDA's. */
#define GDATTN_EMU_ATOMIC(NAME, T)                                            \
    static inline T NAME(T *p, T v) {                                         \
        T old = *p;                                                           \
        *p = old + v;                                                         \
        return old;                                                           \
    }
#endif
GDATTN_EMU_ATOMIC(gdattn_emu_atomic_add_f, float)
GDATTN_EMU_ATOMIC(gdattn_emu_atomic_add_d, double)
GDATTN_EMU_ATOMIC(gdattn_emu_atomic_add_i, int)
GDATTN_EMU_ATOMIC(gdattn_emu_atomic_add_u, unsigned int)
GDATTN_EMU_ATOMIC(gdattn_emu_atomic_add_ull, unsigned long long)
#define atomicAdd(p, v)                                                       \
    _Generic((p),                                                             \
        float *: gdattn_emu_atomic_add_f,                                     \
        double *: gdattn_emu_atomic_add_d,                                    \
        int *: gdattn_emu_atomic_add_i,                                       \
        unsigned int *: gdattn_emu_atomic_add_u,                              \
        unsigned long long *: gdattn_emu_atomic_add_ull)((p), (v))

/*
 * Warp kernels (kernels/common.h): each emulated thread runs whole warps, its
 * 32 lanes in turn. Under GDATTN_EMU_THREADS a launch's blockDim.x threads
 * take the items r ≡ threadIdx.x (mod blockDim.x), a warp each, as the
 * device's warps would.
 */
#define GDATTN_WARP_STRIDE(r, n)                                              \
    for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;      \
         r < (long long)(n); r += (long long)blockDim.x * gridDim.x)
#define GDATTN_LANE_VAR(T, v) T v[32]
#define GDATTN_AT(v, lane) ((v)[lane])
#define GDATTN_FOR_LANES(lane) for (int lane = 0; lane < 32; lane++)
#define GDATTN_WARP_VALUE(v) ((v)[0])
#define GDATTN_WARP_ONCE if (1)
#define GDATTN_WARP_ALLREDUCE(T, v, OP)                                       \
    for (int gdattn_o_ = 16; gdattn_o_ > 0; gdattn_o_ >>= 1) {                \
        T gdattn_p_[32];                                                      \
        int gdattn_l_;                                                        \
        for (gdattn_l_ = 0; gdattn_l_ < 32; gdattn_l_++)                      \
            gdattn_p_[gdattn_l_] = (v)[gdattn_l_];                            \
        for (gdattn_l_ = 0; gdattn_l_ < 32; gdattn_l_++)                      \
            (v)[gdattn_l_] =                                                  \
                OP(gdattn_p_[gdattn_l_], gdattn_p_[gdattn_l_ ^ gdattn_o_]);   \
    }
#define GDATTN_WARP_ALLREDUCE2(T, a, b, FN)                                   \
    for (int gdattn_o_ = 16; gdattn_o_ > 0; gdattn_o_ >>= 1) {                \
        T gdattn_pa_[32], gdattn_pb_[32];                                     \
        int gdattn_l_;                                                        \
        for (gdattn_l_ = 0; gdattn_l_ < 32; gdattn_l_++) {                    \
            gdattn_pa_[gdattn_l_] = (a)[gdattn_l_];                           \
            gdattn_pb_[gdattn_l_] = (b)[gdattn_l_];                           \
        }                                                                     \
        for (gdattn_l_ = 0; gdattn_l_ < 32; gdattn_l_++)                      \
            FN(&(a)[gdattn_l_], &(b)[gdattn_l_],                              \
               gdattn_pa_[gdattn_l_ ^ gdattn_o_],                             \
               gdattn_pb_[gdattn_l_ ^ gdattn_o_]);                            \
    }

#endif /* GDATTN_EMU_H */
