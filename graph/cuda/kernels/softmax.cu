/*
 * softmax.cu: softmax and log-softmax along the last axis (graph.SoftMax,
 * graph.LogSoftMax) and their gradients, one work item per row.
 */
#include "common.h"

/* softmax_rows_<T>: y = softmax (or log-softmax if lg) of each row of x. */
#define GDATTN_SOFTMAX(T, S)                                                  \
    GDATTN_KERNEL GDATTN_NAME(softmax_rows, S)(long long n, int cols, int lg, \
                                               const T *x, T *y) {            \
        GDATTN_GRID_STRIDE(r, n) {                                            \
            const T *row = x + r * cols;                                      \
            T *o = y + r * cols;                                              \
            T mx = row[0];                                                    \
            int i;                                                            \
            for (i = 1; i < cols; i++) mx = row[i] > mx ? row[i] : mx;        \
            double sum = 0;                                                   \
            for (i = 0; i < cols; i++) {                                      \
                double e = exp((double)(row[i] - mx));                        \
                sum += e;                                                     \
                if (!lg) o[i] = (T)e;                                         \
            }                                                                 \
            if (lg) {                                                         \
                double ls = log(sum);                                         \
                for (i = 0; i < cols; i++)                                    \
                    o[i] = (T)((double)(row[i] - mx) - ls);                   \
            } else {                                                          \
                double inv = 1 / sum;                                         \
                for (i = 0; i < cols; i++) o[i] = (T)((double)o[i] * inv);    \
            }                                                                 \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_SOFTMAX)

/*
 * softmax_grad_rows_<T>: dx = y⊙(dy − Σ dy⊙y) for softmax, dx = dy −
 * exp(y)·Σ dy for log-softmax (y the forward output).
 */
#define GDATTN_SOFTMAX_GRAD(T, S)                                             \
    GDATTN_KERNEL GDATTN_NAME(softmax_grad_rows, S)(long long n, int cols,    \
                                                    int lg, const T *y,       \
                                                    const T *dy, T *dx) {     \
        GDATTN_GRID_STRIDE(r, n) {                                            \
            const T *yr = y + r * cols, *dr = dy + r * cols;                  \
            T *o = dx + r * cols;                                             \
            double s = 0;                                                     \
            int i;                                                            \
            if (lg) {                                                         \
                for (i = 0; i < cols; i++) s += (double)dr[i];                \
                for (i = 0; i < cols; i++)                                    \
                    o[i] = (T)((double)dr[i] - exp((double)yr[i]) * s);       \
            } else {                                                          \
                for (i = 0; i < cols; i++) s += (double)dr[i] * (double)yr[i]; \
                for (i = 0; i < cols; i++)                                    \
                    o[i] = (T)((double)yr[i] * ((double)dr[i] - s));          \
            }                                                                 \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_SOFTMAX_GRAD)

/*
 * Rows of softmaxLongRow columns and more (op_elem.go): one warp per row
 * (warp kernels, kernels/common.h), lane l taking the columns j ≡ l
 * (mod 32); every product a sum reads rounded on its own (__dmul_rn), so
 * the emulator and the device give the same bits but for exp and log.
 *
 * softmax_rows_warp_<T>: softmax_rows. Each lane keeps the running maximum
 * of its columns and Σ exp(x − max) in double (gdattn_lse_step); the
 * butterfly joins the pairs (gdattn_lse_join); then each lane writes its
 * columns: exp(x − mx)/Σ, or (x − mx) − log Σ, with mx the row's maximum
 * in T and x − mx taken in T as the serial kernel does.
 */
#define GDATTN_SOFTMAX_WARP(T, S)                                             \
    GDATTN_WARP_KERNEL GDATTN_NAME(softmax_rows_warp, S)(                     \
        long long n, int cols, int lg, const T *x, T *y) {                    \
        GDATTN_WARP_STRIDE(r, n) {                                            \
            const T *row = x + r * cols;                                      \
            T *o = y + r * cols;                                              \
            GDATTN_LANE_VAR(double, m);                                       \
            GDATTN_LANE_VAR(double, sm);                                      \
            GDATTN_FOR_LANES(lane) {                                          \
                double mk = -INFINITY, sk = 0;                                \
                int j;                                                        \
                for (j = lane; j < cols; j += 32)                             \
                    gdattn_lse_step(&mk, &sk, (double)row[j]);                \
                GDATTN_AT(m, lane) = mk;                                      \
                GDATTN_AT(sm, lane) = sk;                                     \
            }                                                                 \
            GDATTN_WARP_ALLREDUCE2(double, m, sm, gdattn_lse_join);           \
            GDATTN_FOR_LANES(lane) {                                          \
                T mx = (T)GDATTN_AT(m, lane);                                 \
                double s = GDATTN_AT(sm, lane);                               \
                int j;                                                        \
                if (lg) {                                                     \
                    double ls = log(s);                                       \
                    for (j = lane; j < cols; j += 32)                         \
                        o[j] = (T)((double)(row[j] - mx) - ls);               \
                } else {                                                      \
                    double inv = 1 / s;                                       \
                    for (j = lane; j < cols; j += 32)                         \
                        o[j] = (T)__dmul_rn(exp((double)(row[j] - mx)), inv); \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_SOFTMAX_WARP)

/*
 * softmax_grad_rows_warp_<T>: softmax_grad_rows, one warp per row: the
 * row's Σ dy·y (softmax) or Σ dy (log-softmax) in double, each lane's
 * columns in order, joined by the butterfly; then dx for each column.
 */
#define GDATTN_SOFTMAX_GRAD_WARP(T, S)                                        \
    GDATTN_WARP_KERNEL GDATTN_NAME(softmax_grad_rows_warp, S)(                \
        long long n, int cols, int lg, const T *y, const T *dy, T *dx) {      \
        GDATTN_WARP_STRIDE(r, n) {                                            \
            const T *yr = y + r * cols, *dr = dy + r * cols;                  \
            T *o = dx + r * cols;                                             \
            double s;                                                         \
            GDATTN_LANE_VAR(double, a);                                       \
            GDATTN_FOR_LANES(lane) {                                          \
                double t = 0;                                                 \
                int j;                                                        \
                for (j = lane; j < cols; j += 32)                             \
                    t += lg ? (double)dr[j]                                   \
                            : __dmul_rn((double)dr[j], (double)yr[j]);        \
                GDATTN_AT(a, lane) = t;                                       \
            }                                                                 \
            GDATTN_WARP_ALLREDUCE(double, a, GDATTN_ADD);                     \
            s = GDATTN_WARP_VALUE(a);                                         \
            GDATTN_FOR_LANES(lane) {                                          \
                int j;                                                        \
                for (j = lane; j < cols; j += 32)                             \
                    o[j] = lg ? (T)((double)dr[j] -                           \
                                    __dmul_rn(exp((double)yr[j]), s))         \
                              : (T)((double)yr[j] * ((double)dr[j] - s));     \
            }                                                                 \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_SOFTMAX_GRAD_WARP)
