/*
 * shape.cu: data movement and reductions of the executor: repeat
 * (broadcasts), band copies (slices, their gradients, concatenation),
 * axis permutations (transposes) and sums along axes.
 */
#include "common.h"

/*
 * repeat_<T>: y (outer, din·reps, inner) from x (outer, din, inner), each
 * slice along the middle axis repeated reps times (numpy.repeat); n = |y|.
 */
#define GDATTN_REPEAT(T, S)                                                   \
    GDATTN_KERNEL GDATTN_NAME(repeat, S)(long long n, const T *x, T *y,       \
                                         long long din, long long reps,       \
                                         long long inner) {                   \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            long long ii = i % inner, t = i / inner;                          \
            long long dout = din * reps;                                      \
            long long j = t % dout, o = t / dout;                             \
            y[i] = x[(o * din + j / reps) * inner + ii];                      \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_REPEAT)

/*
 * band_copy_<T>: for every o < outer, a < part, c < inner (n =
 * outer·part·inner): y[(o·yfull + yoff + a)·inner + c] =
 * x[(o·xfull + xoff + a)·inner + c].
 */
#define GDATTN_BAND(T, S)                                                     \
    GDATTN_KERNEL GDATTN_NAME(band_copy, S)(long long n, const T *x, T *y,    \
                                            long long part, long long inner,  \
                                            long long xfull, long long xoff,  \
                                            long long yfull, long long yoff) { \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            long long c = i % inner, t = i / inner;                           \
            long long a = t % part, o = t / part;                             \
            y[(o * yfull + yoff + a) * inner + c] =                           \
                x[(o * xfull + xoff + a) * inner + c];                        \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_BAND)

/*
 * permute4_<T>: y has dims (e0, e1, e2, e3) (leading ones for lower ranks);
 * y[c0,c1,c2,c3] = x[c0·s0 + c1·s1 + c2·s2 + c3·s3], s_k the stride in x of
 * the axis that becomes axis k.
 */
#define GDATTN_PERMUTE(T, S)                                                  \
    GDATTN_KERNEL GDATTN_NAME(permute4, S)(long long n, const T *x, T *y,     \
                                           long long e1, long long e2,        \
                                           long long e3, long long s0,        \
                                           long long s1, long long s2,        \
                                           long long s3) {                    \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            long long t = i;                                                  \
            long long c3 = t % e3; t /= e3;                                   \
            long long c2 = t % e2; t /= e2;                                   \
            long long c1 = t % e1; t /= e1;                                   \
            y[i] = x[t * s0 + c1 * s1 + c2 * s2 + c3 * s3];                   \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_PERMUTE)

/*
 * reduce_sum_<T>: x has dims (d0, d1, d2, d3); bit a of mask set means axis
 * a is summed. Returns, in double, the sum for output o (the kept axes in
 * order) of its summed elements r = start, start + step, ... in order.
 */
#define GDATTN_REDUCE_SUM(T, S)                                               \
    GDATTN_DEVICE double GDATTN_NAME(reduce_sum, S)(                          \
        const T *x, long long d0, long long d1, long long d2, long long d3,   \
        int mask, long long o, long long start, long long step) {             \
        long long d[4], c[4], stride[4];                                      \
        long long rem = o, R = 1;                                             \
        int a;                                                                \
        d[0] = d0; d[1] = d1; d[2] = d2; d[3] = d3;                           \
        stride[3] = 1; stride[2] = d3; stride[1] = d2 * d3;                   \
        stride[0] = d1 * d2 * d3;                                             \
        for (a = 3; a >= 0; a--) {                                            \
            if ((mask >> a) & 1) { c[a] = 0; R *= d[a]; }                     \
            else { c[a] = rem % d[a]; rem /= d[a]; }                          \
        }                                                                     \
        long long base = c[0] * stride[0] + c[1] * stride[1] +                \
                         c[2] * stride[2] + c[3] * stride[3];                 \
        double s = 0;                                                         \
        for (long long r = start; r < R; r += step) {                         \
            long long rr = r, off = base;                                     \
            for (a = 3; a >= 0; a--) {                                        \
                if ((mask >> a) & 1) {                                        \
                    off += (rr % d[a]) * stride[a];                           \
                    rr /= d[a];                                               \
                }                                                             \
            }                                                                 \
            s += (double)x[off];                                              \
        }                                                                     \
        return s;                                                             \
    }
