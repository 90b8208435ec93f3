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
 * reduce4_<T>: x has dims (d0, d1, d2, d3); bit a of mask set means axis a
 * is summed. Each of the n items computes one output (the kept axes in
 * order), summing in double.
 */
#define GDATTN_REDUCE(T, S)                                                   \
    GDATTN_KERNEL GDATTN_NAME(reduce4, S)(long long n, const T *x, T *y,      \
                                          long long d0, long long d1,         \
                                          long long d2, long long d3,         \
                                          int mask) {                         \
        GDATTN_GRID_STRIDE(o, n) {                                            \
            long long d[4], c[4], stride[4];                                  \
            long long rem = o, R = 1;                                         \
            int a;                                                            \
            d[0] = d0; d[1] = d1; d[2] = d2; d[3] = d3;                       \
            stride[3] = 1; stride[2] = d3; stride[1] = d2 * d3;               \
            stride[0] = d1 * d2 * d3;                                         \
            for (a = 3; a >= 0; a--) {                                        \
                if ((mask >> a) & 1) { c[a] = 0; R *= d[a]; }                 \
                else { c[a] = rem % d[a]; rem /= d[a]; }                      \
            }                                                                 \
            long long base = c[0] * stride[0] + c[1] * stride[1] +            \
                             c[2] * stride[2] + c[3] * stride[3];             \
            double s = 0;                                                     \
            for (long long r = 0; r < R; r++) {                               \
                long long rr = r, off = base;                                 \
                for (a = 3; a >= 0; a--) {                                    \
                    if ((mask >> a) & 1) {                                    \
                        off += (rr % d[a]) * stride[a];                       \
                        rr /= d[a];                                           \
                    }                                                         \
                }                                                             \
                s += (double)x[off];                                          \
            }                                                                 \
            y[o] = (T)s;                                                      \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_REDUCE)

/*
 * reduce4_atomic_<T>: the same sums with one item per input element (n =
 * |x|) adding into a zeroed double accumulator acc (one per output); for few
 * outputs over many inputs. cast_acc copies acc into y afterwards.
 */
#define GDATTN_REDUCE_ATOMIC(T, S)                                            \
    GDATTN_KERNEL GDATTN_NAME(reduce4_atomic, S)(long long n, const T *x,     \
                                                 double *acc, long long d1,   \
                                                 long long d2, long long d3,  \
                                                 int mask) {                  \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            long long t = i;                                                  \
            long long c3 = t % d3; t /= d3;                                   \
            long long c2 = t % d2; t /= d2;                                   \
            long long c1 = t % d1; t /= d1;                                   \
            long long c0 = t, o = 0;                                          \
            if (!(mask & 1)) o = c0;                                          \
            if (!(mask & 2)) o = o * d1 + c1;                                 \
            if (!(mask & 4)) o = o * d2 + c2;                                 \
            if (!(mask & 8)) o = o * d3 + c3;                                 \
            gdattn_atomic_add_f64(acc + o, (double)x[i]);                     \
        }                                                                     \
    }                                                                         \
    GDATTN_KERNEL GDATTN_NAME(cast_acc, S)(long long n, const double *acc,    \
                                           T *y) {                            \
        GDATTN_GRID_STRIDE(i, n) { y[i] = (T)acc[i]; }                        \
    }
GDATTN_FLOATS(GDATTN_REDUCE_ATOMIC)
