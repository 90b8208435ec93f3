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

/*
 * Long rows (d of 128 and more): the rows' sums over chunks items per row,
 * then joined, and every element at once, so that many threads share a
 * row. s4 holds four values per row: −mean, r = 1/s, s, and the gradient's
 * Σ c·ĝ.
 *
 * ln_part_<T>: item (r, k) of n = rows·chunks sums in double over the
 * columns j ≡ k (mod chunks) of row r: mode 0 x_j, mode 1 c_j² and mode 2
 * c_j·(scale_j·g_j), with c_j = s4[4r] + x_j.
 */
#define GDATTN_LN_PART(T, S)                                                  \
    GDATTN_KERNEL GDATTN_NAME(ln_part, S)(                                    \
        long long n, int d, int chunks, int mode, const T *x,                 \
        const T *scale, const T *g, const T *s4, double *part) {              \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            long long r = i / chunks;                                         \
            const T *row = x + r * d, *gr = g + r * d;                        \
            T nm = mode ? s4[4 * r] : (T)0;                                   \
            double s = 0;                                                     \
            int j;                                                            \
            for (j = (int)(i % chunks); j < d; j += chunks) {                 \
                if (mode == 0) {                                              \
                    s += (double)row[j];                                      \
                    continue;                                                 \
                }                                                             \
                T c = nm + row[j];                                            \
                if (mode == 1)                                                \
                    s += (double)c * (double)c;                               \
                else                                                          \
                    s += (double)(c * (scale[j] * gr[j]));                    \
            }                                                                 \
            part[i] = s;                                                      \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_LN_PART)

/*
 * ln_join_<T>: row r (n = rows) sums its chunks in order: mode 0 s4[4r] =
 * −Σ/d; mode 1 s4[4r+2] = s = sqrt(Σ/d + eps) and s4[4r+1] = 1/s; mode 2
 * s4[4r+3] = Σ.
 */
#define GDATTN_LN_JOIN(T, S)                                                  \
    GDATTN_KERNEL GDATTN_NAME(ln_join, S)(long long n, int d, int chunks,     \
                                          int mode, double eps,               \
                                          const double *part, T *s4) {        \
        GDATTN_GRID_STRIDE(r, n) {                                            \
            double s = 0;                                                     \
            int k;                                                            \
            for (k = 0; k < chunks; k++) s += part[r * chunks + k];           \
            if (mode == 0) s4[4 * r] = (T)(-(s / d));                         \
            if (mode == 1) {                                                  \
                T sd = GDATTN_FN(sqrt, S)((T)(s / d) + (T)eps);               \
                s4[4 * r + 2] = sd;                                           \
                s4[4 * r + 1] = (T)1 / sd;                                    \
            }                                                                 \
            if (mode == 2) s4[4 * r + 3] = (T)s;                              \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_LN_JOIN)

/* ln_fwd_apply_<T>: y = (c·r)·scale (+ bias), one item per element. */
#define GDATTN_LN_FWD_APPLY(T, S)                                             \
    GDATTN_KERNEL GDATTN_NAME(ln_fwd_apply, S)(                               \
        long long n, int d, int has_bias, const T *x, const T *scale,         \
        const T *bias, const T *s4, T *y) {                                   \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            long long r = i / d, j = i % d;                                   \
            T v = ((s4[4 * r] + x[i]) * s4[4 * r + 1]) * scale[j];            \
            y[i] = has_bias ? v + bias[j] : v;                                \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_LN_FWD_APPLY)

/* ln_grad_apply_<T>: ln_grad's r·ĝ + (2c)·((−r²·Σ c·ĝ) / (2s) / D) per element. */
#define GDATTN_LN_GRAD_APPLY(T, S)                                            \
    GDATTN_KERNEL GDATTN_NAME(ln_grad_apply, S)(                              \
        long long n, int d, const T *x, const T *scale, const T *dy,          \
        const T *s4, T *out) {                                                \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            long long r = i / d, j = i % d;                                   \
            T rs = s4[4 * r + 1];                                             \
            T t = (-(rs * rs) * s4[4 * r + 3]) / ((T)2 * s4[4 * r + 2]) / (T)d; \
            out[i] = rs * (scale[j] * dy[i]) + ((s4[4 * r] + x[i]) * (T)2) * t; \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_LN_GRAD_APPLY)

/* ln_fill_<T>: every element of row r is s4[4r] (the mean gradient −Σ/D). */
#define GDATTN_LN_FILL(T, S)                                                  \
    GDATTN_KERNEL GDATTN_NAME(ln_fill, S)(long long n, int d, const T *s4,    \
                                          T *out) {                           \
        GDATTN_GRID_STRIDE(i, n) { out[i] = s4[4 * (i / d)]; }                \
    }
GDATTN_FLOATS(GDATTN_LN_FILL)

/*
 * ln_param_part_<T>: the parameter gradients' column sums over many rows
 * in chunks: item (k, j) of n = chunks·d (j = i mod d) sums in double the
 * rows r ≡ k (mod chunks) of column j: (c·r)·dy with the rows' s4 (scale)
 * or dy (bias), into part[k·d + j]; reduce_join sums the chunks.
 */
#define GDATTN_LN_PARAM_PART(T, S)                                            \
    GDATTN_KERNEL GDATTN_NAME(ln_param_part, S)(                              \
        long long n, long long rows, int d, int chunks, int bias,             \
        const T *x, const T *s4, const T *dy, double *part) {                 \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            long long j = i % d, r;                                           \
            double acc = 0;                                                   \
            for (r = i / d; r < rows; r += chunks) {                          \
                T g = dy[r * d + j];                                          \
                acc += bias ? (double)g                                       \
                            : (double)(((s4[4 * r] + x[r * d + j]) *          \
                                        s4[4 * r + 1]) * g);                  \
            }                                                                 \
            part[i] = acc;                                                    \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_LN_PARAM_PART)
