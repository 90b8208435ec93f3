/*
 * fakecuda.c: a CPU stand-in for libcuda.so.1 and cuBLAS, written against the
 * CUDA documentation, for TestGPUBackendOnFakeDriver (driver_fake_test.go).
 * The test compiles it with the emulator's kernels (emu_kernels.c) and a
 * generated table of kernel names into a shared library, installs it as
 * libcuda.so.1 and libcublas.so.13 in a temporary directory and re-runs the
 * -tags gdcuda GPU tests with LD_LIBRARY_PATH pointing there, so that the real
 * GPU backend (dlopen, symbol lookup, trampolines, kernelParams, the
 * row-major-to-column-major Gemm swap, error paths) runs without a GPU.
 *
 * It is strict where the backend could go wrong: launches must use 1-D grids
 * of at most 65535 blocks of 256 threads, enough threads for the work items
 * (a warp of 32 per item for a warp kernel) unless the grid is at its cap,
 * on the default stream or a stream
 * the fake created, with kernelParams (not extra), calls need the context current, the JIT options
 * must be the error-log pair, and cuBLAS computes column-major products from
 * the BLAS definition, independently of the emulator's gonum path.
 *
 * Streams run their work at once (in order, as one queue). Graph capture is
 * emulated: while a stream captures (thread-local mode only), launches,
 * memsets, device copies and cuBLAS products on it are recorded with their
 * arguments copied (as cuLaunchKernel copies kernelParams into a graph
 * node), host copies and synchronisation on it are errors that invalidate
 * the capture, and cuGraphLaunch replays the recording in order.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long CUdeviceptr;

#if defined(GDATTN_EMU_THREADS)
/* Threaded launches: FAKE_THREADS threads run each launch (see kernels/emu.h). */
#include "kernels/emu.h"
#define FAKE_THREADS 4
__thread gdattn_dim3 threadIdx;
gdattn_dim3 blockDim = {FAKE_THREADS, 1, 1};
int gdattn_emu_dispatch(int k, void **a);
/*
 * The FAKE_THREADS work threads are created once, at the first launch, and
 * serve every launch after it: a launch publishes its kernel and arguments
 * under pool_mu, bumps pool_gen and waits until every thread has run it.
 * Creating fresh threads for each launch made ThreadSanitizer track one new
 * thread per work item per launch (hundreds of thousands in the package's
 * tests), which exhausted its thread bookkeeping and made it die with
 * "failed to allocate" in long runs.
 */
static pthread_mutex_t launch_mu = PTHREAD_MUTEX_INITIALIZER; /* one launch at a time */
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_go = PTHREAD_COND_INITIALIZER;
static pthread_cond_t pool_done = PTHREAD_COND_INITIALIZER;
static unsigned long long pool_gen;
static int pool_started, pool_k, pool_pending, pool_rc;
static void **pool_params;
static void *fake_thread(void *arg) {
    unsigned long long seen = 0;
    threadIdx.x = (unsigned int)(uintptr_t)arg;
    pthread_mutex_lock(&pool_mu);
    for (;;) {
        while (pool_gen == seen) pthread_cond_wait(&pool_go, &pool_mu);
        seen = pool_gen;
        int k = pool_k;
        void **params = pool_params;
        pthread_mutex_unlock(&pool_mu);
        int rc = gdattn_emu_dispatch(k, params);
        pthread_mutex_lock(&pool_mu);
        pool_rc |= rc;
        if (--pool_pending == 0) pthread_cond_signal(&pool_done);
    }
    return NULL;
}
static int fake_run_locked(int k, void **params);
/*
 * Launches from several host threads (two executors on two goroutines) take
 * turns: the pool's state holds one launch at a time.
 */
