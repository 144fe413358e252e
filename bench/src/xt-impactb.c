/* xt-impactb: latency probe that measures how other traffic impacts a light workload.
 *
 * Method: M. Casas and G. Bronevetsky, "Active Measurement of the Impact of Network Switch
 * Utilization on Application Performance", IPDPS 2014, section 3 "ImpactB": pairs of ranks
 * (0<->1, 2<->3, ...) exchange small messages (1 KiB) at a low, fixed rate (every 100 ms),
 * so the probe itself adds almost no load; each exchange gives one half round-trip sample.
 * The distribution of samples (mean, variance) feeds the paper's queueing model, so the
 * variance is reported too. Each leader (even rank) schedules exchanges on a fixed grid
 * (clock_nanosleep to t0 + k*interval); one warm-up exchange per pair is not recorded.
 *
 * --window W (W > 0) measures streaming bandwidth instead, as the bandwidth benchmark of
 * G. C. Narayanaswamy, "On the Interaction of High-Performance Network Protocol Stacks with
 * Multicore Architectures", MS thesis, Virginia Tech, 2008, section 3.2.1 (OSU osu_bw's method):
 * each exchange, the leader posts W non-blocking sends of the message and waits for them all; the
 * follower, whose W receives were posted beforehand, replies with one small message counting the
 * messages it received whole. Bandwidth = bytes received whole / the sender's time.
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
#define TAG_ACK 3

static void usage(void)
{
    printf("usage: mpirun -np N xt-impactb [options]    (N even)\n"
           "Pairs of ranks (0<->1, 2<->3, ...) ping-pong small messages at a fixed interval;\n"
           "reports half round-trip times in microseconds.\n"
           "  --msg-size SIZE  bytes per message (default 1KiB)\n"
           "  --interval MS    milliseconds between exchanges (default 100)\n"
           "  --count N        exchanges per pair (default 100 unless --duration is given)\n"
           "  --duration S     run for S seconds instead of --count\n"
           "  --window W       streaming bandwidth: W messages in flight per exchange, then one\n"
           "                   small reply (osu_bw); reports bandwidth in MB/s (default 0: ping-pong)\n"
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

/* Whether a received message is one whole data message of msg bytes. */
static int whole(const MPI_Status *st, size_t msg)
{
    int got = 0;
    MPI_Get_count(st, MPI_BYTE, &got);
    return st->MPI_TAG == TAG_DATA && (size_t)got == msg;
}

/* Streaming follower: post the window's receives (each into its own slot of rbuf: a buffer may not
 * take two receives at once), wait, reply with how many arrived whole; until TAG_STOP arrives
 * first in a window (the rest of that window's receives are cancelled). */
static void stream_follower(char *rbuf, size_t msg, int window, int partner)
{
    MPI_Request *req = malloc((size_t)window * sizeof *req);
    MPI_Status *st = malloc((size_t)window * sizeof *st);
    if (!req || !st)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (;;) {
        for (int w = 0; w < window; w++)
            MPI_Irecv(rbuf + (size_t)w * msg, (int)msg, MPI_BYTE, partner, MPI_ANY_TAG,
                      MPI_COMM_WORLD, &req[w]);
        MPI_Wait(&req[0], &st[0]);
        if (st[0].MPI_TAG == TAG_STOP) {
            for (int w = 1; w < window; w++) {
                MPI_Cancel(&req[w]);
                MPI_Wait(&req[w], MPI_STATUS_IGNORE);
            }
            break;
        }
        MPI_Waitall(window - 1, req + 1, st + 1);
        int got = 0;
        for (int w = 0; w < window; w++)
            got += whole(&st[w], msg);
        MPI_Send(&got, 1, MPI_INT, partner, TAG_ACK, MPI_COMM_WORLD);
    }
    free(st);
    free(req);
}

