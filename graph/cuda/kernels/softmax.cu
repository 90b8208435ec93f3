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