static int fake_run(int k, void **params) {
    pthread_mutex_lock(&launch_mu);
    int rc = fake_run_locked(k, params);
    pthread_mutex_unlock(&launch_mu);
    return rc;
}
static int fake_run_locked(int k, void **params) {
    pthread_mutex_lock(&pool_mu);
    if (pool_started < FAKE_THREADS) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        for (int t = pool_started; t < FAKE_THREADS; t++) {
            pthread_t th;
            if (pthread_create(&th, &attr, fake_thread, (void *)(uintptr_t)t) != 0) {
                pthread_attr_destroy(&attr);
                pthread_mutex_unlock(&pool_mu);
                return -1; /* the next launch makes the rest */
            }
            pool_started++;
        }
        pthread_attr_destroy(&attr);
    }
    pool_k = k;
    pool_params = params;
    pool_rc = 0;
    pool_pending = FAKE_THREADS;
    pool_gen++;
    pthread_cond_broadcast(&pool_go);
    while (pool_pending > 0) pthread_cond_wait(&pool_done, &pool_mu);
    int rc = pool_rc;
    pthread_mutex_unlock(&pool_mu);
    return rc;
}
#else
int gdattn_emu_dispatch(int k, void **a);
static int fake_run(int k, void **params) { return gdattn_emu_dispatch(k, params); }
#endif

extern const char *fake_kernel_names[];
extern const unsigned char gdattn_emu_warp[]; /* emu_kernels.c */
extern const int fake_kernel_count;
extern const int fake_kernel_nparams[];

enum {
    OK = 0,
    ERR_INVALID_VALUE = 1,
    ERR_OUT_OF_MEMORY = 2,
    ERR_NOT_INITIALIZED = 3,
    ERR_INVALID_DEVICE = 101,
    ERR_INVALID_IMAGE = 200,
    ERR_INVALID_CONTEXT = 201,
    ERR_INVALID_HANDLE = 400,
    ERR_NOT_FOUND = 500,
    ERR_STREAM_CAPTURE_UNSUPPORTED = 900,
    ERR_STREAM_CAPTURE_INVALIDATED = 901,
};

/* A recorded operation of a capture. */
typedef struct fake_op {
    int kind; /* 0 launch, 1 memset, 2 copy, 3 gemm f32, 4 gemm f64 */
    int k, nargs;
    uint64_t vals[64];
    CUdeviceptr dst, src;
    size_t n;
    unsigned char byte;
    void *h;
    int ta, tb, m, nn, kk, lda, ldb, ldc, batch;
    long long sa, sb, sc;
    double alpha, beta;
    CUdeviceptr A, B, C;
    struct fake_op *next;
} fake_op;
typedef struct fake_stream {
    int magic, capturing, invalid;
    fake_op *head, *tail;
} fake_stream;
typedef struct fake_graph { int magic; fake_op *head; } fake_graph;
#define STREAM_MAGIC 0x5757
#define GRAPH_MAGIC 0x6767
#define EXEC_MAGIC 0x7878
static int valid_stream(void *s) { return s == NULL || ((fake_stream *)s)->magic == STREAM_MAGIC; }
static fake_stream *capturing(void *s) {
    fake_stream *st = (fake_stream *)s;
    return st != NULL && st->capturing ? st : NULL;
}
/* record appends a copy of op to the capture of st (0), or fails. */
static int record(fake_stream *st, const fake_op *op) {
    fake_op *c = (fake_op *)malloc(sizeof *c);
    if (c == NULL) return ERR_OUT_OF_MEMORY;
    *c = *op;
    c->next = NULL;
    if (st->tail) st->tail->next = c; else st->head = c;
    st->tail = c;
    return OK;
}
static void free_ops(fake_op *o) {
    while (o) { fake_op *n = o->next; free(o); o = n; }
}

/*
 * Every entry point holds fake_mu: the backend serialises its calls with a Go
 * mutex, which ThreadSanitizer cannot see, and calls come from whichever OS
 * thread runs the goroutine; the lock makes that order visible.
 */
