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
 * Waiting: a round's messages are waited for as load (common/xt_mpi_wait.h: spinning for 1 ms,
 * then asleep between tests, late by at most 1 % of the wait): spinning through a round on a
 * slow link took the probes' CPU where ranks share cores, so the probe latency measured the
 * host's CPU as well as the switch queue.
 * --configs P-M-B,P-M-B --sweeps K measures several configurations in one job instead: each for
 * --duration seconds in turn, the list K times over in alternating order (A B, B A, A B ...), so
 * that two configurations are compared seconds apart and neither always runs first; every
 * configuration's records carry "config" and "round".
 */
#include "xt_common.h"
#include "xt_mpi_wait.h"

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
           "  --duration S     seconds to run (default 10); SIGTERM/SIGINT/SIGUSR1 also stop it\n"
           "  --rounds N       stop after N rounds instead (0 = no limit, default)\n"
           "  --configs LIST   comma list of P-M-B (partners-messages-bubble) configurations,\n"
           "                   each run for --duration in turn (instead of -P/-M/-B)\n"
           "  --sweeps K       run the --configs list K times, order alternating (default 1)\n"
           "  --table          human-readable table on stderr\n"
           "  --help           this text\n");
}

#define MAX_CONFIGS 16

/* One CompressionB configuration; its label is the spec's P-M-B notation. */
struct config {
    long long partners, messages;
    double bubble_us;
    char label[64];
};

/* "P-M-B" into *c; a malformed one ends the program naming --configs. */
static void parse_config(const char *text, struct config *c)
{
    int used = 0;
    /* plain decimal digits only (no sign, space, nan or exponent): one spelling per value */
    int plain = *text >= '0' && *text <= '9' && strspn(text, "0123456789-.") == strlen(text);
    if (!plain || sscanf(text, "%lld-%lld-%lf%n", &c->partners, &c->messages, &c->bubble_us, &used) != 3 ||
        (size_t)used != strlen(text) || strlen(text) >= sizeof c->label)
        xt_die("--configs", "'%.40s' is not partners-messages-bubble (e.g. 3-4-0)", text);
    if (c->partners < 1 || c->partners > 1 << 20 || c->messages < 1 || c->messages > 32767 ||
        !(c->bubble_us >= 0 && c->bubble_us <= 3.6e9))
        xt_die("--configs", "'%s': partners 1..1048576, messages 1..32767, bubble 0..3.6e9 us", text);
    strcpy(c->label, text);
}

/* A comma list of distinct configurations; returns how many. */
static int parse_configs(const char *text, struct config *out)
{
    char buf[1024];
    if (!*text)
        xt_die("--configs", "missing value (expected a comma list of P-M-B, e.g. 1-1-10000,3-4-0)");
    if (strlen(text) >= sizeof buf)
        xt_die("--configs", "list too long: '%.40s...'", text);
    strcpy(buf, text);
    int n = 0;
    for (char *item = buf;;) {
        char *comma = strchr(item, ',');
        if (comma)
            *comma = '\0';
        if (n == MAX_CONFIGS)
            xt_die("--configs", "at most %d configurations", MAX_CONFIGS);
        parse_config(item, &out[n]);
        for (int k = 0; k < n; k++) /* by value: 01-1-0 is 1-1-0 */
            if (out[k].partners == out[n].partners && out[k].messages == out[n].messages &&
                out[k].bubble_us == out[n].bubble_us)
                xt_die("--configs", "'%s' is listed twice", item);
        n++;
        if (!comma)
            break;
        item = comma + 1;
    }
    return n;
}

struct traffic {
    long long rounds;
    double elapsed, comm_time;
    int by_signal;
};

/* Ring traffic of configuration c until the duration, rounds_max or a stop signal (all ranks
 * agree after every round). */
