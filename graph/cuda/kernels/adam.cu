/*
 * adam.cu: the Trainer's Adam/AdamW update on the device (graph.AdamUpdate),
 * in double with double moments, as the host update.
 */
#include "common.h"

#define GDATTN_ADAM(T, S)                                                     \
    GDATTN_KERNEL GDATTN_NAME(adam_update, S)(                                \
        long long n, T *w, const T *g, double *m, double *v, double lr,       \
        double beta1, double beta2, double eps, double bc1, double bc2,       \
        double wd, int decoupled, double scale) {                             \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            double p = (double)w[i];                                          \
            double gi = (double)g[i];                                         \
            if (scale != 1) gi *= scale;                                      \
            if (wd != 0 && !decoupled) gi += wd * p;                          \
            m[i] = beta1 * m[i] + (1 - beta1) * gi;                           \
            v[i] = beta2 * v[i] + (1 - beta2) * gi * gi;                      \
            if (wd != 0 && decoupled) p -= lr * wd * p;                       \
            p -= lr * (m[i] / bc1) / (sqrt(v[i] / bc2) + eps);                \
            w[i] = (T)p;                                                      \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_ADAM)
