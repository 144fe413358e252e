/* plain_triad: the simplest compiler-built STREAM Triad loop, as a baseline for xt-stream.
 * Same rules (first-touch in parallel, first iteration excluded, 24 bytes per element,
 * 1 MB/s = 10^6 B/s). Usage: plain_triad ELEMENTS NTIMES  (threads from OMP_NUM_THREADS).
 * Prints one JSON line: {"best_mbs": ..., "elements": ..., "threads": ...}. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: plain_triad ELEMENTS NTIMES\n");
        return 2;
    }
    long n = atol(argv[1]), ntimes = atol(argv[2]);
    if (n < 1 || ntimes < 2) {
        fprintf(stderr, "plain_triad: ELEMENTS >= 1 and NTIMES >= 2\n");
        return 2;
    }
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    if (!a || !b || !c)
        return 1;
#pragma omp parallel for
    for (long j = 0; j < n; j++) {
        a[j] = 0;
        b[j] = 2;
        c[j] = 1;
    }
    double best = 1e30;
    for (long k = 0; k < ntimes; k++) {
        double t = omp_get_wtime();
#pragma omp parallel for
        for (long j = 0; j < n; j++)
            a[j] = b[j] + 3.0 * c[j];
        t = omp_get_wtime() - t;
        if (k > 0 && t < best)
            best = t;
    }
    if (a[n / 2] != 5.0) {
        fprintf(stderr, "plain_triad: wrong result %g\n", a[n / 2]);
        return 1;
    }
    printf("{\"best_mbs\": %.3f, \"elements\": %ld, \"threads\": %d}\n", 24.0 * n / best / 1e6,
           n, omp_get_max_threads());
    return 0;
}
