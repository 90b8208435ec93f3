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
 * ds = dw; exp: ds = g w dw; softmax: ds = g w (dw − Σ w dw)) and adds the
 * row's dL/dg (Σ e s with e = w dw, or w (dw − Σ w dw)) into *acc.
 */
#define GDATTN_HEAD_DSCORES(T, S)                                             \
    GDATTN_KERNEL GDATTN_NAME(head_dscores, S)(long long n, int kind,         \
                                               const T *gp, int tk,           \
                                               const T *s, const T *w,        \
                                               T *dw, double *acc) {          \
        GDATTN_GRID_STRIDE(r, n) {                                            \
            const T *sr = s + r * tk, *wr = w + r * tk;                       \
            T *dr = dw + r * tk;                                              \
            double g = (double)*gp, rs = 0, dg = 0;                           \
            int i;                                                            \
            if (kind == 0) continue;                                          \
            if (kind == 4)                                                    \
                for (i = 0; i < tk; i++) rs += (double)wr[i] * (double)dr[i]; \
            for (i = 0; i < tk; i++) {                                        \
                double e = (double)wr[i] * ((double)dr[i] - rs);              \
                dr[i] = (T)(g * e);                                           \
                dg += e * (double)sr[i];                                      \
            }                                                                 \
            gdattn_atomic_add_f64(acc, dg);                                   \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_HEAD_DSCORES)
