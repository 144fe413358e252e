/* xt-stream: sustainable memory bandwidth, Copy/Scale/Add/Triad.
 *
 * Method: J. D. McCalpin, "Memory Bandwidth and Machine Balance in Current High Performance
 * Computers", IEEE TCCA Newsletter, Dec 1995, and the STREAM benchmark's run rules
 * (https://www.cs.virginia.edu/stream/ref.html): each array at least 4x the total last-level
 * cache; every kernel timed separately; the first iteration is excluded; the best rate counts
 * only the bytes the kernel names (Copy/Scale 2 x 8 B, Add/Triad 3 x 8 B per element, no
 * write-allocate traffic); 1 MB/s = 10^6 bytes/s; results validated against the analytically
 * expected array values. Written from the rules, not from upstream stream.c.
 *
 * --rounds K repeats the measurement K times in one process, each round a STREAM run of its own:
 * K samples of one job without K start-ups. --threads 2,1 measures each thread count in turn in
 * every round (the order reversed every other round: 2 1, 1 2, ...), so that thread counts are
 * compared seconds apart; the first count first-touches the arrays (give the largest first).
 */
#define _GNU_SOURCE /* sysconf(_SC_LEVEL3_CACHE_SIZE) */
#include "xt_common.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define KERNEL "xt-stream"
#define MAX_THREAD_COUNTS 16
#define SCALAR 3.0
#define NKERNELS 4
/* Values grow 15x per iteration; re-initialise (outside the timed region) before overflow. */
#define RESET_ABOVE 1e200

static const char *names[NKERNELS] = {"copy", "scale", "add", "triad"};
static const double words[NKERNELS] = {2, 2, 3, 3}; /* arrays touched per element */

static void usage(void)
{
    printf("usage: xt-stream [options]\n"
           "STREAM Copy/Scale/Add/Triad memory bandwidth (OpenMP), JSON lines on stdout.\n"
           "  --size N        elements per array (plain number), or bytes per array with a\n"
           "                  binary suffix (e.g. 128M = 128 MiB = 16777216 elements);\n"
           "                  default: 4x the total last-level cache, the 3 arrays at most a\n"
           "                  quarter of the memory\n"
           "  --ntimes N      iterations, first excluded from statistics (default 10, >= 2)\n"
           "  --duration S    keep iterating for S seconds instead (at least --ntimes)\n"
           "  --threads LIST  OpenMP threads, or a comma list measured in turn every round\n"
           "                  (records carry \"threads\"; default: OMP_NUM_THREADS / all cores)\n"
           "  --no-samples    do not emit per-iteration sample records\n"
           "  --rounds K      measure K times over (each round as one run: arrays re-initialised,\n"
           "                  its first iteration excluded); records carry \"round\" (default 1)\n"
           "  --table         human-readable table on stderr\n"
           "  --help          this text\n"
           "Exit status: 0 ok, 1 validation failed, 2 bad arguments.\n");
}

/* Total last-level cache in bytes: sysfs (sum over distinct LLC instances), then sysconf,
 * then 32 MiB. Returns the source in *how. */
static size_t llc_bytes(const char **how)
{
    size_t total = 0;
    char seen[64][64];
    int nseen = 0;
    for (int cpu = 0; cpu < 4096; cpu++) {
        char path[160], buf[64];
        int best_level = -1;
        size_t best_size = 0;
        char best_shared[64] = "";
        int cpu_exists = 0;
        for (int idx = 0; idx < 16; idx++) {
            snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/", cpu, idx);
            char f[200];
            int level = 0;
            unsigned long kb = 0;
            snprintf(f, sizeof f, "%slevel", path);
            FILE *fp = fopen(f, "r");
            if (!fp)
                break;
            cpu_exists = 1;
            if (fscanf(fp, "%d", &level) != 1)
                level = 0;
            fclose(fp);
            snprintf(f, sizeof f, "%stype", path);
            if ((fp = fopen(f, "r"))) {
                if (!fgets(buf, sizeof buf, fp) || strncmp(buf, "Instruction", 11) == 0)
                    level = 0;
                fclose(fp);
            }
            snprintf(f, sizeof f, "%ssize", path);
            if ((fp = fopen(f, "r"))) {
                if (fscanf(fp, "%luK", &kb) != 1)
                    kb = 0;
                fclose(fp);
            }
            if (level > best_level && kb > 0) {
                best_level = level;
                best_size = kb * 1024;
                snprintf(f, sizeof f, "%sshared_cpu_list", path);
                best_shared[0] = '\0';
                if ((fp = fopen(f, "r"))) {
                    if (!fgets(best_shared, sizeof best_shared, fp))
                        best_shared[0] = '\0';
                    fclose(fp);
                }
            }
        }
        if (!cpu_exists) {
            if (cpu > 0)
                break;
            continue;
        }
        int dup = 0;
        for (int i = 0; i < nseen; i++)
            dup |= strcmp(seen[i], best_shared) == 0;
        if (!dup && best_size && nseen < 64) {
            snprintf(seen[nseen++], sizeof seen[0], "%s", best_shared);
            total += best_size;
        }
    }
    if (total) {
        *how = "sysfs";
        return total;
    }
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l3 > 0) {
        *how = "sysconf";
        return (size_t)l3;
    }
    *how = "default";
    return (size_t)32 << 20;
}

