/* xt-inject: RDMA-write-style memory injector (background load).
 *
 * Method: T. Groves, "Characterizing and Improving Power and Performance in HPC Networks",
 * PhD dissertation, Univ. of New Mexico, 2017, section 2.2 "NiMC" (network-induced memory
 * contention): remote nodes stream 64 KiB RDMA writes (ib_write_bw) into a target node's
 * memory while an application runs there. Here the RDMA writes are MPI one-sided puts:
 * the target rank exposes a window (MPI_Win_allocate), every other rank is an origin that
 * holds a shared passive-target lock and streams MPI_Put of --msg-size into successive
 * window offsets (wrapping), completing them with MPI_Win_flush every --batch puts. Puts are
 * paced to --rate MB/s per origin (sleep until the schedule's next deadline; 1 MB = 10^6 B)
 * or unpaced (--rate 0). Runs for --duration seconds or until SIGTERM/SIGINT/SIGUSR1, then reports
 * the achieved rate per origin and in total.
 */
#include "xt_common.h"

#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERNEL "xt-inject"
#define TAG_STOP 7

static void usage(void)
{
    printf("usage: mpirun -np N xt-inject [options]    (N >= 2)\n"
           "Origins stream MPI_Put into the target rank's window (RDMA-write-style load).\n"
           "  --target R       rank exposing the window (default 0)\n"
           "  --window SIZE    window size on the target (default 64MiB)\n"
           "  --msg-size SIZE  bytes per put (default 64KiB)\n"
           "  --rate MB/s      paced rate per origin, 10^6 B/s; 0 = unpaced (default 0)\n"
           "  --batch N        puts between MPI_Win_flush calls (default 1)\n"
           "  --duration S     seconds to run (default 10); SIGTERM/SIGINT/SIGUSR1 also stop it\n"
           "  --poll-us US     target: sleep between progress polls, 0 = busy poll (default 50)\n"
           "  --table          human-readable table on stderr\n"
           "  --help           this text\n"
           "SIZE accepts binary suffixes: 64, 4K, 64KiB, 1M, 2G.\n");
}

/* Coordinated stop: whichever rank stops first (deadline or signal) tells all others with a
 * zero-byte message on a private communicator; every rank finally receives size-1 of them. */
typedef struct {
    MPI_Comm comm;
    int size, announced, received;
    MPI_Request *reqs;
} stopper;

static void stop_announce(stopper *s)
{
    if (s->announced)
        return;
    int me, n = 0;
    MPI_Comm_rank(s->comm, &me);
    for (int r = 0; r < s->size; r++)
        if (r != me)
            MPI_Isend(NULL, 0, MPI_BYTE, r, TAG_STOP, s->comm, &s->reqs[n++]);
    s->announced = 1;
}

/* Returns 1 once any rank has stopped; drives MPI progress as a side effect. */
static int stop_poll(stopper *s)
{
    int flag = 1;
    while (flag && s->received < s->size - 1) {
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_STOP, s->comm, &flag, &st);
        if (flag) {
            MPI_Recv(NULL, 0, MPI_BYTE, st.MPI_SOURCE, TAG_STOP, s->comm, MPI_STATUS_IGNORE);
            s->received++;
        }
    }
    return s->announced || s->received > 0;
}

static void stop_finish(stopper *s)
{
    stop_announce(s);
    for (; s->received < s->size - 1; s->received++)
        MPI_Recv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, TAG_STOP, s->comm, MPI_STATUS_IGNORE);
    MPI_Waitall(s->size - 1, s->reqs, MPI_STATUSES_IGNORE);
}

