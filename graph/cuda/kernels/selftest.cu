/*
 * selftest.cu: small kernels that test the device layer itself (launch,
 * argument passing of every parameter kind, atomics) and that the executor
 * may use too: fill, axpy, scale, iota, sum; gemm_naive, the GPU
 * backend's Gemm without cuBLAS; and warp_rowsum, the warp kernels' form.
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

/*
 * gemm_naive_<T>: the GPU backend's Gemm when cuBLAS cannot be loaded (or
 * GDATTN_NO_CUBLAS is set), and a reference for it: for b in [0, batch),
 * row-major C_b = alpha·op(A_b)·op(B_b) + beta·C_b with op(A_b) m×k and
 * op(B_b) k×nc, one work item per output element, n = batch·m·nc, sums in
 * double. beta == 0 overwrites C (NaNs included), as BLAS does.
 */
#define GDATTN_GEMM_NAIVE(T, S)                                               \
    GDATTN_KERNEL GDATTN_NAME(gemm_naive, S)(                                 \
        long long n, int ta, int tb, int m, int nc, int k, double alpha,      \
        const T *a, int lda, long long sa, const T *b, int ldb, long long sb, \
        double beta, T *c, int ldc, long long sc) {                           \
        GDATTN_GRID_STRIDE(idx, n) {                                          \
            long long mn = (long long)m * nc;                                 \
            long long bt = idx / mn, r = idx % mn;                            \
            long long i = r / nc, j = r % nc;                                 \
            const T *ab = a + bt * sa;                                        \
            const T *bb = b + bt * sb;                                        \
            double s = 0;                                                     \
            int l;                                                            \
            for (l = 0; l < k; l++) {                                         \
                double av = ta ? (double)ab[(long long)l * lda + i]           \
                               : (double)ab[i * lda + l];                     \
                double bv = tb ? (double)bb[j * ldb + l]                      \
                               : (double)bb[(long long)l * ldb + j];          \
                s += av * bv;                                                 \
            }                                                                 \
            T *cij = c + bt * sc + i * ldc + j;                               \
            *cij = (T)(beta == 0 ? alpha * s : alpha * s + beta * (double)*cij); \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_GEMM_NAIVE)

/*
 * warp_rowsum_<T>: the warp form's self-test, one warp per row r of the n
 * rows of c columns of x: lane l sums x[r, j] over j ≡ l (mod 32) in order,
 * in double, and the butterfly adds the lanes' sums. With all, every lane
 * writes its final value to y[32r + l]; else lane 0 writes y[r].
 */
#define GDATTN_WARP_ROWSUM(T, S)                                              \
    GDATTN_WARP_KERNEL GDATTN_NAME(warp_rowsum, S)(long long n, int c,        \
                                                   const T *x, int all,       \
                                                   double *y) {               \
        GDATTN_WARP_STRIDE(r, n) {                                            \
            GDATTN_LANE_VAR(double, s);                                       \
            GDATTN_FOR_LANES(lane) {                                          \
                double a = 0;                                                 \
                int j;                                                        \
                for (j = lane; j < c; j += 32) a += (double)x[r * c + j];     \
                GDATTN_AT(s, lane) = a;                                       \
            }                                                                 \
            GDATTN_WARP_ALLREDUCE(double, s, GDATTN_ADD);                     \
            if (all) {                                                        \
                GDATTN_FOR_LANES(lane) { y[32 * r + lane] = GDATTN_AT(s, lane); } \
            } else {                                                          \
                GDATTN_WARP_ONCE { y[r] = GDATTN_WARP_VALUE(s); }             \
            }                                                                 \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_WARP_ROWSUM)
