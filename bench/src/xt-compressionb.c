/* xt-compressionb: tunable background traffic generator.
 *
 * Method: M. Casas and G. Bronevetsky, "Active Measurement of the Impact of Network Switch
 * Utilization on Application Performance", IPDPS 2014, section 3 "CompressionB": ranks form
 * a ring; in every round each rank sends M messages (40 KiB) to each of its next P partners
 * (rank+1 .. rank+P, mod N) and receives the same from its previous P, then sleeps for a
 * bubble B. P, M and B set the load's spread, burst size and duty cycle.
 * Bubble: microseconds, slept with clock_nanosleep(CLOCK_MONOTONIC) after the round's
 * messages complete. Ranks agree after every round (MPI_Allreduce of a stop flag) whether to
 * stop, so a --duration deadline or SIGTERM/SIGINT on any rank ends all ranks after the
 * current round, and rank 0 reports the achieved injected bandwidth.
 */
#include "xt_common.h"

#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERNEL "xt-compressionb"

static void usage(void)
{
    printf("usage: mpirun -np N xt-compressionb [options]    (N >= 2)\n"
           "Ring traffic: each round every rank sends M messages to each of its next P ranks,\n"
           "then sleeps a bubble. Runs as background load until --duration or SIGTERM.\n"
           "  --partners P     partners per rank, 1..N-1 (default 1)\n"
           "  --messages M     messages per partner per round (default 1)\n"
           "  --msg-size SIZE  bytes per message (default 40KiB)\n"
           "  --bubble US      sleep between rounds, microseconds (default 0)\n"
           "  --duration S     seconds to run (default 10); SIGTERM/SIGINT also stop it\n"
           "  --rounds N       stop after N rounds instead (0 = no limit, default)\n"
           "  --table          human-readable table on stderr\n"
           "  --help           this text\n");
}