GDATTN_FLOATS(GDATTN_REDUCE_SUM)

/*
 * reduce4_<T>: the sums of reduce_sum, one item per output (n outputs).
 */
#define GDATTN_REDUCE(T, S)                                                   \
    GDATTN_KERNEL GDATTN_NAME(reduce4, S)(long long n, const T *x, T *y,      \
                                          long long d0, long long d1,         \
                                          long long d2, long long d3,         \
                                          int mask) {                         \
        GDATTN_GRID_STRIDE(o, n) {                                            \
            y[o] = (T)GDATTN_NAME(reduce_sum, S)(x, d0, d1, d2, d3, mask, o,  \
                                                 0, 1);                       \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_REDUCE)

/*
 * Few outputs over many inputs, in two launches with a fixed order of sums
 * (the same numbers every run): reduce4_part_<T> splits each output's R
 * summed elements over chunks items, item k summing the elements r ≡ k
 * (mod chunks) in order into part[k·outs + o], outs = n / chunks; with
 * omajor the items of one output are neighbours (i = o·chunks + k, for a
 * summed innermost axis, so that neighbouring items read neighbouring
 * elements), else the outputs are (i = k·outs + o). reduce_join_<T> then
 * sums each output's chunks in order: y[o] = Σ_k part[k·outs + o].
 */
#define GDATTN_REDUCE_PART(T, S)                                              \
    GDATTN_KERNEL GDATTN_NAME(reduce4_part, S)(                               \
        long long n, const T *x, double *part, long long d0, long long d1,    \
        long long d2, long long d3, int mask, long long chunks, int omajor) { \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            long long outs = n / chunks;                                      \
            long long o = omajor ? i / chunks : i % outs;                     \
            long long k = omajor ? i % chunks : i / outs;                     \
            part[k * outs + o] = GDATTN_NAME(reduce_sum, S)(                  \
                x, d0, d1, d2, d3, mask, o, k, chunks);                       \
        }                                                                     \
    }                                                                         \
    GDATTN_KERNEL GDATTN_NAME(reduce_join, S)(long long n, long long chunks,  \
                                              const double *part, T *y) {     \
        GDATTN_GRID_STRIDE(o, n) {                                            \
            double s = 0;                                                     \
            long long k;                                                      \
            for (k = 0; k < chunks; k++) s += part[k * n + o];                \
            y[o] = (T)s;                                                      \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_REDUCE_PART)

/*
 * reduce4_warp_<T>: reduce4 for sums of moderate length in one launch, one
 * warp per output (warp kernels, kernels/common.h): lane l sums the
 * output's summed elements r ≡ l (mod 32) in order (reduce_sum), in
 * double, the butterfly joins the lanes, and y[o] is the sum in T.
 */
#define GDATTN_REDUCE_WARP(T, S)                                              \
    GDATTN_WARP_KERNEL GDATTN_NAME(reduce4_warp, S)(                          \
        long long n, const T *x, T *y, long long d0, long long d1,            \
        long long d2, long long d3, int mask) {                               \
        GDATTN_WARP_STRIDE(o, n) {                                            \
            GDATTN_LANE_VAR(double, a);                                       \
            GDATTN_FOR_LANES(lane) {                                          \
                GDATTN_AT(a, lane) = GDATTN_NAME(reduce_sum, S)(              \
                    x, d0, d1, d2, d3, mask, o, lane, 32);                    \
            }                                                                 \
            GDATTN_WARP_ALLREDUCE(double, a, GDATTN_ADD);                     \
            GDATTN_WARP_ONCE { y[o] = (T)GDATTN_WARP_VALUE(a); }              \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_REDUCE_WARP)

/* cast_acc_<T>: y = (T)acc, a double accumulator (the attention ops'). */
#define GDATTN_CAST_ACC(T, S)                                                 \
    GDATTN_KERNEL GDATTN_NAME(cast_acc, S)(long long n, const double *acc,    \
                                           T *y) {                            \
        GDATTN_GRID_STRIDE(i, n) { y[i] = (T)acc[i]; }                        \
    }
GDATTN_FLOATS(GDATTN_CAST_ACC)
