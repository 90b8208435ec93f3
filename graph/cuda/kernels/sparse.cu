/*
 * sparse.cu: the sparse embedding lookup of layers (gather of table rows by
 * id, and its gradient, a sum of the rows of each id into a zeroed table, in
 * an order the host sorts; the centered variants subtract the table's mean
 * row) and the sparse
 * softmax cross-entropy (labels < 0 are not scored). Ids and labels are Go
 * ints (64-bit, long long here), checked on the host before the launch.
 */
#include "common.h"

/* gather_rows_<T>: out[i] = w[ids[i / d]·d + i mod d], n = |ids|·d. */
#define GDATTN_GATHER(T, S)                                                   \
    GDATTN_KERNEL GDATTN_NAME(gather_rows, S)(long long n, const T *w,        \
                                              const long long *ids, int d,    \
                                              T *out) {                       \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            out[i] = w[ids[i / d] * d + i % d];                               \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_GATHER)

/*
 * The gathers' gradients, scatter_rows and scatter_cols, add the rows g[p]
 * of the output gradient (|ids| rows of d) into the table's rows (columns)
 * that their ids name, without atomics and in a fixed order. The host sorts
 * the positions by (id, position) every run (the ids are host data: the
 * executor's scatter order, op_sparse.go) and uploads the order ord, long
 * longs, nids = n / d the number of ids:
 *   ord[0 .. c)             the positions of the c ids that are >= 0, by id,
 *                           then by position;
 *   ord[nids]               m, the number of distinct ids (segments);
 *   ord[nids + 1 + s]       the start of segment s in ord[0 .. c), s <= m
 *                           (ord[nids + 1 + m] = c).
 * Work item i = s·d + j (s = i / d, j = i mod d) adds g[p·d + j] over the
 * positions p of segment s, in position order, to its id's element starting
 * from the element's value (zero, or the centered lookup's fill) in T, and
 * writes it once: the host op's additions (ops.ScatterOp, ops.ScatterColsOp:
 * ids in position order into a zeroed or filled table) in the host's order,
 * so the same bits on every device and every run; no two items write the
 * same element. Items s >= m do nothing (the launch has n = nids·d items,
 * the most segments there can be, so that it does not change with the ids).
 */
GDATTN_DEVICE long long gdattn_scatter_sum_at(long long i, long long n,
                                              int d, const long long *ord,
                                              long long *lo, long long *hi) {
    long long nids = n / d, s = i / d;
    if (s >= ord[nids]) return -1;
    *lo = ord[nids + 1 + s];
    *hi = ord[nids + 2 + s];
    return ord[*lo];
}

/* scatter_rows_<T>: buf[id·d + j] += Σ g[p·d + j] over the positions p of
 * id, in position order (buf zeroed or filled first). */
#define GDATTN_SCATTER(T, S)                                                  \
    GDATTN_KERNEL GDATTN_NAME(scatter_rows, S)(long long n,                   \
                                               const long long *ord,          \
                                               const long long *ids,          \
                                               const T *g, int d, T *buf) {   \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            long long lo, hi, k, j = i % d;                                   \
            long long p0 = gdattn_scatter_sum_at(i, n, d, ord, &lo, &hi);     \
            if (p0 < 0) break;                                                \
            T *out = buf + ids[p0] * d + j;                                   \
            T acc = *out;                                                     \
            for (k = lo; k < hi; k++) acc += g[ord[k] * d + j];               \
            *out = acc;                                                       \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_SCATTER)

/*
 * The encoder's label embeddings (ops.GatherColsOp): row r of out is column
 * ids[r] of the (d, v) matrix w (W_e), zero for the id −1 (the query), the
 * product of the labels' one-hot matrix by wᵀ without that matrix.
 *
 * gather_cols_<T>: out[i] = 0 + w[(i mod d)·v + ids[i / d]], 0 for the id −1,
 * n = |ids|·d.
 */
#define GDATTN_GATHER_COLS(T, S)                                              \
    GDATTN_KERNEL GDATTN_NAME(gather_cols, S)(long long n, const T *w,        \
                                              const long long *ids, int d,    \
                                              int v, T *out) {                \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            long long id = ids[i / d];                                        \
            out[i] = id < 0 ? (T)0 : (T)0 + w[(i % d) * v + id];              \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_GATHER_COLS)

/* scatter_cols_<T>: buf[j·v + id] += Σ g[p·d + j] over the positions p of
 * id, in position order, for ids >= 0 (buf zeroed first; the order ord
 * leaves the ids −1 out): the gradient of gather_cols w.r.t. w. */