static pthread_mutex_t fake_mu = PTHREAD_MUTEX_INITIALIZER;
static void fake_unlock(int *unused) {
    (void)unused;
    pthread_mutex_unlock(&fake_mu);
}
#define FAKE_LOCK()                                                           \
    pthread_mutex_lock(&fake_mu);                                             \
    int fake_guard_ __attribute__((cleanup(fake_unlock))) = 0;                \
    (void)fake_guard_

static int inited;
static int ctx_token, mod_token, blas_token;
static void *current;
static long long live_allocs;

#define NEED_CTX()                                                            \
    FAKE_LOCK();                                                              \
    do {                                                                      \
        if (!inited) return ERR_NOT_INITIALIZED;                              \
        if (current != &ctx_token) return ERR_INVALID_CONTEXT;                \
    } while (0)

int cuInit(unsigned int flags) {
    FAKE_LOCK();
    if (flags != 0) return ERR_INVALID_VALUE;
    inited = 1;
    return OK;
}
int cuDeviceGetCount(int *n) {
    FAKE_LOCK();
    if (!inited) return ERR_NOT_INITIALIZED;
    *n = 1;
    return OK;
}
int cuDeviceGet(int *d, int ordinal) {
    FAKE_LOCK();
    if (!inited) return ERR_NOT_INITIALIZED;
    if (ordinal != 0) return ERR_INVALID_DEVICE;
    *d = 0;
    return OK;
}
int cuDeviceGetName(char *name, int len, int d) {
    FAKE_LOCK();
    if (d != 0) return ERR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "Fake CPU device");
    return OK;
}
int cuDeviceTotalMem_v2(size_t *bytes, int d) {
    FAKE_LOCK();
    if (d != 0) return ERR_INVALID_DEVICE;
    *bytes = (size_t)1 << 30;
    return OK;
}
int cuDeviceGetAttribute(int *v, int attr, int d) {
    FAKE_LOCK();
    if (d != 0) return ERR_INVALID_DEVICE;
    switch (attr) {
    case 75: *v = 9; return OK; /* compute capability major */
    case 76: *v = 0; return OK; /* minor */
    case 16: *v = 4; return OK; /* multiprocessors */
    }
    return ERR_INVALID_VALUE;
}
int cuDevicePrimaryCtxRetain(void **ctx, int d) {
    FAKE_LOCK();
    if (!inited) return ERR_NOT_INITIALIZED;
    if (d != 0) return ERR_INVALID_DEVICE;
    *ctx = &ctx_token;
    return OK;
}
int cuDevicePrimaryCtxRelease_v2(int d) {
    FAKE_LOCK();
    return d == 0 ? OK : ERR_INVALID_DEVICE;
}
int cuCtxSetCurrent(void *ctx) {
    FAKE_LOCK();
    if (ctx != &ctx_token) return ERR_INVALID_CONTEXT;
    current = ctx;
    return OK;
}
int cuCtxSynchronize(void) {
    NEED_CTX();
    return OK;
}
int cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    NEED_CTX();
    if (n == 0) return ERR_INVALID_VALUE;
    void *m = malloc(n);
    if (m == NULL) return ERR_OUT_OF_MEMORY;
    memset(m, 0xFF, n); /* NaN in every float: unwritten memory shows */
    *p = (CUdeviceptr)(uintptr_t)m;
    live_allocs++;
    return OK;
}
int cuMemFree_v2(CUdeviceptr p) {
    NEED_CTX();
    free((void *)(uintptr_t)p);
    live_allocs--;
    return OK;
}
int cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
    NEED_CTX();
    memcpy((void *)(uintptr_t)d, s, n);
    return OK;
}
int cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
    NEED_CTX();
    memcpy(d, (const void *)(uintptr_t)s, n);
    return OK;
}
int cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
    NEED_CTX();
    memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
    return OK;
}
int cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
    NEED_CTX();
    memset((void *)(uintptr_t)d, v, n);
    return OK;
}
int cuModuleLoadDataEx(void **m, const void *image, unsigned int n, int *opts, void **vals) {
    NEED_CTX();
    const char *ptx = (const char *)image;
    if (strstr(ptx, ".entry") == NULL || strstr(ptx, ".target") == NULL) return ERR_INVALID_IMAGE;
    if (n != 2 || opts[0] != 5 || opts[1] != 6 || vals[0] == NULL || (uintptr_t)vals[1] == 0)
        return ERR_INVALID_VALUE;
    *m = &mod_token;
    return OK;
}
int cuModuleUnload(void *m) {
    NEED_CTX();
    return m == &mod_token ? OK : ERR_INVALID_HANDLE;
}
/*
 * Function handles point into fake_funcs: the backend keeps them in Go
 * variables of pointer type, so they must be real addresses (the Go runtime
 * rejects small integers in pointer slots when it copies a stack).
 */
