/*
 * emu.h: just enough CUDA for gcc to compile the kernels as C11 (build tag
 * cudaemu). kernels/common.h includes it when __CUDACC__ is not defined; do
 * not include it directly.
 *
 * A launch on the emulator is one serial thread: threadIdx = blockIdx = 0 and
 * blockDim = gridDim = 1, so a GDATTN_GRID_STRIDE loop visits i = 0, 1, ...,
 * n-1 in order, and atomicAdd is a plain read-modify-write. Anything a kernel
 * uses that is not defined here (shared memory, __syncthreads, warp
 * intrinsics, C++) fails to compile, which is the point: the kernel contract in
 * common.h forbids it.
 *
 * With GDATTN_GEN defined (only by the generator, graph/cuda/internal/gen, which
 * runs `gcc -E` over each kernel file), __global__ expands to a marker that
 * the generator looks for to find every kernel's signature after all macros
 * have been expanded.
 */
#ifndef GDATTN_EMU_H
#define GDATTN_EMU_H

#include <math.h>
#include <stdint.h>

typedef struct {
    unsigned int x, y, z;
} gdattn_dim3;

static const gdattn_dim3 threadIdx = {0, 0, 0};
static const gdattn_dim3 blockIdx = {0, 0, 0};
static const gdattn_dim3 blockDim = {1, 1, 1};
static const gdattn_dim3 gridDim = {1, 1, 1};

#if defined(GDATTN_GEN)
#define __global__ gdattn_kernel_marker
#else
#define __global__
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

/* CUDA's min and max for int, long long, float and double operands. */
#ifndef min
#define min(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef max
#define max(a, b) ((a) > (b) ? (a) : (b))
#endif

/* atomicAdd: serial, so a plain add; returns the old value like CUDA's. */
static inline float gdattn_emu_atomic_add_f(float *p, float v) {
    float old = *p;
    *p = old + v;
    return old;
}
static inline double gdattn_emu_atomic_add_d(double *p, double v) {
    double old = *p;
    *p = old + v;
    return old;
}
static inline int gdattn_emu_atomic_add_i(int *p, int v) {
    int old = *p;
    *p = old + v;
    return old;
}
static inline unsigned int gdattn_emu_atomic_add_u(unsigned int *p, unsigned int v) {
    unsigned int old = *p;
    *p = old + v;
    return old;
}
static inline unsigned long long gdattn_emu_atomic_add_ull(unsigned long long *p,
                                                          unsigned long long v) {
    unsigned long long old = *p;
    *p = old + v;
    return old;
}
#define atomicAdd(p, v)                                                       \
    _Generic((p),                                                             \
        float *: gdattn_emu_atomic_add_f,                                     \
        double *: gdattn_emu_atomic_add_d,                                    \
        int *: gdattn_emu_atomic_add_i,                                       \
        unsigned int *: gdattn_emu_atomic_add_u,                              \
        unsigned long long *: gdattn_emu_atomic_add_ull)((p), (v))

#endif /* GDATTN_EMU_H */