#define GDATTN_SCATTER_COLS(T, S)                                             \
    GDATTN_KERNEL GDATTN_NAME(scatter_cols, S)(long long n,                   \
                                               const long long *ord,          \
                                               const long long *ids,          \
                                               const T *g, int d, int v,      \
                                               T *buf) {                      \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            long long lo, hi, k, j = i % d;                                   \
            long long p0 = gdattn_scatter_sum_at(i, n, d, ord, &lo, &hi);     \
            if (p0 < 0) break;                                                \
            T *out = buf + j * v + ids[p0];                                   \
            T acc = *out;                                                     \
            for (k = lo; k < hi; k++) acc += g[ord[k] * d + j];               \
            *out = acc;                                                       \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_SCATTER_COLS)

/*
 * Centered lookup (layers.SparseEmbedding.LookupCentered): the rows w[ids]
 * minus the mean row w̄ of the table, and the gradient's pass through the
 * mean, −(1/V) Σ_i g_i added to every row of the table's gradient.
 *
 * col_sum_part_<T>: item (k, j) of n = chunks·d (k = item / d, j = item mod
 * d) sums x[r, j] over the rows r ≡ k (mod chunks) of the row-major
 * (rows, d) matrix x, in double and in row order, into part[k·d + j];
 * neighbouring items read neighbouring columns.
 */
#define GDATTN_COL_SUM_PART(T, S)                                             \
    GDATTN_KERNEL GDATTN_NAME(col_sum_part, S)(long long n, long long rows,   \
                                               int d, int chunks, const T *x, \
                                               double *part) {                \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            long long k = i / d, j = i % d, r;                                \
            double s = 0;                                                     \
            for (r = k; r < rows; r += chunks) s += (double)x[r * d + j];     \
            part[i] = s;                                                      \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_COL_SUM_PART)

/*
 * col_mean_join: mean[j] = (Σ_k part[k·d + j]) / rows over the chunks
 * partial sums (n = d; double only, the element type does not appear).
 */
GDATTN_KERNEL col_mean_join(long long n, int chunks, long long rows,
                            const double *part, double *mean) {
    GDATTN_GRID_STRIDE(j, n) {
        double s = 0;
        int k;
        for (k = 0; k < chunks; k++) s += part[k * n + j];
        mean[j] = s / (double)rows;
    }
}

/*
 * col_mean_warp_<T>: col_sum_part and col_mean_join in one launch for
 * matrices of few rows, one warp per column j (n = d): lane l sums
 * x[r, j] over the rows r ≡ l (mod 32) in double and in row order, the
 * butterfly joins the lanes, and mean[j] = Σ / rows.
 */