static char fake_funcs[4096];
int cuModuleGetFunction(void **f, void *m, const char *name) {
    NEED_CTX();
    if (m != &mod_token) return ERR_INVALID_HANDLE;
    for (int i = 0; i < fake_kernel_count && i < (int)sizeof fake_funcs; i++) {
        if (strcmp(fake_kernel_names[i], name) == 0) {
            *f = &fake_funcs[i];
            return OK;
        }
    }
    return ERR_NOT_FOUND;
}
long long fake_launches;
int cuLaunchKernel(void *f, unsigned int gx, unsigned int gy, unsigned int gz,
                   unsigned int bx, unsigned int by, unsigned int bz,
                   unsigned int shmem, void *stream, void **params, void **extra) {
    NEED_CTX();
    if ((char *)f < fake_funcs || (char *)f >= fake_funcs + sizeof fake_funcs) return ERR_INVALID_HANDLE;
    int k = (int)((char *)f - fake_funcs);
    if (k >= fake_kernel_count) return ERR_INVALID_HANDLE;
    if (gx == 0 || gx > 65535 || gy != 1 || gz != 1 || bx != 256 || by != 1 || bz != 1 ||
        shmem != 0 || !valid_stream(stream) || params == NULL || extra != NULL)
        return ERR_INVALID_VALUE;
    /*
     * The grid covers the work items (n, every kernel's first parameter): a
     * thread each, or a warp of 32 threads each for a warp kernel, unless it
     * is at its cap (the grid-stride loop takes the rest).
     */
    long long items = *(long long *)params[0];
    long long per_block = gdattn_emu_warp[k] ? bx / 32 : bx;
    if ((long long)gx * per_block < items && gx < 65535) return ERR_INVALID_VALUE;
    fake_stream *cs = capturing(stream);
    if (cs) {
        fake_op op = {0};
        op.kind = 0;
        op.k = k;
        op.nargs = fake_kernel_nparams[k];
        if (op.nargs > 64) return ERR_INVALID_VALUE;
        for (int i = 0; i < op.nargs; i++) memcpy(&op.vals[i], params[i], 8);
        return record(cs, &op);
    }
    fake_launches++;
    return fake_run(k, params) == 0 ? OK : ERR_INVALID_HANDLE;
}
static int replay_launch(const fake_op *o) {
    void *a[64];
    uint64_t vals[64];
    memcpy(vals, o->vals, sizeof vals);
    for (int i = 0; i < o->nargs; i++) a[i] = &vals[i];
    fake_launches++;
    return fake_run(o->k, a) == 0 ? OK : ERR_INVALID_HANDLE;
}

