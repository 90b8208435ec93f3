/*
 * adam.cu: the Trainer's Adam/AdamW update on the device (graph.AdamUpdate),
 * in double with double moments, in the same arithmetic form as the host
 * update (graph/optim.go adamUpdate):
 *
 *     g' = scale·g + l2·w
 *     m  = b1·m + (1−b1)·g'          v = b2·v + (1−b2)·g'²
 *     w  = w·keep − step·m / (sqrt(v)·rbc2 + eps)
 *
 * with step = lr/bc1, rbc2 = 1/sqrt(bc2), keep = 1 − lr·wd (AdamW) or 1,
 * l2 = wd (Adam) or 0. Each new value that is NaN or ±Inf adds 1 to *bad
 * (the trainer's check of resident parameters, Exec.NonFiniteParams).
 */
#include "common.h"

#define GDATTN_ADAM(T, S)                                                     \
    GDATTN_KERNEL GDATTN_NAME(adam_update, S)(                                \
        long long n, T *w, const T *g, double *m, double *v, double b1,       \
        double b2, double eps, double step, double rbc2, double keep,         \
        double l2, double scale, double *bad) {                               \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            double p = (double)w[i];                                          \
            double gi = (double)g[i];                                         \
            if (scale != 1) gi *= scale;                                      \
            gi += l2 * p;                                                     \
            double mi = b1 * m[i] + (1 - b1) * gi;                            \
            double vi = b2 * v[i] + (1 - b2) * gi * gi;                       \
            m[i] = mi;                                                        \
            v[i] = vi;                                                        \
            T nw = (T)(p * keep - step * mi / (sqrt(vi) * rbc2 + eps));       \
            w[i] = nw;                                                        \
            if (!(GDATTN_FN(fabs, _f64)((double)nw) <= 1.7976931348623157e308)) \
                gdattn_atomic_add_f64(bad, 1);                                \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_ADAM)
