/*
 * adam.cu: the Trainer's Adam/AdamW update on the device (graph.AdamUpdate),
 * one launch over every parameter of a group (multi-tensor Adam: the
 * parameters of one dtype whose moments have one dtype), in double, in the
 * same arithmetic form as the host update (train/optim.go adamUpdateScaled):
 *
 *     g' = scale·g + l2·w
 *     m  = b1·m + (1−b1)·g'          v = b2·v + (1−b2)·g'²
 *     w  = w·keep − step·m / (sqrt(v)·rbc2 + eps)
 *
 * with step = lr/bc1, rbc2 = 1/sqrt(bc2) and lr read from hyp[0], hyp[1],
 * hyp[2] in device memory (they change every step, and a captured CUDA
 * graph replays its launches' arguments unchanged), and for parameter k of weight
 * decay wd[k]: keep = 1 − lr·wd (AdamW: decoupled) or 1, l2 = wd (Adam) or
 * 0. The new moments are computed in double from the stored ones and
 * rounded to the moments' type when stored (float moments: the host's
 * Config.ParamDtypeMoments); the parameter's update uses the unrounded ones.
 *
 * tab describes the group's np parameters (long long each):
 *     tab[0..np]            element offsets: parameter k owns the work
 *                           items [tab[k], tab[k+1])
 *     tab[np+1+k]           w_k (device address)      tab[2np+1+k]  g_k
 *     tab[3np+1+k]          m_k                       tab[4np+1+k]  v_k
 *     tab[5np+1+k]          the parameter's index p in the program (wd[p],
 *                           bad[p])
 * ctl (gradstats.cu, step_finish) holds the step's gradient scale (ctl[0],
 * the clipping factor) and skip flag (ctl[1] != 0: the loss or a gradient
 * is NaN/±Inf: nothing is written). Each new parameter value that is NaN or
 * ±Inf adds 1 to bad[p] (the trainer's check of resident parameters).
 */
#include "common.h"

#define GDATTN_ADAM_MULTI(T, S, M, MS)                                        \
    GDATTN_KERNEL GDATTN_NAME(adam_multi##MS, S)(                             \
        long long n, int np, const long long *tab, double b1, double b2,      \
        double eps, const double *hyp, int decoupled,                         \
        const double *wd, const double *ctl, double *bad) {                   \
        if (ctl[1] != 0) return;                                              \
        double scale = ctl[0];                                                \
        double step = hyp[0], rbc2 = hyp[1], lr = hyp[2];                     \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            int k = gdattn_segment(tab, np, i);                               \
            long long j = i - tab[k];                                         \
            T *w = (T *)tab[np + 1 + k];                                      \
            const T *g = (const T *)tab[2 * np + 1 + k];                      \
            M *m = (M *)tab[3 * np + 1 + k];                                  \
            M *v = (M *)tab[4 * np + 1 + k];                                  \
            int p = (int)tab[5 * np + 1 + k];                                 \
            double l2 = 0, keep = 1, d = wd[p];                               \
            if (d != 0) {                                                     \
                if (decoupled)                                                \
                    keep = 1 - __dmul_rn(lr, d);                              \
                else                                                          \
                    l2 = d;                                                   \
            }                                                                 \
            double pw = (double)w[j];                                         \
            double gi = (double)g[j];                                         \
            if (scale != 1) gi = __dmul_rn(gi, scale);                        \
            gi += l2 * pw;                                                    \
            double mi = b1 * (double)m[j] + (1 - b1) * gi;                    \
            double vi = b2 * (double)v[j] + (1 - b2) * gi * gi;               \
            m[j] = (M)mi;                                                     \
            v[j] = (M)vi;                                                     \
            T nw = (T)(pw * keep - step * mi / (sqrt(vi) * rbc2 + eps));      \
            w[j] = nw;                                                        \
            if (!(GDATTN_FN(fabs, _f64)((double)nw) <= 1.7976931348623157e308)) \
                gdattn_atomic_add_f64(&bad[p], 1);                            \
        }                                                                     \
    }
/* adam_multi_m64_f32, adam_multi_m64_f64: double moments. */
#define GDATTN_ADAM_M64(T, S) GDATTN_ADAM_MULTI(T, S, double, _m64)
GDATTN_FLOATS(GDATTN_ADAM_M64)
/* adam_multi_m32_f32: float moments for float parameters. */
GDATTN_ADAM_MULTI(float, _f32, float, _m32)