static struct traffic run_traffic(const struct config *c, size_t msg, double duration,
                                  long long rounds_max, char *sendbuf, char *recvbuf,
                                  MPI_Request *reqs, int rank, int size)
{
    MPI_Barrier(MPI_COMM_WORLD);
    struct traffic t = {0, 0, 0, 0};
    double t0 = xt_now();
    for (;;) {
        double tr = xt_now();
        int n = 0;
        for (long long p = 1; p <= c->partners; p++) {
            int from = (int)((rank - p % size + size) % size);
            for (long long m = 0; m < c->messages; m++, n++)
                MPI_Irecv(recvbuf + (size_t)n * msg, (int)msg, MPI_BYTE, from, (int)m,
                          MPI_COMM_WORLD, &reqs[n]);
        }
        for (long long p = 1; p <= c->partners; p++) {
            int to = (int)((rank + p) % size);
            for (long long m = 0; m < c->messages; m++)
                MPI_Isend(sendbuf, (int)msg, MPI_BYTE, to, (int)m, MPI_COMM_WORLD, &reqs[n++]);
        }
        xt_wait_all(n, reqs, tr, XT_LOAD_SPIN_S, XT_LOAD_FRACTION); /* a round past 1 ms waits asleep */
        t.comm_time += xt_now() - tr;
        t.rounds++;
        int stop = xt_stop_requested() || (rounds_max ? t.rounds >= rounds_max
                                                        : xt_now() - t0 >= duration),
            any = 0;
        MPI_Allreduce(&stop, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any)
            break;
        if (c->bubble_us > 0) { /* a bubble never runs past the --duration deadline */
            double wake = xt_now() + c->bubble_us * 1e-6;
            xt_sleep_until(rounds_max || wake < t0 + duration ? wake : t0 + duration);
        }
    }
    t.elapsed = xt_now() - t0;
    int by_signal = xt_stop_requested();
    MPI_Allreduce(&by_signal, &t.by_signal, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return t;
}

/* Rank 0's result records of one traffic run (labelled with config and round where given). */
static void report(const struct config *c, const struct traffic *t, size_t msg, double duration,
                   long long rounds_max, const char *label, int round, int table, int rank,
                   int size)
{
    double sent = (double)t->rounds * (double)(c->partners * c->messages) * (double)msg;
    double total_sent = 0, max_elapsed = 0;
    MPI_Reduce(&sent, &total_sent, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t->elapsed, &max_elapsed, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank != 0)
        return;
    const char *stopped = t->by_signal ? "signal" : rounds_max ? "rounds" : "duration";
    double total_bw = total_sent / max_elapsed / 1e6;
    struct { const char *metric, *unit, *stat; double value; } out[] = {
        {"injected_bw", "MB/s", "sum", total_bw},
        {"injected_bw", "MB/s", "avg", total_bw / size}, /* per rank */
        {"injected_bytes", "B", "sum", total_sent},
        {"rounds", "count", "sum", (double)t->rounds},
        {"duty_cycle", "fraction", "avg", t->comm_time / t->elapsed}, /* rank 0: time in comm */
    };
    for (size_t k = 0; k < sizeof out / sizeof out[0]; k++) {
        xt_json *j = xt_json_begin(KERNEL, "result");
        xt_json_str(j, "metric", out[k].metric);
        xt_json_num(j, "value", out[k].value);
        xt_json_str(j, "unit", out[k].unit);
        xt_json_str(j, "stat", out[k].stat);
        if (label) {
            xt_json_str(j, "config", label);
            xt_json_int(j, "round", round);
        }
        xt_json_int(j, "ranks", size);
        xt_json_int(j, "partners", c->partners);
        xt_json_int(j, "messages", c->messages);
        xt_json_int(j, "msg_size", (long long)msg);
        xt_json_num(j, "bubble_us", c->bubble_us);
        xt_json_num(j, "duration_s", duration);
        xt_json_num(j, "elapsed_s", max_elapsed);
        xt_json_str(j, "stopped_by", stopped);
        xt_json_emit(j);
    }
    if (table)
        fprintf(stderr,
                "%lld rounds in %.3f s, %d ranks, P=%lld M=%lld %zu B, bubble %g us: "
                "injected %.1f MB/s total (stopped by %s)\n",
                t->rounds, max_elapsed, size, c->partners, c->messages, msg, c->bubble_us,
                total_bw, stopped);
}

int main(int argc, char **argv)
{
    xt_set_prog(KERNEL);
    struct config configs[MAX_CONFIGS] = {{1, 1, 0, ""}};
    int nconfigs = 1, from_list = 0, own_shape = 0;
    long long rounds_max = 0, sweeps = 1;
    size_t msg = 40 << 10;
    double duration = 10;
    int table = 0;
    static const struct option opts[] = {
        {"partners", required_argument, 0, 'P'}, {"messages", required_argument, 0, 'M'},
        {"msg-size", required_argument, 0, 'm'}, {"bubble", required_argument, 0, 'B'},
        {"duration", required_argument, 0, 'd'}, {"rounds", required_argument, 0, 'r'},
        {"configs", required_argument, 0, 'c'},  {"sweeps", required_argument, 0, 's'},
        {"table", no_argument, 0, 'T'},          {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    opterr = 0;
    xt_check_args(argc, argv, opts); /* unknown options, flags with values, missing values */
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'P': configs[0].partners = xt_parse_int("--partners", optarg, 1, 1 << 20); own_shape = 1; break;
        case 'M': /* tag <= 32767 */
            configs[0].messages = xt_parse_int("--messages", optarg, 1, 32767); own_shape = 1; break;
        case 'm': msg = xt_parse_size("--msg-size", optarg); break;
        case 'B': configs[0].bubble_us = xt_parse_double("--bubble", optarg, 0, 3.6e9); own_shape = 1; break;
        case 'd': duration = xt_parse_double("--duration", optarg, 0, 1e7); break;
        case 'r': rounds_max = xt_parse_int("--rounds", optarg, 0, 1LL << 40); break;
        case 'c': nconfigs = parse_configs(optarg, configs); from_list = 1; break;
        case 's': sweeps = xt_parse_int("--sweeps", optarg, 1, 1000); break;
        case 'T': table = 1; break;
        case 'h': usage(); return 0;
        default:
            xt_die_bad_option(argv);
        }
    }
    xt_no_operands(argc, argv);
    if (from_list && own_shape)
        xt_die("--configs", "replaces --partners, --messages and --bubble: give one or the other");
    if (sweeps > 1 && !from_list)
        xt_die("--sweeps", "sweeps a --configs list: give one");
    if (msg > (size_t)1 << 30)
        xt_die("--msg-size", "must be at most 1GiB, got %zu", msg);
    long long most = 0; /* the largest partners x messages: the receive buffers' size */
    for (int k = 0; k < nconfigs; k++) {
        if (msg && (size_t)(configs[k].partners * configs[k].messages) > ((size_t)4 << 30) / msg)
            xt_die(from_list ? "--configs" : "--messages",
                   "partners x messages x msg-size exceeds 4GiB of receive buffers");
        if (configs[k].partners * configs[k].messages > most)
            most = configs[k].partners * configs[k].messages;
    }

    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long long widest = 0;
    for (int k = 0; k < nconfigs; k++)
        widest = configs[k].partners > widest ? configs[k].partners : widest;
    if (size < 2 || widest > size - 1) {
        if (rank == 0)
            fprintf(stderr, size < 2 ? "%s: needs at least 2 ranks\n"
                                     : "%s: %s: must be at most %d partners (ranks - 1)\n",
                    KERNEL, from_list ? "--configs" : "--partners", size - 1);
        MPI_Finalize();
        return 2;
    }
    xt_catch_stop_signals();

    char *sendbuf = malloc(msg ? msg : 1); /* one send buffer: concurrent sends may share it */
    char *recvbuf = malloc((size_t)most * (msg ? msg : 1));
    memset(sendbuf, rank & 0xff, msg ? msg : 1);
    MPI_Request *reqs = malloc(2 * (size_t)most * sizeof *reqs);

    if (rank == 0) { /* tells a harness the load is running */
        xt_json *j = xt_json_begin(KERNEL, "info");
        xt_json_str(j, "state", "started");
        xt_json_int(j, "ranks", size);
        if (from_list) {
            char list[MAX_CONFIGS * 64] = "";
            for (int k = 0; k < nconfigs; k++)
                strcat(strcat(list, k ? "," : ""), configs[k].label);
            xt_json_str(j, "configs", list);
            xt_json_int(j, "sweeps", sweeps);
        } else {
            xt_json_int(j, "partners", configs[0].partners);
            xt_json_int(j, "messages", configs[0].messages);
            xt_json_num(j, "bubble_us", configs[0].bubble_us);
        }
        xt_json_int(j, "msg_size", (long long)msg);
        xt_json_emit(j);
    }

    for (long long k = 0; k < sweeps * nconfigs; k++) {
        long long sweep = k / nconfigs, at = k % nconfigs;
        const struct config *c = &configs[sweep % 2 ? nconfigs - 1 - at : at]; /* A B, B A, ... */
        struct traffic t = run_traffic(c, msg, duration, rounds_max, sendbuf, recvbuf, reqs, rank, size);
        report(c, &t, msg, duration, rounds_max, from_list ? c->label : NULL, (int)sweep, table,
               rank, size);
        if (t.by_signal)
            break;
    }
    free(reqs);
    free(recvbuf);
    free(sendbuf);
    MPI_Finalize();
    return 0;
}
