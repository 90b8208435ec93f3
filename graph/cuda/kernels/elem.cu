/*
 * elem.cu: elementwise kernels of the executor (Gorgonia's elemUnaryOp and
 * elemBinOp, ops.GELU and its gradient), a scalar operand broadcast through
 * a zero stride, and ew_chain, which runs a chain of them in one launch.
 */
#include "common.h"

/*
 * Unary op codes (graph/cuda/op_elem.go keeps the same table):
 * 0 neg, 1 exp, 2 ln, 3 sqrt, 4 square, 5 cube, 6 inv, 7 sigmoid, 8 tanh,
 * 9 abs, 10 log1p, 11 expm1, 12 softplus, 13 invSqrt, 14 sign, 15 log2.
 */
/* sigmoid_apply_<T>: the logistic function, without overflow for either sign. */
#define GDATTN_SIGMOID(T, S)                                                  \
    GDATTN_DEVICE T GDATTN_NAME(sigmoid_apply, S)(T v) {                      \
        if (v >= 0) return (T)1 / ((T)1 + GDATTN_FN(exp, S)(-v));             \
        return GDATTN_FN(exp, S)(v) / ((T)1 + GDATTN_FN(exp, S)(v));          \
    }
GDATTN_FLOATS(GDATTN_SIGMOID)

/*
 * softplus_apply_<T>: log(1 + eˣ) as Gorgonia computes it (math.go,
 * _softplusf32/_softplusf64): 0 below the point where eˣ underflows, x above
 * the point where the sum rounds to x, float32 through float64 in between.
 */
GDATTN_DEVICE float softplus_apply_f32(float v) {
    if (v < -103.0f) return 0.0f;
    if (v > 14.0f) return v;
    return (float)log1p(exp((double)v));
}
GDATTN_DEVICE double softplus_apply_f64(double v) {
    if (v < -708.0) return 0.0;
    if (v > 16.0) return v;
    return log1p(exp(v));
}

#define GDATTN_UNARY(T, S)                                                    \
    GDATTN_DEVICE T GDATTN_NAME(unary_apply, S)(int op, T v) {                \
        switch (op) {                                                         \
        case 0: return -v;                                                    \
        case 1: return GDATTN_FN(exp, S)(v);                                  \
        case 2: return GDATTN_FN(log, S)(v);                                  \
        case 3: return GDATTN_FN(sqrt, S)(v);                                 \
        case 4: return v * v;                                                 \
        case 5: return v * v * v;                                             \
        case 6: return (T)1 / v;                                              \
        case 7: return GDATTN_NAME(sigmoid_apply, S)(v);                      \
        case 8: return GDATTN_FN(tanh, S)(v);                                 \
        case 9: return GDATTN_FN(fabs, S)(v);                                 \
        case 10: return GDATTN_FN(log1p, S)(v);                               \
        case 11: return GDATTN_FN(expm1, S)(v);                               \
        case 12: return GDATTN_NAME(softplus_apply, S)(v);                    \
        case 13: return (T)1 / GDATTN_FN(sqrt, S)(v);                         \
        case 14: return v > 0 ? (T)1 : (v < 0 ? (T)-1 : (T)0);                \
        case 15: return GDATTN_FN(log, S)(v) / (T)0.69314718055994530942;     \
        }                                                                     \
        return v;                                                             \
    }                                                                         \
    GDATTN_KERNEL GDATTN_NAME(ew_unary, S)(long long n, int op, const T *x,   \
                                           T *y) {                            \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            y[i] = GDATTN_NAME(unary_apply, S)(op, x[i]);                     \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_UNARY)

/*
 * ew_binary_<T>: y[i] = a[i·sa] op b[i·sb] (sa, sb ∈ {0, 1}); op codes:
 * 0 add, 1 sub, 2 mul, 3 div, 4 pow.
 */
#define GDATTN_BINARY(T, S)                                                   \
    GDATTN_KERNEL GDATTN_NAME(ew_binary, S)(long long n, int op, const T *a,  \
                                            long long sa, const T *b,         \
                                            long long sb, T *y) {             \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            T u = a[i * sa], v = b[i * sb];                                   \
            T r;                                                              \
            switch (op) {                                                     \
            case 0: r = u + v; break;                                         \
            case 1: r = u - v; break;                                         \
            case 2: r = u * v; break;                                         \
            case 3: r = u / v; break;                                         \
            default: r = GDATTN_FN(pow, S)(u, v); break;                      \
            }                                                                 \
            y[i] = r;                                                         \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_BINARY)

/*
 * gelu_<T> and gelu_grad_<T>: ops.GELU, x σ(k (x + c x³)) with c = 0.044715 and
 * k = 2√(2/π), and its gradient dx from (x, dy) in the terms of the host op
 * (ops/gelu.go): a = s·dy, b = ((s·σ(−z))·(x·dy))·k, (a + b) + ((x·x)·3)·(b·c),
 * z = k (x + x³c), s = σ(z) (sigmoid_apply, ew_unary's op code 7).
 */