/* Streams. */
int cuStreamCreate(void **s, unsigned int flags) {
    NEED_CTX();
    if (flags != 1) return ERR_INVALID_VALUE; /* the backend asks for CU_STREAM_NON_BLOCKING */
    fake_stream *st = (fake_stream *)calloc(1, sizeof *st);
    if (st == NULL) return ERR_OUT_OF_MEMORY;
    st->magic = STREAM_MAGIC;
    *s = st;
    return OK;
}
int cuStreamDestroy_v2(void *s) {
    NEED_CTX();
    fake_stream *st = (fake_stream *)s;
    if (st == NULL || st->magic != STREAM_MAGIC) return ERR_INVALID_HANDLE;
    if (st->capturing) return ERR_STREAM_CAPTURE_UNSUPPORTED;
    st->magic = 0;
    free(st);
    return OK;
}
int cuStreamSynchronize(void *s) {
    NEED_CTX();
    if (!valid_stream(s)) return ERR_INVALID_HANDLE;
    fake_stream *cs = capturing(s);
    if (cs) { cs->invalid = 1; return ERR_STREAM_CAPTURE_UNSUPPORTED; }
    return OK;
}
int cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *src, size_t n, void *s) {
    NEED_CTX();
    if (!valid_stream(s)) return ERR_INVALID_HANDLE;
    fake_stream *cs = capturing(s);
    if (cs) { cs->invalid = 1; return ERR_STREAM_CAPTURE_UNSUPPORTED; } /* pageable memory */
    memcpy((void *)(uintptr_t)d, src, n);
    return OK;
}
int cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr src, size_t n, void *s) {
    NEED_CTX();
    if (!valid_stream(s)) return ERR_INVALID_HANDLE;
    fake_stream *cs = capturing(s);
    if (cs) { cs->invalid = 1; return ERR_STREAM_CAPTURE_UNSUPPORTED; }
    memcpy(d, (const void *)(uintptr_t)src, n);
    return OK;
}
int cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr src, size_t n, void *s) {
    NEED_CTX();
    if (!valid_stream(s)) return ERR_INVALID_HANDLE;
    fake_stream *cs = capturing(s);
    if (cs) {
        fake_op op = {0};
        op.kind = 2; op.dst = d; op.src = src; op.n = n;
        return record(cs, &op);
    }
    memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)src, n);
    return OK;
}
int cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *s) {
    NEED_CTX();
    if (!valid_stream(s)) return ERR_INVALID_HANDLE;
    fake_stream *cs = capturing(s);
    if (cs) {
        fake_op op = {0};
        op.kind = 1; op.dst = d; op.n = n; op.byte = v;
        return record(cs, &op);
    }
    memset((void *)(uintptr_t)d, v, n);
    return OK;
}

/* Graph capture. */
int cuStreamBeginCapture_v2(void *s, int mode) {
    NEED_CTX();
    fake_stream *st = (fake_stream *)s;
    if (st == NULL) return ERR_STREAM_CAPTURE_UNSUPPORTED; /* not the legacy stream */
    if (st->magic != STREAM_MAGIC) return ERR_INVALID_HANDLE;
    if (mode != 1) return ERR_INVALID_VALUE; /* the backend captures thread-local */
    if (st->capturing) return ERR_INVALID_VALUE;
    st->capturing = 1;
    st->invalid = 0;
    st->head = st->tail = NULL;
    return OK;
}
int cuStreamEndCapture(void *s, void **graph) {
    NEED_CTX();
    fake_stream *st = (fake_stream *)s;
    if (st == NULL || st->magic != STREAM_MAGIC) return ERR_INVALID_HANDLE;
    if (!st->capturing) return ERR_INVALID_VALUE;
    st->capturing = 0;
    fake_op *ops = st->head;
    st->head = st->tail = NULL;
    *graph = NULL;
    if (st->invalid) {
        free_ops(ops);
        return ERR_STREAM_CAPTURE_INVALIDATED;
    }
    fake_graph *g = (fake_graph *)malloc(sizeof *g);
    if (g == NULL) { free_ops(ops); return ERR_OUT_OF_MEMORY; }
    g->magic = GRAPH_MAGIC;
    g->head = ops;
    *graph = g;
    return OK;
}
int cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
    NEED_CTX();
    fake_graph *g = (fake_graph *)graph;
    if (g == NULL || g->magic != GRAPH_MAGIC) return ERR_INVALID_HANDLE;
    if (flags != 0) return ERR_INVALID_VALUE;
    fake_graph *e = (fake_graph *)malloc(sizeof *e);
    if (e == NULL) return ERR_OUT_OF_MEMORY;
    e->magic = EXEC_MAGIC;
    e->head = NULL;
    fake_op **tail = &e->head; /* the executable graph is a copy: the graph may be destroyed */
    for (fake_op *o = g->head; o; o = o->next) {
        fake_op *c = (fake_op *)malloc(sizeof *c);
        if (c == NULL) { free_ops(e->head); free(e); return ERR_OUT_OF_MEMORY; }
        *c = *o;
        c->next = NULL;
        *tail = c;
        tail = &c->next;
    }
    *exec = e;
    return OK;
}
int cuGraphDestroy(void *graph) {
    NEED_CTX();
    fake_graph *g = (fake_graph *)graph;
    if (g == NULL || g->magic != GRAPH_MAGIC) return ERR_INVALID_HANDLE;
    free_ops(g->head);
    g->magic = 0;
    free(g);
    return OK;
}
int cuGraphExecDestroy(void *exec) {
    NEED_CTX();
    fake_graph *e = (fake_graph *)exec;
    if (e == NULL || e->magic != EXEC_MAGIC) return ERR_INVALID_HANDLE;
    free_ops(e->head);
    e->magic = 0;
    free(e);
    return OK;
}
long long fake_graph_launches;
static int fake_gemm_op(const fake_op *o) __attribute__((unused));
/* Built with -DFAKE_NO_GRAPHS, the fake lacks cuGraphLaunch, as a driver
 * older than the graph API would (TestGPUGraphCaptureUnsupported). */
