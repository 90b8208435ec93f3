/*
 * attn.cu: the fused kernel-weight op of layers (kernelOp: W = κ(q, k) for
 * the linear, rbf, exp, laplacian and softmax kernels, with an optional 0/1
 * keep mask) and its gradients with respect to q, k and g. q is (B, tq, d),
 * k (B, tk, d), W and the mask (B, tq, tk); g is read from device memory
 * (*gp). Kinds: 0 linear, 1 rbf, 2 exp, 3 laplacian, 4 softmax. All
 * arithmetic is in double, as the CPU op.
 */
#include "common.h"

#define GDATTN_ATTN_HELPERS(T, S)                                             \
    GDATTN_DEVICE double GDATTN_NAME(attn_dot, S)(const T *a, const T *b,     \
                                                  int d) {                    \
        double s = 0;                                                         \
        int c;                                                                \
        for (c = 0; c < d; c++) s += (double)a[c] * (double)b[c];             \
        return s;                                                             \
    }                                                                         \
    GDATTN_DEVICE double GDATTN_NAME(attn_sqdist, S)(const T *a, const T *b,  \
                                                     int d) {                 \
        double s = 0;                                                         \
        int c;                                                                \
        for (c = 0; c < d; c++) {                                             \
            double t = (double)a[c] - (double)b[c];                           \
            s += t * t;                                                       \
        }                                                                     \
        return s;                                                             \
    }                                                                         \
    /* attn_score: κ(q, k) before the softmax normalisation. */              \
    GDATTN_DEVICE double GDATTN_NAME(attn_score, S)(int kind, double g,       \
                                                    const T *q, const T *k,   \
                                                    int d) {                  \
        switch (kind) {                                                       \
        case 0: return GDATTN_NAME(attn_dot, S)(q, k, d);                     \
        case 1: return exp(-g * GDATTN_NAME(attn_sqdist, S)(q, k, d));        \
        case 2: return exp(g * GDATTN_NAME(attn_dot, S)(q, k, d));            \
        case 3: return exp(-g * sqrt(GDATTN_NAME(attn_sqdist, S)(q, k, d)));  \
        }                                                                     \
        return g * GDATTN_NAME(attn_dot, S)(q, k, d);                         \
    }
GDATTN_FLOATS(GDATTN_ATTN_HELPERS)

/*
 * attn_fwd_<T>: one item per (b, j, i), n = B·tq·tk; not for softmax.
 */
