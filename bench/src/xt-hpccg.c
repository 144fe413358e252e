/* xt-hpccg: HPCCG's method (not HPCCG): an unpreconditioned conjugate gradient solve of the
 * problem the Mantevo HPCCG 1.0 mini-app publishes, written for crosstalk where HPCCG itself is
 * not installed (it comes from Spack or an image on real clusters).
 *
 * Problem (M. A. Heroux et al., "Improving Performance via Mini-applications", SAND2009-5574,
 * Sandia National Laboratories, 2009; HPCCG 1.0): each rank owns an nx x ny x nz brick of a
 * global nx x ny x (nz * ranks) grid, stacked in z. Row (i, j, k) of the sparse matrix holds the
 * 27-point stencil: 27 on the diagonal, -1 for every neighbour inside the grid. The right-hand side
 * is the row sums, so the exact solution is all ones; the start is all zeros. The matrix is stored
 * (27 values and column indices per row), so a matrix-vector product streams it from memory as
 * HPCCG's does. Before each product the ranks exchange the boundary xy-plane of the direction
 * vector with the rank below and above (HPCCG's halo exchange). CG runs as HPCCG's loop does: up to
 * --max-iter - 1 iterations, or until the residual norm drops below --tolerance (HPCCG: 150 and 0).
 *
 * Reported as HPCCG reports them: iterations, final residual, time and MFLOPS per phase (total,
 * ddot, waxpby, sparsemv: max over ranks, flops summed), the DDOT MPI_Allreduce time (min, max,
 * avg over ranks) and the sparsemv boundary-exchange time. Flops counted: 2n per ddot and waxpby,
 * 2 per stored nonzero per sparsemv. Validation: the true residual ||b - Ax|| recomputed at the end
 * agrees with the recurrence's and, after a converged solve, is below 1e-6 ||b||.
 *
 * --rounds K solves the same system K times from the same start in one run (each round's results and
 * validation carry "round"): K samples of one job, without K start-ups and matrix builds.
 */
#include "xt_common.h"

#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERNEL "xt-hpccg"
#define STENCIL 27

typedef struct {
    int nx, ny, nz, rank, size;
    long long nrow, plane;  /* local rows; one xy-plane (the halo size) */
    int *nnz;               /* stored entries per row */
    int *col;               /* STENCIL per row, indices into an extended vector */
    double *val;            /* STENCIL per row */
} matrix;

typedef struct {
    double total, ddot, waxpby, sparsemv, allreduce, exchange;
    double flops_ddot, flops_waxpby, flops_sparsemv;
} timers;

static void usage(void)
{
    printf("usage: mpirun -np N xt-hpccg [options]\n"
           "HPCCG's method: unpreconditioned CG on a 27-point stencil, an nx x ny x nz brick per rank\n"
           "stacked in z, boundary planes exchanged with the neighbouring ranks before each product.\n"
           "  --nx N                  brick per rank in x (default 40)\n"
           "  --ny N                  brick per rank in y (default 40)\n"
           "  --nz N                  brick per rank in z, the stacked direction (default 40)\n"
           "  --max-iter N            HPCCG's limit: at most N - 1 iterations (default 150)\n"
           "  --tolerance X           stop once the residual norm is below X (default 0, as HPCCG)\n"
           "  --rounds K              solve K times from the start; records carry \"round\" (default 1)\n"
           "  --table                 human-readable summary on stderr\n"
           "  --help                  this text\n");
}

/* Extended vectors hold the plane below, the local brick, then the plane above. */
static long long ext_index(const matrix *A, int i, int j, int k_local)
{
    return (long long)(k_local + 1) * A->plane + (long long)j * A->nx + i;
}

static void build(matrix *A, double *b)
{
    long long nz_global = (long long)A->nz * A->size, k0 = (long long)A->nz * A->rank;
    for (int k = 0; k < A->nz; k++)
        for (int j = 0; j < A->ny; j++)
            for (int i = 0; i < A->nx; i++) {
                long long row = ((long long)k * A->ny + j) * A->nx + i, e = row * STENCIL;
                int n = 0;
                for (int dk = -1; dk <= 1; dk++)
                    for (int dj = -1; dj <= 1; dj++)
                        for (int di = -1; di <= 1; di++) {
                            long long kg = k0 + k + dk;
                            if (i + di < 0 || i + di >= A->nx || j + dj < 0 || j + dj >= A->ny || kg < 0 ||
                                kg >= nz_global)
                                continue;
                            A->col[e + n] = (int)ext_index(A, i + di, j + dj, k + dk);
                            A->val[e + n] = (di || dj || dk) ? -1.0 : 27.0;
                            n++;
                        }
                A->nnz[row] = n;
                b[row] = 27.0 - (n - 1); /* row sum: A * ones = b */
            }
}

