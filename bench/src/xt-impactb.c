/* xt-impactb: latency probe that measures how other traffic impacts a light workload.
 *
 * Method: M. Casas and G. Bronevetsky, "Active Measurement of the Impact of Network Switch
 * Utilization on Application Performance", IPDPS 2014, section 3 "ImpactB": pairs of ranks
 * (0<->1, 2<->3, ...) exchange small messages (1 KiB) at a low, fixed rate (every 100 ms),
 * so the probe itself adds almost no load; each exchange gives one half round-trip sample.
 * The distribution of samples (mean, variance) feeds the paper's queueing model, so the
 * variance is reported too. Each leader (even rank) schedules exchanges on a fixed grid
 * (clock_nanosleep to t0 + k*interval); one warm-up exchange per pair is not recorded.
 */
#include "xt_common.h"

#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERNEL "xt-impactb"
#define TAG_DATA 1
#define TAG_STOP 2

static void usage(void)
{
    printf("usage: mpirun -np N xt-impactb [options]    (N even)\n"
           "Pairs of ranks (0<->1, 2<->3, ...) ping-pong small messages at a fixed interval;\n"
           "reports half round-trip times in microseconds.\n"
           "  --msg-size SIZE  bytes per message (default 1KiB)\n"
           "  --interval MS    milliseconds between exchanges (default 100)\n"
           "  --count N        exchanges per pair (default 100 unless --duration is given)\n"
           "  --duration S     run for S seconds instead of --count\n"
           "  --no-samples     do not emit per-exchange sample records\n"
           "  --table          human-readable table on stderr\n"
           "  --help           this text\n"
           "SIGTERM/SIGINT/SIGUSR1 stop the run early and report what was measured.\n");
}

static void emit_stat(const char *metric, const char *unit, const char *stat, double value,
                      long long n, int pairs, size_t msg, double interval_ms, double var)
{
    xt_json *j = xt_json_begin(KERNEL, "result");
    xt_json_str(j, "metric", metric);
    xt_json_num(j, "value", value);
    xt_json_str(j, "unit", unit);
    xt_json_str(j, "stat", stat);
    xt_json_int(j, "samples", n);
    xt_json_int(j, "pairs", pairs);
    xt_json_int(j, "msg_size", (long long)msg);
    xt_json_num(j, "interval_ms", interval_ms);
    xt_json_num(j, "variance_us2", var);
    xt_json_emit(j);
}

