/*
 * elem.cu: elementwise kernels of the executor (Gorgonia's elemUnaryOp and
 * elemBinOp), a scalar operand broadcast through a zero stride.
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
        case 12: return GDATTN_FN(log1p, S)(GDATTN_FN(exp, S)(v));            \
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
    GDATTN_KERNEL GDATTN_NAME(gelu_grad, S)(long long n, const T *x,          \
                                            const T *dy, T *y) {              \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            T v = x[i], g = dy[i];                                            \
            T z = GDATTN_NAME(gelu_arg, S)(v);                                \
            T s = GDATTN_NAME(sigmoid_apply, S)(z);                            \
            T sm = GDATTN_NAME(sigmoid_apply, S)(-z);                          \
            T a = s * g;                                                      \
            T b = ((s * sm) * (v * g)) * (T)1.5957691216057308;               \
            y[i] = (a + b) + ((v * v) * (T)3) * (b * (T)0.044715);            \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_GELU)