static double ddot(const double *x, const double *y, long long n, timers *t)
{
    double t0 = xt_now(), local = 0, global;
#pragma omp parallel for reduction(+ : local)
    for (long long i = 0; i < n; i++)
        local += x[i] * y[i];
    double t1 = xt_now();
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double t2 = xt_now();
    t->allreduce += t2 - t1;
    t->ddot += t2 - t0;
    t->flops_ddot += 2.0 * n;
    return global;
}

/* w = alpha x + beta y */
static void waxpby(double alpha, const double *x, double beta, const double *y, double *w, long long n, timers *t)
{
    double t0 = xt_now();
#pragma omp parallel for
    for (long long i = 0; i < n; i++)
        w[i] = alpha * x[i] + beta * y[i];
    t->waxpby += xt_now() - t0;
    t->flops_waxpby += 2.0 * n;
}

/* The halo planes of the extended vector p from the ranks below and above. */
static void exchange(const matrix *A, double *p)
{
    MPI_Request req[4];
    int n = 0, count = (int)A->plane;
    if (A->rank > 0) {
        MPI_Irecv(p, count, MPI_DOUBLE, A->rank - 1, 1, MPI_COMM_WORLD, &req[n++]);
        MPI_Isend(p + A->plane, count, MPI_DOUBLE, A->rank - 1, 2, MPI_COMM_WORLD, &req[n++]);
    }
    if (A->rank < A->size - 1) {
        MPI_Irecv(p + A->plane + A->nrow, count, MPI_DOUBLE, A->rank + 1, 2, MPI_COMM_WORLD, &req[n++]);
        MPI_Isend(p + A->nrow, count, MPI_DOUBLE, A->rank + 1, 1, MPI_COMM_WORLD, &req[n++]);
    }
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
}

/* y = A p, p extended (its halo is exchanged first) */
static void sparsemv(const matrix *A, double *p, double *y, timers *t)
{
    double t0 = xt_now();
    exchange(A, p);
    double t1 = xt_now();
    double stored = 0;
#pragma omp parallel for reduction(+ : stored)
    for (long long row = 0; row < A->nrow; row++) {
        const int *c = A->col + row * STENCIL;
        const double *v = A->val + row * STENCIL;
        double sum = 0;
        for (int e = 0; e < A->nnz[row]; e++)
            sum += v[e] * p[c[e]];
        y[row] = sum;
        stored += A->nnz[row];
    }
    double t2 = xt_now();
    t->exchange += t1 - t0;
    t->sparsemv += t2 - t0;
    t->flops_sparsemv += 2.0 * stored;
}

/* The round being solved, carried by its records when the run has several (-1: one round). */
static int g_round = -1;

static void emit(const char *metric, const char *unit, const char *stat, double value, const matrix *A)
{
    xt_json *j = xt_json_begin(KERNEL, "result");
    if (g_round >= 0)
        xt_json_int(j, "round", g_round);
    xt_json_str(j, "metric", metric);
    xt_json_num(j, "value", value);
    xt_json_str(j, "unit", unit);
    xt_json_str(j, "stat", stat);
    xt_json_int(j, "nx", A->nx);
    xt_json_int(j, "ny", A->ny);
    xt_json_int(j, "nz", A->nz);
    xt_json_int(j, "ranks", A->size);
    xt_json_str(j, "method", "HPCCG 1.0's problem and method, not HPCCG");
    xt_json_emit(j);
}

static double max_of(double v)
{
    double out;
    MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out;
}

static double sum_of(double v)
{
    double out;
    MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return out;
}