/* The four STREAM kernels; restrict lets the compiler vectorise like static arrays. */
static void k_copy(double *restrict c, const double *restrict a, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < n; j++)
        c[j] = a[j];
}
static void k_scale(double *restrict b, const double *restrict c, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < n; j++)
        b[j] = SCALAR * c[j];
}
static void k_add(double *restrict c, const double *restrict a, const double *restrict b, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < n; j++)
        c[j] = a[j] + b[j];
}
static void k_triad(double *restrict a, const double *restrict b, const double *restrict c,
                    size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < n; j++)
        a[j] = b[j] + SCALAR * c[j];
}

/* First touch in parallel with the kernels' static schedule, so pages land near their thread. */
static void init_arrays(double *a, double *b, double *c, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < n; j++) {
        a[j] = 1.0;
        b[j] = 2.0;
        c[j] = 0.0;
    }
}

/* Mean relative error of one array against its expected (uniform) value. */
static double rel_err(const double *x, size_t n, double expect)
{
    double sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (size_t j = 0; j < n; j++)
        sum += fabs(x[j] - expect);
    return sum / (double)n / fabs(expect);
}

/* One STREAM measurement (``ntimes`` iterations, or ``duration`` seconds, the first excluded) on
 * freshly initialised arrays: validation, samples and results, tagged with ``round`` if >= 0.
 * Returns whether the arrays validated. */
