/*
 * gradstats.cu: what the Trainer's NaN/Inf guard and gradient clipping need
 * from gradients that stay on the device (ExecOptions.DeviceGrads): the sum
 * of squares and the number of non-finite elements of each gradient, and
 * from them the step's clipping factor and skip flag, all on the device, for
 * every parameter in one launch per level (multi-tensor statistics).
 *
 * A tensor's statistics are a tree of partial sums whose shape depends only
 * on its size, so the same numbers every run. Level 0 (grad_part_multi) has
 * chunks_k items for parameter k; its item c sums g_j² (in double) and
 * counts the non-finite g_j over j ≡ c (mod chunks_k), j < size_k (so
 * neighbouring items read neighbouring elements). Each further level
 * (grad_join_multi) has, for each parameter with p parts left, ceil(p/fan)
 * items (1 if p <= fan), item j of n summing the parts c ≡ j (mod n) in
 * order; the last level leaves one pair per parameter.
 *
 * Offsets (off) are prefix sums over the parameters: parameter k owns the
 * items (and the output pairs) [off[k], off[k+1]) of a level.
 */
#include "common.h"

/*
 * grad_part_multi_<T>: level 0 over np gradients of type T; tab holds
 * off[0..np] (the chunks), then size_k (np values), then g_k (np device
 * addresses). Item c writes part[2c] (sum of squares) and part[2c+1]
 * (non-finite count).
 */
#define GDATTN_GRAD_PART_MULTI(T, S)                                          \
    GDATTN_KERNEL GDATTN_NAME(grad_part_multi, S)(                            \
        long long n, int np, const long long *tab, double *part) {            \
        GDATTN_GRID_STRIDE(c, n) {                                            \
            int k = gdattn_segment(tab, np, c);                               \
            long long chunks = tab[k + 1] - tab[k];                           \
            long long size = tab[np + 1 + k];                                 \
            const T *g = (const T *)tab[2 * np + 1 + k];                      \
            double s = 0, bad = 0;                                            \
            long long j;                                                      \
            for (j = c - tab[k]; j < size; j += chunks) {                     \
                double v = (double)g[j];                                      \
                if (!(GDATTN_FN(fabs, _f64)(v) <= 1.7976931348623157e308))    \
                    bad += 1;                                                 \
                else                                                          \
                    s += v * v;                                               \
            }                                                                 \
            part[2 * c] = s;                                                  \
            part[2 * c + 1] = bad;                                            \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_GRAD_PART_MULTI)

/*
 * grad_join_multi: one level: prev and cur are the offsets of the level
 * below and of this one; item i of parameter k (local index j of nk =
 * cur[k+1] − cur[k]) sums the pairs src[2(prev[k]+c)], src[2(prev[k]+c)+1]
 * over c ≡ j (mod nk), c < prev[k+1] − prev[k], in order, into dst[2i],
 * dst[2i+1].
 */
GDATTN_KERNEL grad_join_multi(long long n, int np, const long long *prev,
                              const long long *cur, const double *src,
                              double *dst) {
    GDATTN_GRID_STRIDE(i, n) {
        int k = gdattn_segment(cur, np, i);
        long long nk = cur[k + 1] - cur[k];
        long long parts = prev[k + 1] - prev[k];
        const double *p = src + 2 * prev[k];
        double s = 0, bad = 0;
        long long c;
        for (c = i - cur[k]; c < parts; c += nk) {
            s += p[2 * c];
            bad += p[2 * c + 1];
        }
        dst[2 * i] = s;
        dst[2 * i + 1] = bad;
    }
}

/*
 * step_finish_<T>: one item. From the loss (type T) and the np per-parameter
 * pairs (sum of squares, non-finite count) in stats, the host's rule
 * (train.Trainer.Step): the step is skipped when the loss or a gradient
 * element is NaN/±Inf, or when clipping (clip > 0) and the squared norm
 * overflows; the global norm is the square root of the sums added in
 * parameter order; the gradient scale is clip/norm when clip > 0 and norm >
 * clip, else 1. Writes ctl[0] = scale, ctl[1] = skip (1 or 0), ctl[2] =
 * norm, ctl[3] = the loss in double, and zeroes bad[0..np) (the update's
 * non-finite counts, adam.cu).
 */
#define GDATTN_STEP_FINISH(T, S)                                              \
    GDATTN_KERNEL GDATTN_NAME(step_finish, S)(                                \
        long long n, int np, const T *loss, const double *stats, double clip, \
        double *ctl, double *bad) {                                           \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            double l = (double)loss[0], ssq = 0, norm, scale = 1;             \
            int skip = !(GDATTN_FN(fabs, _f64)(l) <= 1.7976931348623157e308); \
            int k;                                                            \
            for (k = 0; k < np; k++) {                                        \
                if (stats[2 * k + 1] > 0) skip = 1;                           \
                ssq += stats[2 * k];                                          \
                bad[k] = 0;                                                   \
            }                                                                 \
            norm = sqrt(ssq);                                                 \
            if (clip > 0 && !(norm <= 1.7976931348623157e308)) skip = 1;      \
            if (clip > 0 && norm > clip) scale = clip / norm;                 \
            ctl[0] = scale;                                                   \
            ctl[1] = skip;                                                    \
            ctl[2] = norm;                                                    \
            ctl[3] = l;                                                       \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_STEP_FINISH)