static void report(const matrix *A, const timers *t, int iterations, double normr, double true_res, double normb,
                   int table)
{
    const char *phase[] = {"total", "ddot", "waxpby", "sparsemv"};
    double time[] = {max_of(t->total), max_of(t->ddot), max_of(t->waxpby), max_of(t->sparsemv)};
    double flops[] = {0, sum_of(t->flops_ddot), sum_of(t->flops_waxpby), sum_of(t->flops_sparsemv)};
    flops[0] = flops[1] + flops[2] + flops[3];
    double ar_min, ar_max, ar_sum, exch = max_of(t->exchange);
    MPI_Allreduce(&t->allreduce, &ar_min, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&t->allreduce, &ar_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&t->allreduce, &ar_sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (A->rank != 0)
        return;
    emit("iterations", "count", "count", iterations, A);
    emit("final_residual", "", "final", normr, A);
    for (int p = 0; p < 4; p++) {
        emit("time", "s", phase[p], time[p], A);
        emit("flops", "flop", phase[p], flops[p], A);
        emit("mflops", "MFLOP/s", phase[p], time[p] > 0 ? flops[p] / time[p] / 1e6 : 0, A);
    }
    emit("ddot_allreduce_time", "s", "min", ar_min, A);
    emit("ddot_allreduce_time", "s", "max", ar_max, A);
    emit("ddot_allreduce_time", "s", "avg", ar_sum / A->size, A);
    emit("sparsemv_exchange_time", "s", "max", exch, A);
    emit("sparsemv_exchange_pct", "%", "value", time[3] > 0 ? 100 * exch / time[3] : 0, A);
    /* The recurrence's residual drifts from the true one by rounding: they agree within 1e-8 ||b||,
     * and a solve the recurrence calls converged (below 1e-6 ||b||) is converged in truth. */
    int converged = normr <= 1e-6 * normb;
    int passed = fabs(true_res - normr) <= 1e-8 * normb && (!converged || true_res <= 1e-6 * normb);
    char detail[200];
    snprintf(detail, sizeof detail, "true residual %.3g, recurrence %.3g, ||b|| %.3g after %d iterations%s",
             true_res, normr, normb, iterations, converged ? " (converged)" : " (not converged)");
    xt_json *j = xt_json_begin(KERNEL, "validation");
    if (g_round >= 0)
        xt_json_int(j, "round", g_round);
    xt_json_bool(j, "passed", passed);
    xt_json_str(j, "detail", detail);
    xt_json_num(j, "true_residual", true_res);
    xt_json_emit(j);
    if (table)
        fprintf(stderr, "%s: %d ranks x %dx%dx%d, %d iterations, residual %.3g; time %.4g s (ddot %.3g, waxpby %.3g, "
                        "sparsemv %.3g), %.1f MFLOP/s\n",
                KERNEL, A->size, A->nx, A->ny, A->nz, iterations, normr, time[0], time[1], time[2], time[3],
                time[0] > 0 ? flops[0] / time[0] / 1e6 : 0);
}

static void emit_residual(double normr, int iteration)
{
    xt_json *j = xt_json_begin(KERNEL, "sample");
    if (g_round >= 0)
        xt_json_int(j, "round", g_round);
    xt_json_str(j, "metric", "residual");
    xt_json_num(j, "value", normr);
    xt_json_str(j, "unit", "");
    xt_json_int(j, "iteration", iteration);
    xt_json_emit(j);
}

/* One CG solve of A x = b from x = 0 (the direction vector p zeroed too), reported; ``samples``:
 * also print the residual every tenth of the iterations. */
static void solve(matrix *A, const double *b, double *x, double *r, double *p, double *Ap, int max_iter,
                  double tolerance, int table, int samples)
{
    memset(x, 0, A->nrow * sizeof *x);
    memset(p, 0, (A->nrow + 2 * A->plane) * sizeof *p);
    double *pl = p + A->plane; /* the local part of the extended direction vector */
    timers t = {0};
    MPI_Barrier(MPI_COMM_WORLD);
    double start = xt_now();
    /* x0 = 0, so r0 = b - A x0 = b (HPCCG computes it; the product is of zeros) */
    memcpy(pl, x, A->nrow * sizeof *x);
    sparsemv(A, p, Ap, &t);
    waxpby(1.0, b, -1.0, Ap, r, A->nrow, &t);
    double rtrans = ddot(r, r, A->nrow, &t), normr = sqrt(rtrans), normb = sqrt(ddot(b, b, A->nrow, &t));
    int print_every = max_iter > 10 ? max_iter / 10 : 1, k;
    if (A->rank == 0 && samples)
        emit_residual(normr, 0);
    for (k = 1; k < max_iter && normr > tolerance; k++) { /* HPCCG: at most max_iter - 1 */
        if (k == 1) {
            waxpby(1.0, r, 0.0, r, pl, A->nrow, &t);
        } else {
            double old = rtrans;
            rtrans = ddot(r, r, A->nrow, &t);
            waxpby(1.0, r, rtrans / old, pl, pl, A->nrow, &t);
        }
        normr = sqrt(rtrans);
        if (A->rank == 0 && samples && (k % print_every == 0 || k == max_iter - 1))
            emit_residual(normr, k);
        sparsemv(A, p, Ap, &t);
        double alpha = rtrans / ddot(pl, Ap, A->nrow, &t);
        waxpby(1.0, x, alpha, pl, x, A->nrow, &t);
        waxpby(1.0, r, -alpha, Ap, r, A->nrow, &t);
    }
    t.total = xt_now() - start;
    int iterations = k - 1;

    /* the recurrence's residual after the last update and the true one, outside the timed solve */
    timers scratch = {0};
    double rec_res = sqrt(ddot(r, r, A->nrow, &scratch));
    memcpy(pl, x, A->nrow * sizeof *x);
    sparsemv(A, p, Ap, &scratch);
    waxpby(1.0, b, -1.0, Ap, Ap, A->nrow, &scratch);
    double true_res = sqrt(ddot(Ap, Ap, A->nrow, &scratch));
    report(A, &t, iterations, rec_res, true_res, normb, table);
}

int main(int argc, char **argv)
{
    xt_set_prog(KERNEL);
    int nx = 40, ny = 40, nz = 40, max_iter = 150, table = 0, rounds = 1;
    double tolerance = 0;
    static const struct option opts[] = {
        {"nx", required_argument, 0, 'x'},       {"ny", required_argument, 0, 'y'},
        {"nz", required_argument, 0, 'z'},       {"max-iter", required_argument, 0, 'i'},
        {"tolerance", required_argument, 0, 't'}, {"table", no_argument, 0, 'T'},
        {"rounds", required_argument, 0, 'r'},   {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    opterr = 0;
    xt_check_args(argc, argv, opts);
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'x': nx = (int)xt_parse_int("--nx", optarg, 1, 1000); break;
        case 'y': ny = (int)xt_parse_int("--ny", optarg, 1, 1000); break;
        case 'z': nz = (int)xt_parse_int("--nz", optarg, 1, 1000); break;
        case 'i': max_iter = (int)xt_parse_int("--max-iter", optarg, 2, 1000000); break;
        case 't': tolerance = xt_parse_double("--tolerance", optarg, 0, 1e300); break;
        case 'T': table = 1; break;
        case 'r': rounds = (int)xt_parse_int("--rounds", optarg, 1, 1000); break;
        case 'h': usage(); return 0;
        default: xt_die_bad_option(argv);
        }
    }
    xt_no_operands(argc, argv);
    if ((long long)nx * ny * nz * STENCIL > (long long)1 << 31)
        xt_die("--nx", "the brick %dx%dx%d has too many stored entries for one rank", nx, ny, nz);

    MPI_Init(&argc, &argv);
    matrix A = {.nx = nx, .ny = ny, .nz = nz};
    MPI_Comm_rank(MPI_COMM_WORLD, &A.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &A.size);
    A.plane = (long long)nx * ny;
    A.nrow = A.plane * nz;
    long long ext = A.nrow + 2 * A.plane;
    A.nnz = malloc(A.nrow * sizeof *A.nnz);
    A.col = malloc(A.nrow * STENCIL * sizeof *A.col);
    A.val = malloc(A.nrow * STENCIL * sizeof *A.val);
    double *b = malloc(A.nrow * sizeof *b), *x = calloc(A.nrow, sizeof *x), *r = malloc(A.nrow * sizeof *r);
    double *p = calloc(ext, sizeof *p), *Ap = malloc(A.nrow * sizeof *Ap);
    if (!A.nnz || !A.col || !A.val || !b || !x || !r || !p || !Ap) {
        fprintf(stderr, "%s: out of memory for a %dx%dx%d brick\n", KERNEL, nx, ny, nz);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    build(&A, b);
    for (int round = 0; round < rounds; round++) {
        g_round = rounds > 1 ? round : -1;
        solve(&A, b, x, r, p, Ap, max_iter, tolerance, table, round == 0);
    }

    free(A.nnz); free(A.col); free(A.val); free(b); free(x); free(r); free(p); free(Ap);
    MPI_Finalize();
    return 0;
}