static int measure(double *a, double *b, double *c, size_t n, long long ntimes, double duration, int nthreads,
                   int samples, int table, int round)
{
#ifdef _OPENMP
    omp_set_num_threads(nthreads);
#endif
    init_arrays(a, b, c, n);
    /* Expected values, advanced with the same operations as the arrays. */
    double ea = 1.0, eb = 2.0, ec = 0.0, worst_err = 0;
    int dirty = 0; /* arrays changed since the last (re-)initialisation */
    size_t cap = (size_t)ntimes, it = 0;
    double *times = malloc(cap * NKERNELS * sizeof *times);
    double t_start = xt_now();
    while (it < (size_t)ntimes || xt_now() - t_start < duration) {
        if (it == cap) {
            cap *= 2;
            double *nt = realloc(times, cap * NKERNELS * sizeof *times);
            if (!nt)
                xt_die("--duration", "out of memory for %zu iterations", it);
            times = nt;
        }
        double *t = &times[it * NKERNELS];
        t[0] = xt_now(); k_copy(c, a, n);     t[0] = xt_now() - t[0];
        t[1] = xt_now(); k_scale(b, c, n);    t[1] = xt_now() - t[1];
        t[2] = xt_now(); k_add(c, a, b, n);   t[2] = xt_now() - t[2];
        t[3] = xt_now(); k_triad(a, b, c, n); t[3] = xt_now() - t[3];
        ec = ea;
        eb = SCALAR * ec;
        ec = ea + eb;
        ea = eb + SCALAR * ec;
        it++;
        dirty = 1;
        if (fabs(ea) > RESET_ABOVE) { /* validate this stretch, then start over */
            double e = fmax(rel_err(a, n, ea), fmax(rel_err(b, n, eb), rel_err(c, n, ec)));
            worst_err = fmax(worst_err, e);
            init_arrays(a, b, c, n);
            ea = 1.0, eb = 2.0, ec = 0.0;
            dirty = 0;
        }
    }
    double elapsed = xt_now() - t_start;

    /* STREAM's check: mean absolute error relative to the expected value, epsilon 1e-13. */
    if (dirty)
        worst_err = fmax(worst_err, fmax(rel_err(a, n, ea), fmax(rel_err(b, n, eb), rel_err(c, n, ec))));
    const double epsilon = 1e-13;
    int passed = worst_err <= epsilon;
    char detail[200];
    snprintf(detail, sizeof detail,
             passed ? "arrays a, b, c match expected values (max mean rel. error %.3g <= %.0g)"
                    : "array values differ from expected (max mean rel. error %.3g > %.0g)",
             worst_err, epsilon);
    xt_json *j = xt_json_begin(KERNEL, "validation");
    if (round >= 0)
        xt_json_int(j, "round", round);
    xt_json_int(j, "threads", nthreads);
    xt_json_bool(j, "passed", passed);
    xt_json_str(j, "detail", detail);
    xt_json_num(j, "max_rel_error", worst_err);
    xt_json_num(j, "epsilon", epsilon);
    xt_json_emit(j);

    size_t counted = it - 1; /* first iteration excluded */
    double *v = malloc(counted * sizeof *v);
    if (table)
        fprintf(stderr, "%-8s %12s %12s %12s %12s  (MB/s, %zu iterations, %d threads, %zu elements)\n",
                "Function", "Best", "Avg", "Min", "Max", counted, nthreads, n);
    for (int k = 0; k < NKERNELS; k++) {
        double mb = words[k] * (double)(n * sizeof(double)) / 1e6;
        double tsum = 0;
        for (size_t i = 0; i < counted; i++) {
            double tk = times[(i + 1) * NKERNELS + k];
            v[i] = mb / tk;
            tsum += tk;
            if (samples) {
                j = xt_json_begin(KERNEL, "sample");
                if (round >= 0)
                    xt_json_int(j, "round", round);
                xt_json_int(j, "threads", nthreads);
                xt_json_str(j, "metric", names[k]);
                xt_json_num(j, "value", v[i]);
                xt_json_str(j, "unit", "MB/s");
                xt_json_int(j, "iteration", (long long)(i + 1));
                xt_json_num(j, "time_s", tk);
                xt_json_emit(j);
            }
        }
        xt_stats s = xt_stats_of(v, counted);
        /* avg as STREAM: bytes over the mean time (not the mean of the rates) */
        struct { const char *stat; double value; } out[] = {
            {"best", s.max}, {"avg", mb / (tsum / (double)counted)}, {"min", s.min},
            {"max", s.max},  {"median", s.median},
        };
        for (size_t r = 0; r < sizeof out / sizeof out[0]; r++) {
            j = xt_json_begin(KERNEL, "result");
            if (round >= 0)
                xt_json_int(j, "round", round);
            xt_json_str(j, "metric", names[k]);
            xt_json_num(j, "value", out[r].value);
            xt_json_str(j, "unit", "MB/s");
            xt_json_str(j, "stat", out[r].stat);
            xt_json_int(j, "array_elements", (long long)n);
            xt_json_int(j, "array_bytes", (long long)(n * sizeof(double)));
            xt_json_int(j, "threads", nthreads);
            xt_json_int(j, "ntimes", ntimes);
            xt_json_num(j, "duration_s", duration);
            xt_json_int(j, "iterations", (long long)counted);
            xt_json_num(j, "elapsed_s", elapsed);
            xt_json_emit(j);
        }
        if (table)
            fprintf(stderr, "%-8s %12.1f %12.1f %12.1f %12.1f\n", names[k], s.max,
                    mb / (tsum / (double)counted), s.min, s.max);
    }
    if (table)
        fprintf(stderr, "Validation: %s\n", detail);
    free(v);
    free(times);
    return passed;
}