int main(int argc, char **argv)
{
    xt_set_prog(KERNEL);
    long long partners = 1, messages = 1, rounds_max = 0;
    size_t msg = 40 << 10;
    double bubble_us = 0, duration = 10;
    int table = 0;
    static const struct option opts[] = {
        {"partners", required_argument, 0, 'P'}, {"messages", required_argument, 0, 'M'},
        {"msg-size", required_argument, 0, 'm'}, {"bubble", required_argument, 0, 'B'},
        {"duration", required_argument, 0, 'd'}, {"rounds", required_argument, 0, 'r'},
        {"table", no_argument, 0, 'T'},          {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    opterr = 0;
    xt_check_args(argc, argv, opts); /* unknown options, flags with values, missing values */
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'P': partners = xt_parse_int("--partners", optarg, 1, 1 << 20); break;
        case 'M': messages = xt_parse_int("--messages", optarg, 1, 32767); break; /* tag <= 32767 */
        case 'm': msg = xt_parse_size("--msg-size", optarg); break;
        case 'B': bubble_us = xt_parse_double("--bubble", optarg, 0, 3.6e9); break;
        case 'd': duration = xt_parse_double("--duration", optarg, 0, 1e7); break;
        case 'r': rounds_max = xt_parse_int("--rounds", optarg, 0, 1LL << 40); break;
        case 'T': table = 1; break;
        case 'h': usage(); return 0;
        default:
            xt_die_bad_option(argv);
        }
    }
    xt_no_operands(argc, argv);
    if (msg > (size_t)1 << 30)
        xt_die("--msg-size", "must be at most 1GiB, got %zu", msg);
    if (msg && (size_t)(partners * messages) > ((size_t)4 << 30) / msg) /* no size_t wrap */
        xt_die("--messages", "partners x messages x msg-size exceeds 4GiB of receive buffers");

    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || partners > size - 1) {
        if (rank == 0)
            fprintf(stderr, size < 2 ? "%s: needs at least 2 ranks\n"
                                     : "%s: --partners: must be at most %d (ranks - 1)\n",
                    KERNEL, size - 1);
        MPI_Finalize();
        return 2;
    }
    xt_catch_stop_signals();

    int nreq = (int)(partners * messages);
    char *sendbuf = malloc(msg ? msg : 1); /* one send buffer: concurrent sends may share it */
    char *recvbuf = malloc((size_t)nreq * (msg ? msg : 1));
    memset(sendbuf, rank & 0xff, msg ? msg : 1);
    MPI_Request *reqs = malloc(2 * (size_t)nreq * sizeof *reqs);

    if (rank == 0) { /* tells a harness the load is running */
        xt_json *j = xt_json_begin(KERNEL, "info");
        xt_json_str(j, "state", "started");
        xt_json_int(j, "ranks", size);
        xt_json_int(j, "partners", partners);
        xt_json_int(j, "messages", messages);
        xt_json_int(j, "msg_size", (long long)msg);
        xt_json_num(j, "bubble_us", bubble_us);
        xt_json_emit(j);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = xt_now(), comm_time = 0;
    long long rounds = 0;
    for (;;) {
        double tr = xt_now();
        int n = 0;
        for (long long p = 1; p <= partners; p++) {
            int from = (int)((rank - p % size + size) % size);
            for (long long m = 0; m < messages; m++, n++)
                MPI_Irecv(recvbuf + (size_t)n * msg, (int)msg, MPI_BYTE, from, (int)m,
                          MPI_COMM_WORLD, &reqs[n]);
        }
        for (long long p = 1; p <= partners; p++) {
            int to = (int)((rank + p) % size);
            for (long long m = 0; m < messages; m++)
                MPI_Isend(sendbuf, (int)msg, MPI_BYTE, to, (int)m, MPI_COMM_WORLD, &reqs[n++]);
        }
        MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
        comm_time += xt_now() - tr;
        rounds++;
        int stop = xt_stop_requested() || (rounds_max ? rounds >= rounds_max
                                                      : xt_now() - t0 >= duration),
            any = 0;
        MPI_Allreduce(&stop, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any)
            break;
        if (bubble_us > 0) { /* a bubble never runs past the --duration deadline */
            double wake = xt_now() + bubble_us * 1e-6;
            xt_sleep_until(rounds_max || wake < t0 + duration ? wake : t0 + duration);
        }
    }
    double elapsed = xt_now() - t0;
    int by_signal = xt_stop_requested(), any_signal = 0;
    MPI_Allreduce(&by_signal, &any_signal, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

    double sent = (double)rounds * (double)nreq * (double)msg, total_sent = 0, max_elapsed = 0;
    MPI_Reduce(&sent, &total_sent, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&elapsed, &max_elapsed, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double total_bw = total_sent / max_elapsed / 1e6;
        struct { const char *metric, *unit, *stat; double value; } out[] = {
            {"injected_bw", "MB/s", "sum", total_bw},
            {"injected_bw", "MB/s", "avg", total_bw / size}, /* per rank */
            {"injected_bytes", "B", "sum", total_sent},
            {"rounds", "count", "sum", (double)rounds},
            {"duty_cycle", "fraction", "avg", comm_time / elapsed}, /* rank 0: time in comm */
        };
        for (size_t k = 0; k < sizeof out / sizeof out[0]; k++) {
            xt_json *j = xt_json_begin(KERNEL, "result");
            xt_json_str(j, "metric", out[k].metric);
            xt_json_num(j, "value", out[k].value);
            xt_json_str(j, "unit", out[k].unit);
            xt_json_str(j, "stat", out[k].stat);
            xt_json_int(j, "ranks", size);
            xt_json_int(j, "partners", partners);
            xt_json_int(j, "messages", messages);
            xt_json_int(j, "msg_size", (long long)msg);
            xt_json_num(j, "bubble_us", bubble_us);
            xt_json_num(j, "duration_s", duration);
            xt_json_num(j, "elapsed_s", max_elapsed);
            xt_json_str(j, "stopped_by", any_signal ? "signal" : rounds_max ? "rounds" : "duration");
            xt_json_emit(j);
        }
        if (table)
            fprintf(stderr,
                    "%lld rounds in %.3f s, %d ranks, P=%lld M=%lld %zu B, bubble %g us: "
                    "injected %.1f MB/s total (stopped by %s)\n",
                    rounds, max_elapsed, size, partners, messages, msg, bubble_us, total_bw,
                    any_signal ? "signal" : rounds_max ? "rounds" : "duration");
    }
    free(reqs);
    free(recvbuf);
    free(sendbuf);
    MPI_Finalize();
    return 0;
}
