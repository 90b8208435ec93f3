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
 * Long rows (d of 128 and more): one warp per row (warp kernels,
 * kernels/common.h), lane l taking the columns j ≡ l (mod 32). The row's
 * sums are in double, joined by the butterfly, and give the values of the
 * host ops in T: −mean = (T)(−Σx/d), s = sqrt((T)(Σc²/d) + eps) with
 * c = −mean + x in T, r = 1/s, and the gradient's Σ c·(scale·g) rounded
 * to T; then each lane writes its columns.
 */

/* ln_warp_stats_<T>: *nm = −mean and *sd = s of row (every lane calls it). */
#define GDATTN_LN_WARP_STATS(T, S)                                            \
    GDATTN_DEVICE void GDATTN_NAME(ln_warp_stats, S)(const T *row, int d,     \
                                                     T eps, T *nm, T *sd) {   \
        GDATTN_LANE_VAR(double, a);                                           \
        T m;                                                                  \
        GDATTN_FOR_LANES(lane) {                                              \
            double s = 0;                                                     \
            int j;                                                            \
            for (j = lane; j < d; j += 32) s += (double)row[j];               \
            GDATTN_AT(a, lane) = s;                                           \
        }                                                                     \
        GDATTN_WARP_ALLREDUCE(double, a, GDATTN_ADD);                         \
        m = (T)(-(GDATTN_WARP_VALUE(a) / d));                                 \
        GDATTN_FOR_LANES(lane) {                                              \
            double s = 0;                                                     \
            int j;                                                            \
            for (j = lane; j < d; j += 32) {                                  \
                T c = m + row[j];                                             \
                s += __dmul_rn((double)c, (double)c);                         \
            }                                                                 \
            GDATTN_AT(a, lane) = s;                                           \
        }                                                                     \
        GDATTN_WARP_ALLREDUCE(double, a, GDATTN_ADD);                         \
        *nm = m;                                                              \
        *sd = GDATTN_FN(sqrt, S)((T)(GDATTN_WARP_VALUE(a) / d) + eps);        \
    }
GDATTN_FLOATS(GDATTN_LN_WARP_STATS)

