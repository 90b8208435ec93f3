/*
 * selftest.cu: small kernels that test the device layer itself (launch,
 * argument passing of every parameter kind, atomics) and that the executor
 * may use too: fill, axpy, scale, iota, sum.
 */
#include "common.h"

/* fill_<T>: x[i] = v for i in [0, n). */
#define GDATTN_FILL(T, S)                                                     \
    GDATTN_KERNEL GDATTN_NAME(fill, S)(long long n, T v, T *x) {              \
        GDATTN_GRID_STRIDE(i, n) { x[i] = v; }                                \
    }
GDATTN_FLOATS(GDATTN_FILL)

/* axpy_<T>: y[i] += a·x[i] for i in [0, n). */
#define GDATTN_AXPY(T, S)                                                     \
    GDATTN_KERNEL GDATTN_NAME(axpy, S)(long long n, T a, const T *x, T *y) {  \
        GDATTN_GRID_STRIDE(i, n) { y[i] += a * x[i]; }                        \
    }
GDATTN_FLOATS(GDATTN_AXPY)

/* scale_<T>: x[i] = a·x[i] for i in [0, n). */
#define GDATTN_SCALE(T, S)                                                    \
    GDATTN_KERNEL GDATTN_NAME(scale, S)(long long n, T a, T *x) {             \
        GDATTN_GRID_STRIDE(i, n) { x[i] = a * x[i]; }                         \
    }
GDATTN_FLOATS(GDATTN_SCALE)

/* iota_<T>: x[i·stride] = start + i·step for i in [0, n) (int parameter). */
#define GDATTN_IOTA(T, S)                                                     \
    GDATTN_KERNEL GDATTN_NAME(iota, S)(long long n, T start, T step,          \
                                       int stride, T *x) {                    \
        GDATTN_GRID_STRIDE(i, n) { x[i * stride] = start + (T)i * step; }     \
    }
GDATTN_FLOATS(GDATTN_IOTA)

/*
 * sum_<T>: out[0] += Σ_i exp(log(x[i])) over i in [0, n), with atomicAdd (x > 0;
 * the exp∘log round trip exercises the type-matched math helpers).
 */
#define GDATTN_SUM(T, S)                                                      \
    GDATTN_KERNEL GDATTN_NAME(sum, S)(long long n, const T *x, T *out) {      \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            GDATTN_FN(atomic_add, S)(out,                                     \
                                     GDATTN_FN(exp, S)(GDATTN_FN(log, S)(x[i]))); \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_SUM)