#define GDATTN_GELU(T, S)                                                     \
    GDATTN_DEVICE T GDATTN_NAME(gelu_arg, S)(T v) {                           \
        return (v + v * v * v * (T)0.044715) * (T)1.5957691216057308;         \
    }                                                                         \
    GDATTN_KERNEL GDATTN_NAME(gelu, S)(long long n, const T *x, T *y) {       \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            T v = x[i];                                                       \
            y[i] = v * GDATTN_NAME(sigmoid_apply, S)(GDATTN_NAME(gelu_arg, S)(v)); \
        }                                                                     \
    }                                                                         \
    GDATTN_DEVICE T GDATTN_NAME(gelu_grad_apply, S)(T v, T g) {               \
        T z = GDATTN_NAME(gelu_arg, S)(v);                                    \
        T s = GDATTN_NAME(sigmoid_apply, S)(z);                               \
        T sm = GDATTN_NAME(sigmoid_apply, S)(-z);                             \
        T a = s * g;                                                          \
        T b = ((s * sm) * (v * g)) * (T)1.5957691216057308;                   \
        return (a + b) + ((v * v) * (T)3) * (b * (T)0.044715);                \
    }                                                                         \
    GDATTN_KERNEL GDATTN_NAME(gelu_grad, S)(long long n, const T *x,          \
                                            const T *dy, T *y) {              \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            y[i] = GDATTN_NAME(gelu_grad_apply, S)(x[i], dy[i]);              \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_GELU)

/*
 * chain_index: the element of a chain input that element i of the output
 * reads: i·s (s ∈ {0, 1}: a broadcast scalar or a same-size input) when
 * reps = 0, else the element repeat_<T> (shape.cu) copies to y[i] from an
 * input of (outer, din, inner) repeated reps times along its middle axis.
 */
GDATTN_DEVICE long long chain_index(long long i, long long s, long long din,
                                    long long reps, long long inner) {
    if (reps == 0) return i * s;
    long long ii = i % inner, t = i / inner;
    long long dout = din * reps;
    long long j = t % dout, o = t / dout;
    return (o * din + j / reps) * inner + ii;
}

/*
 * ew_chain_<T>: a chain of elementwise ops (graph/cuda/fuse.go) in one
 * launch, each element's intermediate results kept in a register of type T:
 * r = x0[chain_index(i, ...0)], then for each of the steps k = 0..steps-1
 * (16 bits each, steps 0-3 in p0 and 4-7 in p1, step k at bits 16·(k mod 4)):
 *   bits 0-1  kind: 0 r = unary(r), 1 r = r op o, 2 r = o op r, 3 r = r op r
 *   bits 2-6  code: ew_unary's op code (16: gelu), or ew_binary's
 *             (5: gelu_grad(x, dy))
 *   bits 7-8  operand o: x0..x3 (element chain_index(i, sk, dk, rk, ik) of xk)
 * and y[i] = r. Each op is computed as the single-op kernels compute it, in
 * T, so every step rounds as it does when its result is stored; products
 * use the _rn intrinsics so that nvcc cannot contract a product with the
 * next step's sum into one fused multiply-add (which would round once where
 * the unfused kernels round twice).
 */
#define GDATTN_CHAIN(T, S, MUL)                                               \
    GDATTN_DEVICE T GDATTN_NAME(chain_unary, S)(int op, T v) {                \
        switch (op) {                                                         \
        case 4: return MUL(v, v);                                             \
        case 5: return MUL(v * v, v);                                         \
        case 16:                                                              \
            return MUL(v, GDATTN_NAME(sigmoid_apply, S)(                      \
                              GDATTN_NAME(gelu_arg, S)(v)));                  \
        }                                                                     \
        return GDATTN_NAME(unary_apply, S)(op, v);                            \
    }                                                                         \
    GDATTN_DEVICE T GDATTN_NAME(chain_binary, S)(int op, T u, T v) {          \
        switch (op) {                                                         \
        case 0: return u + v;                                                 \
        case 1: return u - v;                                                 \
        case 2: return MUL(u, v);                                             \
        case 3: return u / v;                                                 \
        case 4: return GDATTN_FN(pow, S)(u, v);                               \
        }                                                                     \
        return GDATTN_NAME(gelu_grad_apply, S)(u, v);                         \
    }                                                                         \
    GDATTN_KERNEL GDATTN_NAME(ew_chain, S)(                                   \
        long long n, long long p0, long long p1, int steps,                   \
        const T *x0, long long s0, long long d0, long long r0, long long i0,  \
        const T *x1, long long s1, long long d1, long long r1, long long i1,  \
        const T *x2, long long s2, long long d2, long long r2, long long i2,  \
        const T *x3, long long s3, long long d3, long long r3, long long i3,  \
        T *y) {                                                               \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            T r = x0[chain_index(i, s0, d0, r0, i0)];                         \
            for (int k = 0; k < steps; k++) {                                 \
                int st = (int)(((k < 4 ? p0 : p1) >> (16 * (k & 3))) & 0xffff); \
                int kind = st & 3, code = (st >> 2) & 31, w = (st >> 7) & 3;  \
                T o = r;                                                      \
                if (kind == 1 || kind == 2) {                                 \
                    switch (w) {                                              \
                    case 0: o = x0[chain_index(i, s0, d0, r0, i0)]; break;    \
                    case 1: o = x1[chain_index(i, s1, d1, r1, i1)]; break;    \
                    case 2: o = x2[chain_index(i, s2, d2, r2, i2)]; break;    \
                    default: o = x3[chain_index(i, s3, d3, r3, i3)]; break;   \
                    }                                                         \
                }                                                             \
                switch (kind) {                                               \
                case 0: r = GDATTN_NAME(chain_unary, S)(code, r); break;      \
                case 2: r = GDATTN_NAME(chain_binary, S)(code, o, r); break;  \
                default: r = GDATTN_NAME(chain_binary, S)(code, r, o); break; \
                }                                                             \
            }                                                                 \
            y[i] = r;                                                         \
        }                                                                     \
    }
GDATTN_CHAIN(float, _f32, __fmul_rn)
GDATTN_CHAIN(double, _f64, __dmul_rn)