#define GDATTN_COL_MEAN_WARP(T, S)                                            \
    GDATTN_WARP_KERNEL GDATTN_NAME(col_mean_warp, S)(                         \
        long long n, long long rows, const T *x, double *mean) {              \
        GDATTN_WARP_STRIDE(j, n) {                                            \
            GDATTN_LANE_VAR(double, a);                                       \
            GDATTN_FOR_LANES(lane) {                                          \
                double s = 0;                                                 \
                long long r;                                                  \
                for (r = lane; r < rows; r += 32) s += (double)x[r * n + j];  \
                GDATTN_AT(a, lane) = s;                                       \
            }                                                                 \
            GDATTN_WARP_ALLREDUCE(double, a, GDATTN_ADD);                     \
            GDATTN_WARP_ONCE { mean[j] = GDATTN_WARP_VALUE(a) / (double)rows; } \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_COL_MEAN_WARP)

/* gather_rows_centered_<T>: out[i] = w[ids[i / d]·d + j] − (T)mean[j], j = i mod d. */
#define GDATTN_GATHER_CENTERED(T, S)                                          \
    GDATTN_KERNEL GDATTN_NAME(gather_rows_centered, S)(                       \
        long long n, const T *w, const long long *ids, int d,                 \
        const double *mean, T *out) {                                         \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            long long j = i % d;                                              \
            out[i] = w[ids[i / d] * d + j] - (T)mean[j];                      \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_GATHER_CENTERED)

/*
 * fill_rows_scaled_<T>: buf[i] = (T)(−mean[j]·scale), j = i mod d: the
 * starting value of the centered scatter-add (mean = (1/|ids|) Σ_i g_i and
 * scale = |ids|/V, so every row starts at −(1/V) Σ_i g_i).
 */
#define GDATTN_FILL_ROWS_SCALED(T, S)                                         \
    GDATTN_KERNEL GDATTN_NAME(fill_rows_scaled, S)(long long n, int d,        \
                                                   const double *mean,        \
                                                   double scale, T *buf) {    \
        GDATTN_GRID_STRIDE(i, n) { buf[i] = (T)(-mean[i % d] * scale); }      \
    }
GDATTN_FLOATS(GDATTN_FILL_ROWS_SCALED)

/*
 * The cross-entropy's log-sum-exp, one warp per row (a warp kernel,
 * kernels/common.h): lane l takes the logits j ≡ l (mod 32) of the row, in
 * order, keeping a running maximum m and Σ exp(x − m) in double (rescaled
 * when the maximum grows); the butterfly then joins the lanes' pairs
 * (gdattn_lse_join, common.h). A lane with no logit, or only −Inf ones,
 * holds s = 0 and adds nothing.
 */

/*
 * xent_lse_warp_<T>: for the scored rows r (labels[r] >= 0), one warp per row
 * (n = rows), lse[r] = log Σ_j exp(x[r, j]), or with wantloss the row's
 * loss term log Σ_j exp(x[r, j]) − x[r, labels[r]]; other rows untouched.
 */
#define GDATTN_XENT_LSE_WARP(T, S)                                            \
    GDATTN_WARP_KERNEL GDATTN_NAME(xent_lse_warp, S)(                         \
        long long n, int c, const T *x, const long long *labels, double *lse, \
        int wantloss) {                                                       \
        GDATTN_WARP_STRIDE(r, n) {                                            \
            long long l = labels[r];                                          \
            if (l < 0) continue;                                              \
            const T *row = x + r * c;                                         \
            GDATTN_LANE_VAR(double, m);                                       \
            GDATTN_LANE_VAR(double, s);                                       \
            GDATTN_FOR_LANES(lane) {                                          \
                double mk = -INFINITY, sk = 0;                                \
                int j;                                                        \
                for (j = lane; j < c; j += 32)                                \
                    gdattn_lse_step(&mk, &sk, (double)row[j]);                \
                GDATTN_AT(m, lane) = mk;                                      \
                GDATTN_AT(s, lane) = sk;                                      \
            }                                                                 \
            GDATTN_WARP_ALLREDUCE2(double, m, s, gdattn_lse_join);            \
            GDATTN_WARP_ONCE {                                                \
                double v = GDATTN_WARP_VALUE(m) + log(GDATTN_WARP_VALUE(s));  \
                lse[r] = wantloss ? v - (double)row[l] : v;                   \
            }                                                                 \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_XENT_LSE_WARP)

/*
 * xent_loss_<T>: out[0] = (Σ_r nll[r]) / s over the s scored rows r
 * (labels[r] >= 0) in row order, 0 when none is scored: one work item
 * (n = 1), the host op's sum in the host op's order, with no atomics and
 * the count taken on the device (a captured step's replay has the labels
 * of its run).
 */
#define GDATTN_XENT_LOSS(T, S)                                                \
    GDATTN_KERNEL GDATTN_NAME(xent_loss, S)(long long n, long long rows,      \
                                            const long long *labels,          \
                                            const double *nll, T *out) {      \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            double total = 0;                                                 \
            long long r, s = 0;                                               \
            for (r = 0; r < rows; r++) {                                      \
                if (labels[r] < 0) continue;                                  \
                total += nll[r];                                              \
                s++;                                                          \
            }                                                                 \
            out[i] = s > 0 ? (T)(total / (double)s) : (T)0;                   \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_XENT_LOSS)

/*
 * xent_grad_<T>: dx = (softmax(x) − onehot(label))·g·inv for scored rows,
 * 0 for the others; one item per element (n = rows·c), g = *gp, inv = *invp
 * (1 / the number of scored rows, uploaded by the host every run).
 */
#define GDATTN_XENT_GRAD(T, S)                                                \
    GDATTN_KERNEL GDATTN_NAME(xent_grad, S)(long long n, int c, const T *x,   \
                                            const long long *labels,          \
                                            const double *lse, const T *gp,   \
                                            const double *invp, T *dx) {      \
        GDATTN_GRID_STRIDE(i, n) {                                            \
            long long r = i / c, j = i % c, l = labels[r];                    \
            if (l < 0) { dx[i] = 0; continue; }                               \
            double scale = (double)*gp * *invp;                               \
            T v = (T)(exp((double)x[i] - lse[r]) * scale);                    \
            if (j == l) v -= (T)scale;                                        \
            dx[i] = v;                                                        \
        }                                                                     \
    }
GDATTN_FLOATS(GDATTN_XENT_GRAD)