/* ln_fwd_warp_<T>: ln_fwd, one warp per row: y = (c·r)·scale (+ bias). */
#define GDATTN_LN_FWD_WARP(T, S)                                              \
    GDATTN_WARP_KERNEL GDATTN_NAME(ln_fwd_warp, S)(                           \
        long long n, int d, double eps, int has_bias, const T *x,             \
        const T *scale, const T *bias, T *y) {                                \
        GDATTN_WARP_STRIDE(r, n) {                                            \
            const T *row = x + r * d;                                         \
            T *o = y + r * d;                                                 \
            T nm, sd, rs;                                                     \
            GDATTN_NAME(ln_warp_stats, S)(row, d, (T)eps, &nm, &sd);          \
            rs = (T)1 / sd;                                                   \
            GDATTN_FOR_LANES(lane) {                                          \
                int j;                                                        \
                for (j = lane; j < d; j += 32) {                              \
                    T v = ((nm + row[j]) * rs) * scale[j];                    \
                    o[j] = has_bias ? v + bias[j] : v;                        \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_LN_FWD_WARP)

/*
 * ln_grad_warp_<T>: ln_grad, one warp per row: with ĝ = scale·dy,
 * r·ĝ + (2c)·((−r²·Σ c·ĝ) / (2s) / D).
 */
#define GDATTN_LN_GRAD_WARP(T, S)                                             \
    GDATTN_WARP_KERNEL GDATTN_NAME(ln_grad_warp, S)(                          \
        long long n, int d, double eps, const T *x, const T *scale,           \
        const T *dy, T *out) {                                                \
        GDATTN_WARP_STRIDE(r, n) {                                            \
            const T *row = x + r * d, *g = dy + r * d;                        \
            T *o = out + r * d;                                               \
            T nm, sd, rs, t;                                                  \
            GDATTN_LANE_VAR(double, a);                                       \
            GDATTN_NAME(ln_warp_stats, S)(row, d, (T)eps, &nm, &sd);          \
            GDATTN_FOR_LANES(lane) {                                          \
                double s = 0;                                                 \
                int j;                                                        \
                for (j = lane; j < d; j += 32)                                \
                    s += (double)((nm + row[j]) * (scale[j] * g[j]));         \
                GDATTN_AT(a, lane) = s;                                       \
            }                                                                 \
            GDATTN_WARP_ALLREDUCE(double, a, GDATTN_ADD);                     \
            rs = (T)1 / sd;                                                   \
            t = (-(rs * rs) * (T)GDATTN_WARP_VALUE(a)) / ((T)2 * sd) / (T)d;  \
            GDATTN_FOR_LANES(lane) {                                          \
                int j;                                                        \
                for (j = lane; j < d; j += 32)                                \
                    o[j] = rs * (scale[j] * g[j]) + ((nm + row[j]) * (T)2) * t; \
            }                                                                 \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_LN_GRAD_WARP)

/* ln_mean_grad_warp_<T>: ln_mean_grad, one warp per row: every element −(Σ dc)/D. */
#define GDATTN_LN_MEAN_GRAD_WARP(T, S)                                        \
    GDATTN_WARP_KERNEL GDATTN_NAME(ln_mean_grad_warp, S)(                     \
        long long n, int d, const T *dc, T *out) {                            \
        GDATTN_WARP_STRIDE(r, n) {                                            \
            const T *row = dc + r * d;                                        \
            T u;                                                              \
            GDATTN_LANE_VAR(double, a);                                       \
            GDATTN_FOR_LANES(lane) {                                          \
                double s = 0;                                                 \
                int j;                                                        \
                for (j = lane; j < d; j += 32) s += (double)row[j];           \
                GDATTN_AT(a, lane) = s;                                       \
            }                                                                 \
            GDATTN_WARP_ALLREDUCE(double, a, GDATTN_ADD);                     \
            u = (T)(-(GDATTN_WARP_VALUE(a) / d));                             \
            GDATTN_FOR_LANES(lane) {                                          \
                int j;                                                        \
                for (j = lane; j < d; j += 32) out[r * d + j] = u;            \
            }                                                                 \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_LN_MEAN_GRAD_WARP)

/*
 * ln_s4_warp_<T>: the rows' statistics for ln_param_part, one warp per row:
 * s4[4r] = −mean, s4[4r+1] = r = 1/s, s4[4r+2] = s.
 */
#define GDATTN_LN_S4_WARP(T, S)                                               \
    GDATTN_WARP_KERNEL GDATTN_NAME(ln_s4_warp, S)(long long n, int d,         \
                                                  double eps, const T *x,     \
                                                  T *s4) {                    \
        GDATTN_WARP_STRIDE(r, n) {                                            \
            T nm, sd;                                                         \
            GDATTN_NAME(ln_warp_stats, S)(x + r * d, d, (T)eps, &nm, &sd);    \
            GDATTN_WARP_ONCE {                                                \
                s4[4 * r] = nm;                                               \
                s4[4 * r + 1] = (T)1 / sd;                                    \
                s4[4 * r + 2] = sd;                                           \
            }                                                                 \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_LN_S4_WARP)

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

/*
 * ln_param_warp_<T>: the parameter gradients' column sums in one launch,
 * one warp per column j (n = d): lane l sums in double the rows
 * r ≡ l (mod 32) in order, (c·r)·dy with the rows' s4 (scale) or dy
 * (bias), the butterfly joins the lanes, and out[j] is the sum in T (the
 * product with dy rounded on its own, mul_rn, as the host rounds it).
 */
#define GDATTN_LN_PARAM_WARP(T, S)                                            \
    GDATTN_WARP_KERNEL GDATTN_NAME(ln_param_warp, S)(                         \
        long long n, long long rows, int bias, const T *x, const T *s4,       \
        const T *dy, T *out) {                                                \
        GDATTN_WARP_STRIDE(j, n) {                                            \
            GDATTN_LANE_VAR(double, a);                                       \
            GDATTN_FOR_LANES(lane) {                                          \
                double acc = 0;                                               \
                long long r;                                                  \
                for (r = lane; r < rows; r += 32) {                           \
                    T g = dy[r * n + j];                                      \
                    acc += bias ? (double)g                                   \
                                : (double)GDATTN_FN(mul_rn, S)(               \
                                      (s4[4 * r] + x[r * n + j]) *            \
                                          s4[4 * r + 1],                      \
                                      g);                                     \
                }                                                             \
                GDATTN_AT(a, lane) = acc;                                     \
            }                                                                 \
            GDATTN_WARP_ALLREDUCE(double, a, GDATTN_ADD);                     \
            GDATTN_WARP_ONCE { out[j] = (T)GDATTN_WARP_VALUE(a); }            \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_LN_PARAM_WARP)