#ifndef FAKE_NO_GRAPHS
int cuGraphLaunch(void *exec, void *s) {
    NEED_CTX();
    fake_graph *e = (fake_graph *)exec;
    if (e == NULL || e->magic != EXEC_MAGIC) return ERR_INVALID_HANDLE;
    if (!valid_stream(s) || capturing(s)) return ERR_INVALID_VALUE;
    fake_graph_launches++;
    for (const fake_op *o = e->head; o; o = o->next) {
        int r = OK;
        switch (o->kind) {
        case 0: r = replay_launch(o); break;
        case 1: memset((void *)(uintptr_t)o->dst, o->byte, o->n); break;
        case 2: memmove((void *)(uintptr_t)o->dst, (const void *)(uintptr_t)o->src, o->n); break;
        default: r = fake_gemm_op(o) == 0 ? OK : ERR_INVALID_VALUE; break;
        }
        if (r != OK) return r;
    }
    return OK;
}
#endif
int cuGetErrorString(int r, const char **s) {
    *s = r == ERR_INVALID_VALUE ? "invalid argument (fake driver)" : "fake driver error";
    return OK;
}
int cuGetErrorName(int r, const char **s) {
    switch (r) {
    case ERR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
    case ERR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
    case ERR_INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
    default: *s = "CUDA_ERROR_FAKE"; break;
    }
    return OK;
}

/* cuBLAS: column-major C = alpha·op(A)·op(B) + beta·C per batch. */
int cublasCreate_v2(void **h) {
    FAKE_LOCK();
    if (current != &ctx_token) return 1; /* CUBLAS_STATUS_NOT_INITIALIZED */
    *h = &blas_token;
    return 0;
}
int cublasDestroy_v2(void *h) {
    FAKE_LOCK();
    return h == &blas_token ? 0 : 1;
}
static void *blas_stream;
int cublasSetStream_v2(void *h, void *s) {
    FAKE_LOCK();
    if (h != &blas_token) return 1;
    if (!valid_stream(s)) return 7;
    blas_stream = s;
    return 0;
}