int main(int argc, char **argv)
{
    xt_set_prog(KERNEL);
    /* Parse before MPI_Init so --help and bad arguments work without a launcher. */
    long long target = 0, batch = 1, poll_us = 50;
    size_t window = (size_t)64 << 20, msg = (size_t)64 << 10;
    double rate = 0, duration = 10;
    int table = 0;
    static const struct option opts[] = {
        {"target", required_argument, 0, 'r'},   {"window", required_argument, 0, 'w'},
        {"msg-size", required_argument, 0, 'm'}, {"rate", required_argument, 0, 'R'},
        {"batch", required_argument, 0, 'b'},    {"duration", required_argument, 0, 'd'},
        {"poll-us", required_argument, 0, 'p'},  {"table", no_argument, 0, 'T'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0},
    };
    opterr = 0;
    xt_check_args(argc, argv, opts); /* unknown options, flags with values, missing values */
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'r': target = xt_parse_int("--target", optarg, 0, 1 << 30); break;
        case 'w': window = xt_parse_size("--window", optarg); break;
        case 'm': msg = xt_parse_size("--msg-size", optarg); break;
        case 'R': rate = xt_parse_double("--rate", optarg, 0, 1e9); break;
        case 'b': batch = xt_parse_int("--batch", optarg, 1, 1 << 20); break;
        case 'd': duration = xt_parse_double("--duration", optarg, 0, 1e7); break;
        case 'p': poll_us = xt_parse_int("--poll-us", optarg, 0, 1000000); break;
        case 'T': table = 1; break;
        case 'h': usage(); return 0;
        default:
            xt_die_bad_option(argv);
        }
    }
    xt_no_operands(argc, argv);
    if (msg < 1 || msg > (size_t)1 << 30)
        xt_die("--msg-size", "must be between 1 and 1GiB, got %zu", msg);
    if (window < msg || window > ((size_t)1 << 40))
        xt_die("--window", "must be at least --msg-size (%zu) and at most 1TiB, got %zu", msg,
               window);
    /* checked on every rank (same arguments everywhere; nodes of a job are alike): the target's
     * MPI_Win_allocate would fail or the node run out of memory */
    size_t mem = xt_phys_mem();
    if (mem && window > mem)
        xt_die("--window", "%zu bytes exceed this node's memory (%zu bytes)", window, mem);

    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || target >= size) {
        if (rank == 0)
            fprintf(stderr, size < 2 ? "%s: needs at least 2 ranks (a target and an origin)\n"
                                     : "%s: --target: must be a rank below the %d ranks\n",
                    KERNEL, size);
        MPI_Finalize();
        return 2;
    }
    xt_catch_stop_signals();
    int is_target = rank == target;

    unsigned char *base;
    MPI_Win win;
    MPI_Win_allocate(is_target ? (MPI_Aint)window : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                     &win);
    if (is_target)
        memset(base, 0, window);
    unsigned char *src = malloc(msg);
    memset(src, 1 + rank % 255, msg); /* non-zero: the target can check what landed */
    size_t slots = window / msg;

    stopper stop = {.size = size};
    MPI_Comm_dup(MPI_COMM_WORLD, &stop.comm);
    stop.reqs = malloc((size_t)size * sizeof *stop.reqs);
    if (rank == 0) { /* tells a harness the load is running */
        xt_json *j = xt_json_begin(KERNEL, "info");
        xt_json_str(j, "state", "started");
        xt_json_int(j, "origins", size - 1);
        xt_json_int(j, "target", target);
        xt_json_int(j, "msg_size", (long long)msg);
        xt_json_int(j, "window", (long long)window);
        xt_json_num(j, "rate", rate);
        xt_json_emit(j);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    double t0 = xt_now(), t_end = t0 + duration, interval = rate > 0 ? (double)msg / (rate * 1e6) : 0;
    long long puts = 0;
    if (is_target) {
        /* The target only drives progress (osc/pt2pt needs it) until everyone stopped. */
        while (!stop_poll(&stop)) {
            if (xt_stop_requested() || xt_now() >= t_end)
                stop_announce(&stop);
            else if (poll_us)
                xt_sleep_until(xt_now() + (double)poll_us * 1e-6);
        }
    } else {
        MPI_Win_lock(MPI_LOCK_SHARED, (int)target, 0, win);
        long long pending = 0;
        while (!xt_stop_requested() && !stop_poll(&stop)) {
            double now = xt_now();
            if (now >= t_end)
                break;
            double due = t0 + (double)puts * interval;
            if (interval > 0 && now < due) {
                /* wake at least every 10 ms to notice a stop from another rank */
                xt_sleep_until(fmin(fmin(due, t_end), now + 0.01));
                continue; /* re-check stop conditions after sleeping */
            }
            MPI_Put(src, (int)msg, MPI_BYTE, (int)target, (MPI_Aint)((size_t)puts % slots * msg),
                    (int)msg, MPI_BYTE, win);
            puts++;
            if (++pending == batch) {
                MPI_Win_flush((int)target, win);
                pending = 0;
            }
        }
        MPI_Win_flush((int)target, win); /* finish the current batch before reporting */
        MPI_Win_unlock((int)target, win);
    }
    double elapsed = xt_now() - t0;
    int by_signal = xt_stop_requested(), any_signal = 0;
    stop_finish(&stop);
    MPI_Allreduce(&by_signal, &any_signal, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

    /* Gather per-rank puts and elapsed time on rank 0 (the target's entry is unused). */
    double mine[2] = {(double)puts, elapsed}, *all = NULL;
    if (rank == 0)
        all = malloc(2 * (size_t)size * sizeof *all);
    MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);

    /* Check on the target that the window prefix written by the busiest origin is non-zero. */
    long long max_puts = 0, bad = 0;
    MPI_Allreduce(&puts, &max_puts, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    size_t checked = (size_t)(max_puts < (long long)slots ? max_puts : (long long)slots) * msg;
    if (is_target) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
        for (size_t i = 0; i < checked; i++)
            bad += base[i] == 0;
        MPI_Win_unlock(rank, win);
    }
    MPI_Bcast(&bad, 1, MPI_LONG_LONG, (int)target, MPI_COMM_WORLD);

    if (rank == 0) {
        xt_json *j = xt_json_begin(KERNEL, "validation");
        char detail[160];
        snprintf(detail, sizeof detail, "%lld of %zu bytes in the written window prefix are unset",
                 bad, checked);
        xt_json_bool(j, "passed", bad == 0);
        xt_json_str(j, "detail", detail);
        xt_json_emit(j);
        double total_bytes = 0, total_rate = 0, max_elapsed = 0;
        if (table)
            fprintf(stderr, "%-8s %14s %12s %10s\n", "origin", "bytes", "MB/s", "seconds");
        for (int r = 0; r < size; r++) {
            if (r == target)
                continue;
            double bytes = all[2 * r] * (double)msg, secs = all[2 * r + 1];
            double mbs = secs > 0 ? bytes / secs / 1e6 : 0;
            total_bytes += bytes;
            total_rate += mbs;
            max_elapsed = secs > max_elapsed ? secs : max_elapsed;
            j = xt_json_begin(KERNEL, "result");
            xt_json_str(j, "metric", "origin_rate");
            xt_json_num(j, "value", mbs);
            xt_json_str(j, "unit", "MB/s");
            xt_json_str(j, "stat", "avg");
            xt_json_int(j, "origin", r);
            xt_json_num(j, "bytes", bytes);
            xt_json_int(j, "puts", (long long)all[2 * r]);
            xt_json_num(j, "elapsed_s", secs);
            xt_json_int(j, "target", target);
            xt_json_int(j, "msg_size", (long long)msg);
            xt_json_int(j, "window", (long long)window);
            xt_json_num(j, "rate", rate);
            xt_json_int(j, "batch", batch);
            xt_json_num(j, "duration_s", duration);
            xt_json_emit(j);
            if (table)
                fprintf(stderr, "%-8d %14.0f %12.1f %10.3f\n", r, bytes, mbs, secs);
        }
        /* total_rate sums the origins' own rates (each over its own run time) */
        struct { const char *metric, *unit, *stat; double value; } out[] = {
            {"total_rate", "MB/s", "sum", total_rate},
            {"total_bytes", "B", "sum", total_bytes},
        };
        for (int k = 0; k < 2; k++) {
            j = xt_json_begin(KERNEL, "result");
            xt_json_str(j, "metric", out[k].metric);
            xt_json_num(j, "value", out[k].value);
            xt_json_str(j, "unit", out[k].unit);
            xt_json_str(j, "stat", out[k].stat);
            xt_json_int(j, "origins", size - 1);
            xt_json_num(j, "elapsed_s", max_elapsed);
            xt_json_str(j, "stopped_by", any_signal ? "signal" : "duration");
            xt_json_int(j, "target", target);
            xt_json_int(j, "msg_size", (long long)msg);
            xt_json_int(j, "window", (long long)window);
            xt_json_num(j, "rate", rate);
            xt_json_int(j, "batch", batch);
            xt_json_num(j, "duration_s", duration);
            xt_json_emit(j);
        }
        if (table)
            fprintf(stderr, "%-8s %14.0f %12.1f %10.3f  (stopped by %s)\n", "total", total_bytes,
                    total_rate, max_elapsed, any_signal ? "signal" : "duration");
        free(all);
    }
    free(stop.reqs);
    MPI_Comm_free(&stop.comm);
    MPI_Win_free(&win);
    free(src);
    MPI_Finalize();
    return bad == 0 ? 0 : 1;
}