int main(int argc, char **argv)
{
    xt_set_prog(KERNEL);
    size_t msg = 1024;
    double interval_ms = 100, duration = 0;
    long long count = 0;
    int table = 0, samples = 1;
    static const struct option opts[] = {
        {"msg-size", required_argument, 0, 'm'}, {"interval", required_argument, 0, 'i'},
        {"count", required_argument, 0, 'c'},    {"duration", required_argument, 0, 'd'},
        {"no-samples", no_argument, 0, 'S'},     {"table", no_argument, 0, 'T'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0},
    };
    opterr = 0;
    xt_check_args(argc, argv, opts); /* unknown options, flags with values, missing values */
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'm': msg = xt_parse_size("--msg-size", optarg); break;
        case 'i': interval_ms = xt_parse_double("--interval", optarg, 0, 3.6e6); break;
        case 'c': count = xt_parse_int("--count", optarg, 1, 100000000); break;
        case 'd': duration = xt_parse_double("--duration", optarg, 0.001, 1e7); break;
        case 'S': samples = 0; break;
        case 'T': table = 1; break;
        case 'h': usage(); return 0;
        default:
            xt_die_bad_option(argv);
        }
    }
    xt_no_operands(argc, argv);
    if (msg > (size_t)1 << 30)
        xt_die("--msg-size", "must be at most 1GiB, got %zu", msg);
    if (count && duration > 0)
        xt_die("--count", "give either --count or --duration, not both");
    if (!count && duration == 0)
        count = 100;

    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || size % 2) {
        if (rank == 0)
            fprintf(stderr, "%s: needs an even number of ranks (pairs), got %d\n", KERNEL, size);
        MPI_Finalize();
        return 2;
    }
    xt_catch_stop_signals();
    int leader = rank % 2 == 0, partner = leader ? rank + 1 : rank - 1;
    char *buf = calloc(msg ? msg : 1, 1);
    size_t cap = count ? (size_t)count : 1024;
    double *lat = malloc(cap * sizeof *lat);
    long long n = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    if (leader) {
        double interval = interval_ms * 1e-3;
        /* warm-up exchange (connection setup), not recorded */
        MPI_Send(buf, (int)msg, MPI_BYTE, partner, TAG_DATA, MPI_COMM_WORLD);
        MPI_Recv(buf, (int)msg, MPI_BYTE, partner, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double t0 = xt_now();
        for (long long k = 0;; k++) {
            double due = t0 + (double)k * interval;
            if (count ? k >= count : due >= t0 + duration || xt_now() >= t0 + duration)
                break;
            xt_sleep_until(due);
            if (xt_stop_requested())
                break;
            double t = xt_now();
            MPI_Send(buf, (int)msg, MPI_BYTE, partner, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)msg, MPI_BYTE, partner, TAG_DATA, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            if ((size_t)n == cap) {
                cap *= 2;
                double *nl = realloc(lat, cap * sizeof *lat);
                if (!nl)
                    MPI_Abort(MPI_COMM_WORLD, 1);
                lat = nl;
            }
            lat[n++] = (xt_now() - t) / 2 * 1e6;
        }
        MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_STOP, MPI_COMM_WORLD);
    } else {
        for (;;) { /* echo until the leader says stop (a signal here is left to the leader) */
            MPI_Status st;
            MPI_Recv(buf, (int)msg, MPI_BYTE, partner, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            if (st.MPI_TAG == TAG_STOP)
                break;
            MPI_Send(buf, (int)msg, MPI_BYTE, partner, TAG_DATA, MPI_COMM_WORLD);
        }
    }

    /* Collect every pair's samples on rank 0 (followers contribute none). */
    int mine = (int)n, *counts = NULL, *displs = NULL;
    double *all = NULL;
    if (rank == 0) {
        counts = calloc((size_t)size, sizeof *counts);
        displs = calloc((size_t)size, sizeof *displs);
    }
    MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    long long total = 0;
    if (rank == 0) {
        for (int r = 0; r < size; r++) {
            displs[r] = (int)total;
            total += counts[r];
        }
        all = malloc((size_t)(total ? total : 1) * sizeof *all);
    }
    MPI_Gatherv(lat, mine, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);

    if (rank == 0) {
        if (samples) {
            for (int r = 0; r < size; r += 2) {
                for (int k = 0; k < counts[r]; k++) {
                    xt_json *j = xt_json_begin(KERNEL, "sample");
                    xt_json_str(j, "metric", "half_rtt");
                    xt_json_num(j, "value", all[displs[r] + k]);
                    xt_json_str(j, "unit", "us");
                    xt_json_int(j, "iteration", k);
                    xt_json_int(j, "pair", r / 2);
                    xt_json_emit(j);
                }
            }
        }
        xt_stats s = xt_stats_of(all, (size_t)total);
        double var = s.stddev * s.stddev; /* population variance, us^2 */
        int pairs = size / 2;
        struct { const char *stat; double value; } out[] = {
            {"avg", s.avg}, {"median", s.median}, {"p99", s.p99},
            {"min", s.min}, {"max", s.max},       {"stddev", s.stddev},
        };
        for (size_t k = 0; k < sizeof out / sizeof out[0]; k++)
            emit_stat("half_rtt", "us", out[k].stat, out[k].value, total, pairs, msg, interval_ms,
                      var);
        emit_stat("half_rtt_variance", "us^2", "variance", var, total, pairs, msg, interval_ms,
                  var);
        if (table)
            fprintf(stderr,
                    "half RTT (us) over %lld samples, %d pairs, %zu B every %g ms:\n"
                    "  avg %.2f  median %.2f  p99 %.2f  min %.2f  max %.2f  stddev %.2f\n",
                    total, pairs, msg, interval_ms, s.avg, s.median, s.p99, s.min, s.max,
                    s.stddev);
        free(counts);
        free(displs);
        free(all);
    }
    free(lat);
    free(buf);
    MPI_Finalize();
    return 0;
}