int main(int argc, char **argv)
{
    xt_set_prog(KERNEL);
    size_t n = 0;
    long long ntimes = 10, threads[MAX_THREAD_COUNTS] = {0};
    int nthread_counts = 1;
    double duration = 0;
    int table = 0, samples = 1, rounds = 1;
    static const struct option opts[] = {
        {"size", required_argument, 0, 's'},    {"ntimes", required_argument, 0, 'n'},
        {"duration", required_argument, 0, 'd'}, {"threads", required_argument, 0, 't'},
        {"table", no_argument, 0, 'T'},         {"no-samples", no_argument, 0, 'S'},
        {"rounds", required_argument, 0, 'r'},  {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    opterr = 0;
    xt_check_args(argc, argv, opts); /* unknown options, flags with values, missing values */
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 's':
            if (strspn(optarg, "0123456789") == strlen(optarg) && *optarg)
                n = (size_t)xt_parse_int("--size", optarg, 1, 1LL << 40);
            else
                n = xt_parse_size("--size", optarg) / sizeof(double);
            if (n < 1)
                xt_die("--size", "must be at least one element (8 bytes), got '%s'", optarg);
            break;
        case 'n': ntimes = xt_parse_int("--ntimes", optarg, 2, 1000000); break;
        case 'd': duration = xt_parse_double("--duration", optarg, 0, 1e6); break;
        case 't':
            nthread_counts = xt_parse_int_list("--threads", optarg, threads, MAX_THREAD_COUNTS);
            for (int k = 0; k < nthread_counts; k++) {
                if (threads[k] < 1 || threads[k] > 4096)
                    xt_die("--threads", "each count must be between 1 and 4096, got %lld", threads[k]);
                for (int i = 0; i < k; i++)
                    if (threads[i] == threads[k])
                        xt_die("--threads", "%lld is listed twice", threads[k]);
            }
            break;
        case 'T': table = 1; break;
        case 'S': samples = 0; break;
        case 'r': rounds = (int)xt_parse_int("--rounds", optarg, 1, 1000); break;
        case 'h': usage(); return 0;
        default:
            xt_die_bad_option(argv);
        }
    }
    xt_no_operands(argc, argv);
    size_t mem = xt_phys_mem();
    if (n && mem && n > mem / 3 / sizeof(double)) /* would fail to allocate, or swap / OOM */
        xt_die("--size", "3 arrays of %zu bytes exceed this node's memory (%zu bytes)",
               n * sizeof(double), mem);

    const char *llc_how;
    size_t llc = llc_bytes(&llc_how);
    int capped = 0;
    if (!n) {
        n = 4 * llc / sizeof(double);
        /* Some VMs report a huge LLC (480 MiB seen): the three arrays stay within a quarter of
         * the memory, so the default never swaps or fails on a small node. */
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        size_t quarter = pages > 0 && page > 0 ? (size_t)pages * (size_t)page / 4 : 0;
        if (quarter && 3 * n * sizeof(double) > quarter) {
            n = quarter / 3 / sizeof(double);
            capped = 1;
        }
    }
    int counts[MAX_THREAD_COUNTS], most = 0; /* the thread counts measured, in order */
    for (int k = 0; k < nthread_counts; k++) {
#ifdef _OPENMP
        counts[k] = threads[k] ? (int)threads[k] : omp_get_max_threads();
#else
        if (threads[k] > 1)
            xt_die("--threads", "built without OpenMP: only 1 thread is possible");
        counts[k] = 1;
#endif
        most = counts[k] > most ? counts[k] : most;
    }

    size_t bytes = n * sizeof(double);
    double *a = NULL, *b = NULL, *c = NULL;
    /* 2 MiB alignment: arrays start on a (huge)page boundary, as static arrays would. */
    if (posix_memalign((void **)&a, 1 << 21, bytes) || posix_memalign((void **)&b, 1 << 21, bytes) ||
        posix_memalign((void **)&c, 1 << 21, bytes))
        xt_die("--size", "cannot allocate 3 arrays of %zu bytes", bytes);

    xt_json *j = xt_json_begin(KERNEL, "info");
    xt_json_int(j, "array_elements", (long long)n);
    xt_json_int(j, "array_bytes", (long long)bytes);
    xt_json_int(j, "total_bytes", (long long)(3 * bytes));
    xt_json_int(j, "llc_bytes", (long long)llc);
    xt_json_str(j, "llc_source", llc_how);
    xt_json_bool(j, "array_ge_4x_llc", bytes >= 4 * llc);
    xt_json_bool(j, "array_capped_by_memory", capped);
    xt_json_int(j, "threads", most);
    xt_json_int(j, "ntimes", ntimes);
    xt_json_num(j, "duration_s", duration);
    xt_json_emit(j);

    int passed = 1;
    for (int round = 0; round < rounds; round++)
        for (int k = 0; k < nthread_counts; k++) /* every other round in reverse: 2 1, 1 2, ... */
            passed &= measure(a, b, c, n, ntimes, duration, counts[round % 2 ? nthread_counts - 1 - k : k],
                              samples, table, rounds > 1 ? round : -1);
    free(a);
    free(b);
    free(c);
    return passed ? 0 : 1;
}
