// gemm-openblas: times OpenBLAS's cblas_sgemm / cblas_dgemm on one product,
// for scripts/gemm-vs-openblas.sh. It declares the two CBLAS functions itself,
// so it needs only the shared library (Debian: libopenblas0-pthread), not
// the headers.
//
//   gemm-openblas tA tB m n k reps float32|float64
//
// prints "GFLOP/cpu-s GFLOP/s": 2mnk·reps per second of process CPU time and
// of wall time, after one untimed warm-up product.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { RowMajor = 101, NoTrans = 111, Trans = 112 };
void cblas_sgemm(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *, int);
void cblas_dgemm(int, int, int, int, int, int, double, const double *, int, const double *, int, double, double *, int);

static double now(clockid_t id) {
	struct timespec t;
	clock_gettime(id, &t);
	return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
	if (argc != 8) {
		fprintf(stderr, "usage: gemm-openblas tA tB m n k reps float32|float64\n");
		return 2;
	}
	int tA = atoi(argv[1]), tB = atoi(argv[2]);
	long m = atol(argv[3]), n = atol(argv[4]), k = atol(argv[5]);
	int reps = atoi(argv[6]), d64 = strcmp(argv[7], "float64") == 0;
	size_t es = d64 ? 8 : 4;
	char *a = malloc(m * k * es), *b = malloc(k * n * es), *c = calloc(m * n, es);
	for (long i = 0; i < m * k; i++) {
		if (d64) ((double *)a)[i] = (i % 7) * 0.1; else ((float *)a)[i] = (i % 7) * 0.1f;
	}
	for (long i = 0; i < k * n; i++) {
		if (d64) ((double *)b)[i] = (i % 5) * 0.1; else ((float *)b)[i] = (i % 5) * 0.1f;
	}
	int lda = tA ? m : k, ldb = tB ? k : n;
	int ta = tA ? Trans : NoTrans, tb = tB ? Trans : NoTrans;
	double c0 = 0, w0 = 0;
	for (int r = 0; r <= reps; r++) {
		if (r == 1) {
			c0 = now(CLOCK_PROCESS_CPUTIME_ID);
			w0 = now(CLOCK_MONOTONIC);
		}
		if (d64)
			cblas_dgemm(RowMajor, ta, tb, m, n, k, 1, (double *)a, lda, (double *)b, ldb, 0, (double *)c, n);
		else
			cblas_sgemm(RowMajor, ta, tb, m, n, k, 1, (float *)a, lda, (float *)b, ldb, 0, (float *)c, n);
	}
	double cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0, wall = now(CLOCK_MONOTONIC) - w0;
	double flops = 2.0 * m * n * k * reps;
	printf("%.2f %.2f\n", flops / cpu / 1e9, flops / wall / 1e9);
	return 0;
}
