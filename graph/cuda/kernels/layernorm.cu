/*
 * layernorm.cu: ops.LayerNorm and its gradient ops, one work item per row
 * (per column for the parameter gradients), in the operations of the host
 * ops (ops/layernorm.go): c = x − mean, s = sqrt(Σc²/D + eps), r = 1/s.
 */
#include "common.h"

/* ln_stats_<T>: st[2r] = −mean and st[2r+1] = r = 1/s of row r of x. */
#define GDATTN_LN_STATS(T, S)                                                 \
    GDATTN_DEVICE void GDATTN_NAME(ln_row_stats, S)(const T *row, int d,      \
                                                    T eps, T *nm, T *sd) {    \
        T s = 0, q = 0;                                                       \
        int j;                                                                \
        for (j = 0; j < d; j++) s += row[j];                                  \
        *nm = -(s / (T)d);                                                    \
        for (j = 0; j < d; j++) {                                             \
            T c = *nm + row[j];                                               \
            q += c * c;                                                       \
        }                                                                     \
        *sd = GDATTN_FN(sqrt, S)(q / (T)d + eps);                             \
    }                                                                         \
    GDATTN_KERNEL GDATTN_NAME(ln_stats, S)(long long n, int d, double eps,    \
                                           const T *x, T *st) {               \
        GDATTN_GRID_STRIDE(r, n) {                                            \
            T nm, sd;                                                         \
            GDATTN_NAME(ln_row_stats, S)(x + r * d, d, (T)eps, &nm, &sd);     \
            st[2 * r] = nm;                                                   \
            st[2 * r + 1] = (T)1 / sd;                                        \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_LN_STATS)

/* ln_fwd_<T>: y = (c·r)·scale (+ bias when has_bias). */
#define GDATTN_LN_FWD(T, S)                                                   \
    GDATTN_KERNEL GDATTN_NAME(ln_fwd, S)(long long n, int d, double eps,      \
                                         int has_bias, const T *x,            \
                                         const T *scale, const T *bias,       \
                                         T *y) {                              \
        GDATTN_GRID_STRIDE(r, n) {                                            \
            const T *row = x + r * d;                                         \
            T *o = y + r * d;                                                 \
            T nm, sd;                                                         \
            int j;                                                            \
            GDATTN_NAME(ln_row_stats, S)(row, d, (T)eps, &nm, &sd);           \
            T rs = (T)1 / sd;                                                 \
            for (j = 0; j < d; j++) {                                         \
                T v = ((nm + row[j]) * rs) * scale[j];                        \
                o[j] = has_bias ? v + bias[j] : v;                            \
            }                                                                 \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_LN_FWD)

/*
 * ln_grad_<T>: the gradient through the centring, with ĝ = scale·dy:
 * r·ĝ + (2c)·((−r²·Σ c·ĝ) / (2s) / D).
 */
#define GDATTN_LN_GRAD(T, S)                                                  \
    GDATTN_KERNEL GDATTN_NAME(ln_grad, S)(long long n, int d, double eps,     \
                                          const T *x, const T *scale,         \
                                          const T *dy, T *out) {              \
        GDATTN_GRID_STRIDE(r, n) {                                            \
            const T *row = x + r * d, *g = dy + r * d;                        \
            T *o = out + r * d;                                               \
            T nm, sd, dr = 0;                                                 \
            int j;                                                            \
            GDATTN_NAME(ln_row_stats, S)(row, d, (T)eps, &nm, &sd);           \
            T rs = (T)1 / sd;                                                 \
            for (j = 0; j < d; j++) dr += (nm + row[j]) * (scale[j] * g[j]);  \
            T t = (-(rs * rs) * dr) / ((T)2 * sd) / (T)d;                     \
            for (j = 0; j < d; j++)                                           \
                o[j] = rs * (scale[j] * g[j]) + ((nm + row[j]) * (T)2) * t;   \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_LN_GRAD)

/* ln_mean_grad_<T>: every element of row r is −(Σ dc)/D. */
#define GDATTN_LN_MEAN_GRAD(T, S)                                             \
    GDATTN_KERNEL GDATTN_NAME(ln_mean_grad, S)(long long n, int d,            \
                                               const T *dc, T *out) {         \
        GDATTN_GRID_STRIDE(r, n) {                                            \
            const T *row = dc + r * d;                                        \
            T s = 0;                                                          \
            int j;                                                            \
            for (j = 0; j < d; j++) s += row[j];                              \
            T u = -s / (T)d;                                                  \
            for (j = 0; j < d; j++) out[r * d + j] = u;                       \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_LN_MEAN_GRAD)

/*
 * ln_param_grad_<T>: column j of the parameter gradients, summed over the
 * rows: Σ (c·r)·dy (scale, from ln_stats's st) or Σ dy (bias).
 */
#define GDATTN_LN_PARAM_GRAD(T, S)                                            \
    GDATTN_KERNEL GDATTN_NAME(ln_param_grad, S)(long long n, long long rows,  \
                                                int bias, const T *x,         \
                                                const T *st, const T *dy,     \
                                                T *out) {                     \
        GDATTN_GRID_STRIDE(j, n) {                                            \
            T acc = 0;                                                        \
            long long r;                                                      \
            for (r = 0; r < rows; r++) {                                      \
                T g = dy[r * n + j];                                          \
                acc += bias ? g : ((st[2 * r] + x[r * n + j]) * st[2 * r + 1]) * g; \
            }                                                                 \
            out[j] = acc;                                                     \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_LN_PARAM_GRAD)
