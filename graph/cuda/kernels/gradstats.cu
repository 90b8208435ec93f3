/*
 * gradstats.cu: what the Trainer's NaN/Inf guard and gradient clipping need
 * from gradients that stay on the device (ExecOptions.DeviceGrads): the sum
 * of squares and the number of non-finite elements of each gradient, and
 * from them the step's clipping factor and skip flag, all on the device, for
 * every parameter in at most two launches (multi-tensor statistics, warp
 * kernels).
 *
 * A tensor's statistics are a tree of partial sums whose shape depends only
 * on its size, so the same numbers every run. grad_part_warp gives gradient
 * k w_k warps (a count that depends on its size only); warp w reads the
 * blocks of 32 consecutive elements b ≡ w (mod w_k), lane l the element l
 * of each block, each lane summing g² (in double, the product rounded
 * before the sum) and counting the non-finite elements in order, the lanes
 * joined by the butterfly. When some gradient has more than one warp,
 * grad_join_warp then gives each gradient one warp, lane l summing its
 * parts l, l + 32, ... in order, joined by the butterfly.
 *
 * Offsets (off) are prefix sums over the parameters: parameter k owns the
 * warps (and the output pairs) [off[k], off[k+1]) of the first launch.
 */
#include "common.h"

/* gdattn_pair_add: the butterfly's step for (sum, count) pairs. */
GDATTN_DEVICE void gdattn_pair_add(double *s, double *b, double os, double ob) {
    *s = *s + os;
    *b = *b + ob;
}

/*
 * grad_part_warp_<T>: the first launch over np gradients of type T, one
 * warp per item (n = off[np]); tab holds off[0..np], then size_k (np
 * values), then g_k (np device addresses). Item c writes part[2c] (sum of
 * squares) and part[2c+1] (non-finite count).
 */
#define GDATTN_GRAD_PART_WARP(T, S)                                           \
    GDATTN_WARP_KERNEL GDATTN_NAME(grad_part_warp, S)(                        \
        long long n, int np, const long long *tab, double *part) {            \
        GDATTN_WARP_STRIDE(c, n) {                                            \
            int k = gdattn_segment(tab, np, c);                               \
            long long w = c - tab[k], nw = tab[k + 1] - tab[k];               \
            long long size = tab[np + 1 + k];                                 \
            const T *g = (const T *)tab[2 * np + 1 + k];                      \
            GDATTN_LANE_VAR(double, s);                                       \
            GDATTN_LANE_VAR(double, bad);                                     \
            GDATTN_FOR_LANES(lane) {                                          \
                double sl = 0, bl = 0;                                        \
                long long j;                                                  \
                for (j = 32 * w + lane; j < size; j += 32 * nw) {             \
                    double v = (double)g[j];                                  \
                    if (!(GDATTN_FN(fabs, _f64)(v) <= 1.7976931348623157e308)) \
                        bl += 1;                                              \
                    else                                                      \
                        sl += __dmul_rn(v, v);                                \
                }                                                             \
                GDATTN_AT(s, lane) = sl;                                      \
                GDATTN_AT(bad, lane) = bl;                                    \
            }                                                                 \
            GDATTN_WARP_ALLREDUCE2(double, s, bad, gdattn_pair_add);          \
            GDATTN_WARP_ONCE {                                                \
                part[2 * c] = GDATTN_WARP_VALUE(s);                           \
                part[2 * c + 1] = GDATTN_WARP_VALUE(bad);                     \
            }                                                                 \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_GRAD_PART_WARP)

/*
 * grad_join_warp: one warp per gradient k (n = np) sums the pairs
 * src[2(off[k]+c)], src[2(off[k]+c)+1] over c < off[k+1] − off[k], lane l
 * taking c ≡ l (mod 32) in order, into dst[2k], dst[2k+1].
 */
GDATTN_WARP_KERNEL grad_join_warp(long long n, const long long *off,
                                  const double *src, double *dst) {
    GDATTN_WARP_STRIDE(k, n) {
        long long parts = off[k + 1] - off[k];
        const double *p = src + 2 * off[k];
        GDATTN_LANE_VAR(double, s);
        GDATTN_LANE_VAR(double, bad);
        GDATTN_FOR_LANES(lane) {
            double sl = 0, bl = 0;
            long long c;
            for (c = lane; c < parts; c += 32) {
                sl += p[2 * c];
                bl += p[2 * c + 1];
            }
            GDATTN_AT(s, lane) = sl;
            GDATTN_AT(bad, lane) = bl;
        }
        GDATTN_WARP_ALLREDUCE2(double, s, bad, gdattn_pair_add);
        GDATTN_WARP_ONCE {
            dst[2 * k] = GDATTN_WARP_VALUE(s);
            dst[2 * k + 1] = GDATTN_WARP_VALUE(bad);
        }
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