/* One streaming exchange from the leader: W sends, then the follower's count of whole messages. */
static int stream_window(const char *buf, size_t msg, int window, int partner, MPI_Request *req)
{
    int got = 0;
    for (int w = 0; w < window; w++)
        MPI_Isend(buf, (int)msg, MPI_BYTE, partner, TAG_DATA, MPI_COMM_WORLD, &req[w]);
    MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
    MPI_Recv(&got, 1, MPI_INT, partner, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return got;
}

/* Every pair leader's per-iteration values (gathered at rank 0) as "sample" records. */
static void emit_samples(const char *metric, const char *unit, const double *all, const int *counts,
                         const int *displs, int size)
{
    for (int r = 0; r < size; r += 2)
        for (int k = 0; k < counts[r]; k++) {
            xt_json *j = xt_json_begin(KERNEL, "sample");
            xt_json_str(j, "metric", metric);
            xt_json_num(j, "value", all[displs[r] + k]);
            xt_json_str(j, "unit", unit);
            xt_json_int(j, "iteration", k);
            xt_json_int(j, "pair", r / 2);
            xt_json_emit(j);
        }
}

static void emit_bw(const char *stat, double value, long long windows, int pairs, size_t msg,
                    int window, long long messages, double elapsed)
{
    xt_json *j = xt_json_begin(KERNEL, "result");
    xt_json_str(j, "metric", "bandwidth");
    xt_json_num(j, "value", value);
    xt_json_str(j, "unit", "MB/s");
    xt_json_str(j, "stat", stat);
    xt_json_int(j, "samples", windows);
    xt_json_int(j, "pairs", pairs);
    xt_json_int(j, "msg_size", (long long)msg);
    xt_json_int(j, "window", window);
    xt_json_int(j, "messages", messages);
    xt_json_num(j, "elapsed_s", elapsed);
    xt_json_emit(j);
}

int main(int argc, char **argv)
{
    xt_set_prog(KERNEL);
    size_t msg = 1024;
    double interval_ms = 100, duration = 0;
    long long count = 0;
    int table = 0, samples = 1, window = 0;
    static const struct option opts[] = {
        {"msg-size", required_argument, 0, 'm'}, {"interval", required_argument, 0, 'i'},
        {"count", required_argument, 0, 'c'},    {"duration", required_argument, 0, 'd'},
        {"no-samples", no_argument, 0, 'S'},     {"table", no_argument, 0, 'T'},
        {"window", required_argument, 0, 'w'},   {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
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
        case 'w': window = (int)xt_parse_int("--window", optarg, 0, 65536); break;
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
    if (window > 0 && (size_t)window * msg > (size_t)1 << 30)
        xt_die("--window", "window x msg-size must be at most 1GiB (the receiver holds a window), "
               "got %d x %zu", window, msg);
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
    double *lat = malloc(cap * sizeof *lat); /* half RTT (us), or a window's bandwidth (MB/s) */
    long long n = 0, messages = 0;            /* streaming: messages received whole */
    double busy = 0;                          /* streaming: the sender's time in its windows */
    MPI_Request *req = window > 0 ? malloc((size_t)window * sizeof *req) : NULL;
    if (!buf || !lat || (window > 0 && !req))
        MPI_Abort(MPI_COMM_WORLD, 1);

    MPI_Barrier(MPI_COMM_WORLD);
    if (leader) {
        double interval = interval_ms * 1e-3;
        /* warm-up exchange (connection setup), not recorded */
        if (window > 0) {
            stream_window(buf, msg, window, partner, req);
        } else {
            MPI_Send(buf, (int)msg, MPI_BYTE, partner, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)msg, MPI_BYTE, partner, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        double t0 = xt_now();
        for (long long k = 0;; k++) {
            double due = t0 + (double)k * interval;
            if (count ? k >= count : due >= t0 + duration || xt_now() >= t0 + duration)
                break;
            xt_sleep_until(due);
            if (xt_stop_requested())
                break;
            if ((size_t)n == cap) {
                cap *= 2;
                double *nl = realloc(lat, cap * sizeof *lat);
                if (!nl)
                    MPI_Abort(MPI_COMM_WORLD, 1);
                lat = nl;
            }
            double t = xt_now();
            if (window > 0) {
                int got = stream_window(buf, msg, window, partner, req);
                double dt = xt_now() - t;
                busy += dt;
                messages += got;
                lat[n++] = (double)got * (double)msg / dt / 1e6;
                continue;
            }
            MPI_Send(buf, (int)msg, MPI_BYTE, partner, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)msg, MPI_BYTE, partner, TAG_DATA, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            lat[n++] = (xt_now() - t) / 2 * 1e6;
        }
        MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_STOP, MPI_COMM_WORLD);
    } else if (window > 0) {
        char *rbuf = malloc((size_t)window * (msg ? msg : 1));
        if (!rbuf)
            MPI_Abort(MPI_COMM_WORLD, 1);
        stream_follower(rbuf, msg, window, partner);
        free(rbuf);
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
    /* streaming: each rank's messages received whole and sending time (followers: 0, 0) */
    double sent[2] = {(double)messages, busy}, *per = rank == 0 ? malloc(2 * (size_t)size * sizeof *per) : NULL;
    MPI_Gather(sent, 2, MPI_DOUBLE, per, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);

    if (rank == 0 && window > 0) {
        int pairs = size / 2;
        if (samples)
            emit_samples("window_bw", "MB/s", all, counts, displs, size);
        /* each pair: bytes received whole / its sender's time; then over the pairs */
        double sum = 0, longest = 0;
        long long received = 0;
        for (int r = 0; r < size; r += 2) {
            received += (long long)per[2 * r];
            if (per[2 * r + 1] > 0)
                sum += per[2 * r] * (double)msg / per[2 * r + 1] / 1e6;
            if (per[2 * r + 1] > longest)
                longest = per[2 * r + 1];
        }
        xt_stats s = xt_stats_of(all, (size_t)total);
        emit_bw("avg", sum / pairs, total, pairs, msg, window, received, longest);
        emit_bw("sum", sum, total, pairs, msg, window, received, longest);
        emit_bw("median", s.median, total, pairs, msg, window, received, longest);
        xt_json *j = xt_json_begin(KERNEL, "result");
        xt_json_str(j, "metric", "messages");
        xt_json_int(j, "value", received);
        xt_json_str(j, "unit", "messages");
        xt_json_str(j, "stat", "sum");
        xt_json_int(j, "samples", total);
        xt_json_int(j, "window", window);
        xt_json_emit(j);
        if (table)
            fprintf(stderr,
                    "streaming bandwidth (MB/s), %d pairs, %lld windows of %d x %zu B, %lld "
                    "messages received whole:\n  avg %.1f  sum %.1f  median window %.1f\n",
                    pairs, total, window, msg, received, sum / pairs, sum, s.median);
    } else if (rank == 0) {
        if (samples)
            emit_samples("half_rtt", "us", all, counts, displs, size);
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
    }
    free(counts);
    free(displs);
    free(all);
    free(per);
    free(req);
    free(lat);
    free(buf);
    MPI_Finalize();
    return 0;
}