#define GDATTN_ATTN_FWD(T, S)                                                 \
    GDATTN_KERNEL GDATTN_NAME(attn_fwd, S)(long long n, int kind,             \
                                           const T *gp, int tq, int tk,       \
                                           int d, const T *q, const T *k,     \
                                           int masked, const T *keep, T *w) { \
        GDATTN_GRID_STRIDE(idx, n) {                                          \
            long long i = idx % tk, bj = idx / tk, b = bj / tq;               \
            if (masked && keep[idx] == 0) {                                   \
                w[idx] = 0;                                                   \
                continue;                                                     \
            }                                                                 \
            w[idx] = (T)GDATTN_NAME(attn_score, S)(kind, (double)*gp,         \
                                                   q + bj * d,                \
                                                   k + (b * tk + i) * d, d);  \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_ATTN_FWD)

/*
 * attn_fwd_softmax_<T>: one item per row (b, j), n = B·tq: W_ji =
 * softmax_i(g q_j·k_i) over the kept i (a fully masked row stays zero).
 */
#define GDATTN_ATTN_FWD_SOFTMAX(T, S)                                         \
    GDATTN_KERNEL GDATTN_NAME(attn_fwd_softmax, S)(                           \
        long long n, const T *gp, int tq, int tk, int d, const T *q,          \
        const T *k, int masked, const T *keep, T *w) {                        \
        GDATTN_GRID_STRIDE(bj, n) {                                           \
            long long b = bj / tq;                                            \
            T *row = w + bj * tk;                                             \
            const T *kr = masked ? keep + bj * tk : 0;                        \
            double g = (double)*gp, mx = 0;                                   \
            int i, any = 0;                                                      \
            for (i = 0; i < tk; i++) {                                        \
                if (kr && kr[i] == 0) { row[i] = 0; continue; }               \
                double v = g * GDATTN_NAME(attn_dot, S)(q + bj * d,           \
                                                        k + (b * tk + i) * d, \
                                                        d);                   \
                if (!any || v > mx) mx = v;                                   \
                any = 1;                                                      \
                row[i] = (T)v;                                                \
            }                                                                 \
            if (!any) continue;                                               \
            double sum = 0;                                                   \
            for (i = 0; i < tk; i++) {                                        \
                if (kr && kr[i] == 0) continue;                               \
                double e = exp((double)row[i] - mx);                          \
                row[i] = (T)e;                                                \
                sum += e;                                                     \
            }                                                                 \
            for (i = 0; i < tk; i++) row[i] = (T)((double)row[i] / sum);      \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_ATTN_FWD_SOFTMAX)

/*
 * attn_coef: the coefficients of one pair (j, i) in the backward pass: cq of
 * k_i in dq_j (and of q_j in dk_i) for the dot-product kernels, cd of
 * (q_j − k_i) in dq_j (−cd in dk_i) for the distance kernels, and the pair's
 * term of dL/dg. rs is Σ_i W dW over row j (softmax only).
 */
#define GDATTN_ATTN_COEF(T, S)                                                \
    GDATTN_DEVICE void GDATTN_NAME(attn_coef, S)(                             \
        int kind, double g, const T *qj, const T *ki, int d, double wi,       \
        double dwi, double rs, double *cq, double *cd, double *dg) {          \
        double e, r;                                                          \
        *cq = 0; *cd = 0; *dg = 0;                                            \
        switch (kind) {                                                       \
        case 0: *cq = dwi; break;                                             \
        case 2:                                                               \
            e = dwi * wi; *cq = g * e;                                        \
            *dg = e * GDATTN_NAME(attn_dot, S)(qj, ki, d); break;             \
        case 4:                                                               \
            e = wi * (dwi - rs); *cq = g * e;                                 \
            *dg = e * GDATTN_NAME(attn_dot, S)(qj, ki, d); break;             \
        case 1:                                                               \
            e = dwi * wi; *cd = -2 * g * e;                                   \
            *dg = -e * GDATTN_NAME(attn_sqdist, S)(qj, ki, d); break;         \
        case 3:                                                               \
            e = dwi * wi; r = sqrt(GDATTN_NAME(attn_sqdist, S)(qj, ki, d));   \
            *dg = -e * r;                                                     \
            if (r > 0) *cd = -g * e / r;                                      \
            break;                                                            \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_ATTN_COEF)

/* attn_rowsum_<T>: rs[bj] = Σ_i W[bj,i]·dW[bj,i], n = B·tq. */
#define GDATTN_ATTN_ROWSUM(T, S)                                              \
    GDATTN_KERNEL GDATTN_NAME(attn_rowsum, S)(long long n, int tk,            \
                                              const T *w, const T *dw,        \
                                              double *rs) {                   \
        GDATTN_GRID_STRIDE(bj, n) {                                           \
            double s = 0;                                                     \
            int i;                                                            \
            for (i = 0; i < tk; i++)                                          \
                s += (double)w[bj * tk + i] * (double)dw[bj * tk + i];        \
            rs[bj] = s;                                                       \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_ATTN_ROWSUM)

/*
 * attn_bwd_q_<T>: dq (B, tq, d), one item per row (b, j), n = B·tq. With
 * wantg, also writes Σ_i dg_ji into dgr[bj] (the row's part of the gradient
 * of g, which attn_g_add sums in row order).
 */
#define GDATTN_ATTN_BWD_Q(T, S)                                               \
    GDATTN_KERNEL GDATTN_NAME(attn_bwd_q, S)(                                 \
        long long n, int kind, const T *gp, int tq, int tk, int d,            \
        const T *q, const T *k, int masked, const T *keep, const T *w,        \
        const T *dw, const double *rs, int wantq, T *dq, int wantg,           \
        double *dgr) {                                                        \
        GDATTN_GRID_STRIDE(bj, n) {                                           \
            long long b = bj / tq;                                            \
            const T *qj = q + bj * d;                                         \
            double g = (double)*gp, r = kind == 4 ? rs[bj] : 0, dg = 0;       \
            int i, c;                                                         \
            if (wantq)                                                        \
                for (c = 0; c < d; c++) dq[bj * d + c] = 0;                   \
            for (i = 0; i < tk; i++) {                                        \
                long long o = bj * tk + i;                                    \
                if (masked && keep[o] == 0) continue;                         \
                const T *ki = k + (b * tk + i) * d;                           \
                double cq, cd, t;                                             \
                GDATTN_NAME(attn_coef, S)(kind, g, qj, ki, d, (double)w[o],   \
                                          (double)dw[o], r, &cq, &cd, &t);    \
                dg += t;                                                      \
                if (!wantq) continue;                                         \
                if (cq != 0)                                                  \
                    for (c = 0; c < d; c++)                                   \
                        dq[bj * d + c] += (T)(cq * (double)ki[c]);            \
                if (cd != 0)                                                  \
                    for (c = 0; c < d; c++)                                   \
                        dq[bj * d + c] +=                                     \
                            (T)(cd * ((double)qj[c] - (double)ki[c]));        \
            }                                                                 \
            if (wantg) dgr[bj] = dg;                                           \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_ATTN_BWD_Q)

/* attn_bwd_k_<T>: dk (B, tk, d), one item per key (b, i), n = B·tk. */
#define GDATTN_ATTN_BWD_K(T, S)                                               \
    GDATTN_KERNEL GDATTN_NAME(attn_bwd_k, S)(                                 \
        long long n, int kind, const T *gp, int tq, int tk, int d,            \
        const T *q, const T *k, int masked, const T *keep, const T *w,        \
        const T *dw, const double *rs, T *dk) {                               \
        GDATTN_GRID_STRIDE(bi, n) {                                           \
            long long b = bi / tk, i = bi % tk;                               \
            const T *ki = k + bi * d;                                         \
            double g = (double)*gp;                                           \
            int j, c;                                                         \
            for (c = 0; c < d; c++) dk[bi * d + c] = 0;                       \
            for (j = 0; j < tq; j++) {                                        \
                long long bj = b * tq + j, o = bj * tk + i;                   \
                if (masked && keep[o] == 0) continue;                         \
                const T *qj = q + bj * d;                                     \
                double cq, cd, t;                                             \
                GDATTN_NAME(attn_coef, S)(kind, g, qj, ki, d, (double)w[o],   \
                                          (double)dw[o],                      \
                                          kind == 4 ? rs[bj] : 0, &cq, &cd,   \
                                          &t);                                \
                if (cq != 0)                                                  \
                    for (c = 0; c < d; c++)                                   \
                        dk[bi * d + c] += (T)(cq * (double)qj[c]);            \
                if (cd != 0)                                                  \
                    for (c = 0; c < d; c++)                                   \
                        dk[bi * d + c] -=                                     \
                            (T)(cd * ((double)qj[c] - (double)ki[c]));        \
            }                                                                 \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_ATTN_BWD_K)

/*
 * The dot-product kernels (linear, exp, softmax) on Gemm: the raw scores
 * S = Q Kᵀ (B, tq, tk) come from a batched product, these kernels do the
 * per-row rest.
 *
 * attn_dot_rows_<T>: W = κ(S) in place, one item per row (n = B·tq):
 * linear W = S, exp W = exp(g S), softmax W = softmax(g S) over the kept
 * keys; masked pairs get 0 (a fully masked softmax row stays 0).
 */
#define GDATTN_ATTN_DOT_ROWS(T, S)                                            \
    GDATTN_KERNEL GDATTN_NAME(attn_dot_rows, S)(long long n, int kind,        \
                                                const T *gp, int tk,          \
                                                int masked, const T *keep,    \
                                                T *w) {                       \
        GDATTN_GRID_STRIDE(r, n) {                                            \
            T *row = w + r * tk;                                              \
            const T *kr = masked ? keep + r * tk : 0;                         \
            double g = (double)*gp, mx = 0, sum = 0;                          \
            int i, any = 0;                                                   \
            for (i = 0; i < tk; i++) {                                        \
                if (kr && kr[i] == 0) { row[i] = 0; continue; }               \
                if (kind == 2) row[i] = (T)exp(g * (double)row[i]);           \
                if (kind == 4) {                                              \
                    double v = (double)(T)(g * (double)row[i]);               \
                    row[i] = (T)v;                                            \
                    if (!any || v > mx) mx = v;                               \
                    any = 1;                                                  \
                }                                                             \
            }                                                                 \
            if (kind != 4 || !any) continue;                                  \
            for (i = 0; i < tk; i++) {                                        \
                if (kr && kr[i] == 0) continue;                               \
                double e = exp((double)row[i] - mx);                          \
                row[i] = (T)e;                                                \
                sum += e;                                                     \
            }                                                                 \
            for (i = 0; i < tk; i++) row[i] = (T)((double)row[i] / sum);      \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_ATTN_DOT_ROWS)

/*
 * attn_dot_coef_<T>: C = dL/dS of the dot-product kernels, one item per
 * row: linear C = dW, exp C = g W dW, softmax C = g W (dW − Σ_i W dW);
 * masked pairs 0. With wantg, writes the row's dL/dg = Σ_i e_i S_i (e = W dW,
 * or W (dW − Σ W dW)) into dgr[r] (summed by attn_g_add in row order); s
 * holds the raw scores.
 */
#define GDATTN_ATTN_DOT_COEF(T, S)                                            \
    GDATTN_KERNEL GDATTN_NAME(attn_dot_coef, S)(                              \
        long long n, int kind, const T *gp, int tk, int masked,               \
        const T *keep, const T *w, const T *dw, const T *s, T *c, int wantg,  \
        double *dgr) {                                                        \
        GDATTN_GRID_STRIDE(r, n) {                                            \
            long long o = r * tk;                                             \
            double g = (double)*gp, rs = 0, dg = 0;                           \
            int i;                                                            \
            if (kind == 4)                                                    \
                for (i = 0; i < tk; i++)                                      \
                    rs += (double)w[o + i] * (double)dw[o + i];               \
            for (i = 0; i < tk; i++) {                                        \
                if (masked && keep[o + i] == 0) { c[o + i] = 0; continue; }   \
                if (kind == 0) { c[o + i] = dw[o + i]; continue; }            \
                double e = (double)w[o + i] * ((double)dw[o + i] - rs);       \
                c[o + i] = (T)(g * e);                                        \
                dg += e * (double)s[o + i];                                   \
            }                                                                 \
            if (wantg) dgr[r] = dg;                                           \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_ATTN_DOT_COEF)

/*
 * Long rows (tk keys, the language models' contexts): the same per-row
 * work with one warp per row (warp kernels, kernels/common.h), lane l
 * taking the keys j ≡ l (mod 32), the row's sums joined by the butterfly.
 *
 * attn_rows_warp_<T>: attn_dot_rows for long rows (n = B·tq). Softmax: each
 * lane's running max and Σ exp(v − max) of its kept scaled scores
 * v = (T)(g·s_j) (gdattn_lse_step), joined by gdattn_lse_join, then
 * W_j = (T)exp(v − max) / Σ; a fully masked row stays 0.
 */
#define GDATTN_ATTN_ROWS_WARP(T, S)                                           \
    GDATTN_WARP_KERNEL GDATTN_NAME(attn_rows_warp, S)(                        \
        long long n, int kind, const T *gp, int tk, int masked,               \
        const T *keep, T *w) {                                                \
        GDATTN_WARP_STRIDE(r, n) {                                            \
            long long o = r * tk;                                             \
            double g = (double)*gp;                                           \
            GDATTN_LANE_VAR(double, m);                                       \
            GDATTN_LANE_VAR(double, s);                                       \
            if (kind == 4) {                                                  \
                GDATTN_FOR_LANES(lane) {                                      \
                    double mk = -INFINITY, sk = 0;                            \
                    int j;                                                    \
                    for (j = lane; j < tk; j += 32) {                         \
                        if (masked && keep[o + j] == 0) continue;             \
                        gdattn_lse_step(&mk, &sk,                             \
                                        (double)(T)(g * (double)w[o + j]));   \
                    }                                                         \
                    GDATTN_AT(m, lane) = mk;                                  \
                    GDATTN_AT(s, lane) = sk;                                  \
                }                                                             \
                GDATTN_WARP_ALLREDUCE2(double, m, s, gdattn_lse_join);        \
            }                                                                 \
            GDATTN_FOR_LANES(lane) {                                          \
                int j;                                                        \
                for (j = lane; j < tk; j += 32) {                             \
                    T *wj = w + o + j;                                        \
                    if (masked && keep[o + j] == 0) {                         \
                        *wj = 0;                                              \
                        continue;                                             \
                    }                                                         \
                    if (kind == 2) *wj = (T)exp(g * (double)*wj);             \
                    if (kind == 4) {                                          \
                        double v = (double)(T)(g * (double)*wj);              \
                        T e = (T)exp(v - GDATTN_AT(m, lane));                 \
                        *wj = (T)((double)e / GDATTN_AT(s, lane));            \
                    }                                                         \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_ATTN_ROWS_WARP)

/*
 * attn_coef_warp_<T>: attn_dot_coef for long rows (n = B·tq): the
 * softmax's Σ_j W_j dW_j over the row's keys, C for every key, and with
 * wantg the row's Σ_j e_j S_j into dg[r] (summed by attn_g_add in row
 * order).
 */
#define GDATTN_ATTN_COEF_WARP(T, S)                                           \
    GDATTN_WARP_KERNEL GDATTN_NAME(attn_coef_warp, S)(                        \
        long long n, int kind, const T *gp, int tk, int masked,               \
        const T *keep, const T *w, const T *dw, const T *s, T *c, int wantg,  \
        double *dg) {                                                         \
        GDATTN_WARP_STRIDE(r, n) {                                            \
            long long o = r * tk;                                             \
            double g = (double)*gp, rr = 0;                                   \
            GDATTN_LANE_VAR(double, a);                                       \
            if (kind == 4) {                                                  \
                GDATTN_FOR_LANES(lane) {                                      \
                    double t = 0;                                             \
                    int j;                                                    \
                    for (j = lane; j < tk; j += 32)                           \
                        t += __dmul_rn((double)w[o + j], (double)dw[o + j]);  \
                    GDATTN_AT(a, lane) = t;                                   \
                }                                                             \
                GDATTN_WARP_ALLREDUCE(double, a, GDATTN_ADD);                 \
                rr = GDATTN_WARP_VALUE(a);                                    \
            }                                                                 \
            GDATTN_FOR_LANES(lane) {                                          \
                double t = 0;                                                 \
                int j;                                                        \
                for (j = lane; j < tk; j += 32) {                             \
                    if (masked && keep[o + j] == 0) {                         \
                        c[o + j] = 0;                                         \
                        continue;                                             \
                    }                                                         \
                    if (kind == 0) {                                          \
                        c[o + j] = dw[o + j];                                 \
                        continue;                                             \
                    }                                                         \
                    double e = (double)w[o + j] * ((double)dw[o + j] - rr);   \
                    c[o + j] = (T)(g * e);                                    \
                    t += __dmul_rn(e, (double)s[o + j]);                      \
                }                                                             \
                GDATTN_AT(a, lane) = t;                                       \
            }                                                                 \
            if (wantg) {                                                      \
                GDATTN_WARP_ALLREDUCE(double, a, GDATTN_ADD);                 \
                GDATTN_WARP_ONCE { dg[r] = GDATTN_WARP_VALUE(a); }            \
            }                                                                 \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_ATTN_COEF_WARP)

/* attn_g_add: *acc += Σ_r v[r] in order (n = 1). */
GDATTN_KERNEL attn_g_add(long long n, long long rows, const double *v,
                         double *acc) {
    GDATTN_GRID_STRIDE(i, n) {
        double s = 0;
        long long r;
        for (r = 0; r < rows; r++) s += v[r];
        acc[i] += s;
    }
}