#define FAKE_GEMM(NAME, T, KIND)                                              \
    static int NAME##_run(int ta, int tb, int m, int n, int k, const T *alpha,\
             const T *A, int lda, long long sa, const T *B, int ldb,          \
             long long sb, const T *beta, T *C, int ldc, long long sc,        \
             int batch);                                                      \
    int NAME(void *h, int ta, int tb, int m, int n, int k, const T *alpha,    \
             const T *A, int lda, long long sa, const T *B, int ldb,          \
             long long sb, const T *beta, T *C, int ldc, long long sc,        \
             int batch) {                                                     \
        FAKE_LOCK();                                                          \
        if (h != &blas_token || current != &ctx_token) return 1;              \
        fake_stream *cs = capturing(blas_stream);                             \
        if (cs) {                                                             \
            fake_op op = {0};                                                 \
            op.kind = KIND; op.ta = ta; op.tb = tb; op.m = m; op.nn = n;      \
            op.kk = k; op.alpha = *alpha; op.beta = *beta;                    \
            op.A = (CUdeviceptr)(uintptr_t)A; op.lda = lda; op.sa = sa;       \
            op.B = (CUdeviceptr)(uintptr_t)B; op.ldb = ldb; op.sb = sb;       \
            op.C = (CUdeviceptr)(uintptr_t)C; op.ldc = ldc; op.sc = sc;       \
            op.batch = batch;                                                 \
            return record(cs, &op) == OK ? 0 : 3;                             \
        }                                                                     \
        return NAME##_run(ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb,     \
                          beta, C, ldc, sc, batch);                           \
    }                                                                         \
    static int NAME##_run(int ta, int tb, int m, int n, int k, const T *alpha,\
             const T *A, int lda, long long sa, const T *B, int ldb,          \
             long long sb, const T *beta, T *C, int ldc, long long sc,        \
             int batch) {                                                     \
        if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1)) return 7;           \
        if (m < 0 || n < 0 || k < 0 || batch < 0) return 7;                   \
        if (lda < (ta ? (k > 1 ? k : 1) : (m > 1 ? m : 1))) return 7;         \
        if (ldb < (tb ? (n > 1 ? n : 1) : (k > 1 ? k : 1))) return 7;         \
        if (ldc < (m > 1 ? m : 1)) return 7;                                  \
        for (int b = 0; b < batch; b++) {                                     \
            const T *a = A + b * sa, *bb = B + b * sb;                        \
            T *c = C + b * sc;                                                \
            for (int j = 0; j < n; j++) {                                     \
                for (int i = 0; i < m; i++) {                                 \
                    double s = 0;                                             \
                    for (int l = 0; l < k; l++) {                             \
                        double av = ta ? a[l + (long long)i * lda]            \
                                       : a[i + (long long)l * lda];           \
                        double bv = tb ? bb[j + (long long)l * ldb]           \
                                       : bb[l + (long long)j * ldb];          \
                        s += av * bv;                                         \
                    }                                                         \
                    T *cij = &c[i + (long long)j * ldc];                      \
                    *cij = (T)(*alpha * s + (*beta == 0 ? 0 : *beta * *cij)); \
                }                                                             \
            }                                                                 \
        }                                                                     \
        return 0;                                                             \
    }
FAKE_GEMM(cublasSgemmStridedBatched, float, 3)
FAKE_GEMM(cublasDgemmStridedBatched, double, 4)

/* fake_gemm_op replays a recorded product (cuGraphLaunch holds fake_mu). */
static int fake_gemm_op(const fake_op *o) {
    if (o->kind == 3) {
        float a = (float)o->alpha, b = (float)o->beta;
        return cublasSgemmStridedBatched_run(o->ta, o->tb, o->m, o->nn, o->kk, &a,
            (const float *)(uintptr_t)o->A, o->lda, o->sa, (const float *)(uintptr_t)o->B, o->ldb, o->sb,
            &b, (float *)(uintptr_t)o->C, o->ldc, o->sc, o->batch);
    }
    return cublasDgemmStridedBatched_run(o->ta, o->tb, o->m, o->nn, o->kk, &o->alpha,
        (const double *)(uintptr_t)o->A, o->lda, o->sa, (const double *)(uintptr_t)o->B, o->ldb, o->sb,
        &o->beta, (double *)(uintptr_t)o->C, o->ldc, o->sc, o->batch);
}
