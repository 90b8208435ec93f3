/*
 * head.cu: the per-row parts of layers' fused attention head (headOp; the
 * matrix products run on Gemm): the kernel weights from the raw scores and,
 * backward, the gradient of the scores. Kinds: 0 linear, 2 exp, 4 softmax
 * (layers' kernelKind codes); g is *gp; one work item per query row, n =
 * B·T, rows of tk scores.
 */
#include "common.h"

/* head_weights_<T>: w = κ(s) row by row (softmax: softmax_i(g s_i)). */
#define GDATTN_HEAD_WEIGHTS(T, S)                                             \
    GDATTN_KERNEL GDATTN_NAME(head_weights, S)(long long n, int kind,         \
                                               const T *gp, int tk,           \
                                               const T *s, T *w) {            \
        GDATTN_GRID_STRIDE(r, n) {                                            \
            const T *sr = s + r * tk;                                         \
            T *wr = w + r * tk;                                               \
            double g = (double)*gp;                                           \
            int i;                                                            \
            if (kind == 0) {                                                  \
                for (i = 0; i < tk; i++) wr[i] = sr[i];                       \
            } else if (kind == 2) {                                           \
                for (i = 0; i < tk; i++) wr[i] = (T)exp(g * (double)sr[i]);   \
            } else {                                                          \
                double mx = g * (double)sr[0], sum = 0;                       \
                for (i = 1; i < tk; i++)                                      \
                    if (g * (double)sr[i] > mx) mx = g * (double)sr[i];       \
                for (i = 0; i < tk; i++) {                                    \
                    double e = exp(g * (double)sr[i] - mx);                   \
                    wr[i] = (T)e;                                             \
                    sum += e;                                                 \
                }                                                             \
                for (i = 0; i < tk; i++) wr[i] = (T)((double)wr[i] / sum);    \
            }                                                                 \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_HEAD_WEIGHTS)

/*
 * head_dscores_<T>: replaces dw = dL/dw by ds = dL/ds row by row (linear:
 * ds = dw; exp: ds = g w dw; softmax: ds = g w (dw − Σ w dw)) and writes the
 * row's dL/dg (Σ e s with e = w dw, or w (dw − Σ w dw); 0 for linear) into
 * dg[r], which attn_g_add sums in row order.
 */
#define GDATTN_HEAD_DSCORES(T, S)                                             \
    GDATTN_KERNEL GDATTN_NAME(head_dscores, S)(long long n, int kind,         \
                                               const T *gp, int tk,           \
                                               const T *s, const T *w,        \
                                               T *dw, double *dgr) {          \
        GDATTN_GRID_STRIDE(r, n) {                                            \
            const T *sr = s + r * tk, *wr = w + r * tk;                       \
            T *dr = dw + r * tk;                                              \
            double g = (double)*gp, rs = 0, dg = 0;                           \
            int i;                                                            \
            if (kind == 0) { dgr[r] = 0; continue; }                          \
            if (kind == 4)                                                    \
                for (i = 0; i < tk; i++) rs += (double)wr[i] * (double)dr[i]; \
            for (i = 0; i < tk; i++) {                                        \
                double e = (double)wr[i] * ((double)dr[i] - rs);              \
                dr[i] = (T)(g * e);                                           \
                dg += e * (double)sr[i];                                      \
            }                                                                 \
            dgr[r] = dg;                                                      \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_HEAD_DSCORES)

/*
 * Rows of headLongRow keys and more (op_head.go): one warp per row (warp
 * kernels, kernels/common.h), lane l taking the keys i ≡ l (mod 32).
 *
 * head_weights_warp_<T>: head_weights; the softmax's running max and
 * Σ exp(g s_i − max) per lane (gdattn_lse_step), joined by gdattn_lse_join.
 */
#define GDATTN_HEAD_WEIGHTS_WARP(T, S)                                        \
    GDATTN_WARP_KERNEL GDATTN_NAME(head_weights_warp, S)(                     \
        long long n, int kind, const T *gp, int tk, const T *s, T *w) {       \
        GDATTN_WARP_STRIDE(r, n) {                                            \
            const T *sr = s + r * tk;                                         \
            T *wr = w + r * tk;                                               \
            double g = (double)*gp;                                           \
            GDATTN_LANE_VAR(double, m);                                       \
            GDATTN_LANE_VAR(double, sm);                                      \
            if (kind != 0 && kind != 2) {                                     \
                GDATTN_FOR_LANES(lane) {                                      \
                    double mk = -INFINITY, sk = 0;                            \
                    int i;                                                    \
                    for (i = lane; i < tk; i += 32)                           \
                        gdattn_lse_step(&mk, &sk, g * (double)sr[i]);         \
                    GDATTN_AT(m, lane) = mk;                                  \
                    GDATTN_AT(sm, lane) = sk;                                 \
                }                                                             \
                GDATTN_WARP_ALLREDUCE2(double, m, sm, gdattn_lse_join);       \
            }                                                                 \
            GDATTN_FOR_LANES(lane) {                                          \
                int i;                                                        \
                for (i = lane; i < tk; i += 32) {                             \
                    if (kind == 0) {                                          \
                        wr[i] = sr[i];                                        \
                    } else if (kind == 2) {                                   \
                        wr[i] = (T)exp(g * (double)sr[i]);                    \
                    } else {                                                  \
                        T e = (T)exp(g * (double)sr[i] - GDATTN_AT(m, lane)); \
                        wr[i] = (T)((double)e / GDATTN_AT(sm, lane));         \
                    }                                                         \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_HEAD_WEIGHTS_WARP)

/*
 * head_dscores_warp_<T>: head_dscores, one warp per row: the softmax's
 * Σ w dw, then ds for every key, and the row's dL/dg into dg[r].
 */
#define GDATTN_HEAD_DSCORES_WARP(T, S)                                        \
    GDATTN_WARP_KERNEL GDATTN_NAME(head_dscores_warp, S)(                     \
        long long n, int kind, const T *gp, int tk, const T *s, const T *w,   \
        T *dw, double *dg) {                                                  \
        GDATTN_WARP_STRIDE(r, n) {                                            \
            const T *sr = s + r * tk, *wr = w + r * tk;                       \
            T *dr = dw + r * tk;                                              \
            double g = (double)*gp, rs = 0;                                   \
            GDATTN_LANE_VAR(double, a);                                       \
            if (kind == 0) {                                                  \
                GDATTN_WARP_ONCE { dg[r] = 0; }                               \
                continue;                                                     \
            }                                                                 \
            if (kind == 4) {                                                  \
                GDATTN_FOR_LANES(lane) {                                      \
                    double t = 0;                                             \
                    int i;                                                    \
                    for (i = lane; i < tk; i += 32)                           \
                        t += __dmul_rn((double)wr[i], (double)dr[i]);         \
                    GDATTN_AT(a, lane) = t;                                   \
                }                                                             \
                GDATTN_WARP_ALLREDUCE(double, a, GDATTN_ADD);                 \
                rs = GDATTN_WARP_VALUE(a);                                    \
            }                                                                 \
            GDATTN_FOR_LANES(lane) {                                          \
                double t = 0;                                                 \
                int i;                                                        \
                for (i = lane; i < tk; i += 32) {                             \
                    double e = (double)wr[i] * ((double)dr[i] - rs);          \
                    dr[i] = (T)(g * e);                                       \
                    t += __dmul_rn(e, (double)sr[i]);                         \
                }                                                             \
                GDATTN_AT(a, lane) = t;                                       \
            }                                                                 \
            GDATTN_WARP_ALLREDUCE(double, a, GDATTN_ADD);                     \
            GDATTN_WARP_ONCE { dg[r] = GDATTN_WARP_VALUE(a); }                \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_HEAD_DSCORES_WARP)
