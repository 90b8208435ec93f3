/*
 * gradstats.cu: what the Trainer's NaN/Inf guard and gradient clipping need
 * from gradients that stay on the device (ExecOptions.DeviceGrads): the sum
 * of squares and the number of non-finite elements of each gradient.
 *
 * grad_part_<T>: item c of n = chunks sums g_j² (in double) and counts the
 * non-finite g_j over j ≡ c (mod chunks), j < size, into part[2c], part[2c+1].
 */
#include "common.h"

#define GDATTN_GRAD_PART(T, S)                                                \
    GDATTN_KERNEL GDATTN_NAME(grad_part, S)(long long n, long long size,      \
                                            const T *g, double *part) {       \
        GDATTN_GRID_STRIDE(c, n) {                                            \
            double s = 0, bad = 0;                                            \
            long long j;                                                      \
            for (j = c; j < size; j += n) {                                   \
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
GDATTN_FLOATS(GDATTN_GRAD_PART)

/*
 * grad_join: item i of n sums the pairs part[2c], part[2c+1] of the chunks
 * c ≡ i (mod n), c < chunks, in order, into out[2i], out[2i+1]; with n = 1
 * the totals, with more items a middle level of a long reduction.
 */
GDATTN_KERNEL grad_join(long long n, int chunks, const double *part,
                        double *out) {
    GDATTN_GRID_STRIDE(i, n) {
        double s = 0, bad = 0;
        long long c;
        for (c = i; c < chunks; c += n) {
            s += part[2 * c];
            bad += part[2 * c + 1];
        }
        out[2 * i] = s;
        out[2 * i + 1] = bad;
    }
}
