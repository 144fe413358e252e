/* xt-rmamt: multithreaded MPI RMA bandwidth / operation rate / latency sweep.
 *
 * Method: T. Groves, M. Dosanjh, R. Grant, "RMA-MT" micro-benchmarks, as described in
 * T. Groves, "Characterizing and Improving Power and Performance in HPC Networks", PhD
 * dissertation, Univ. of New Mexico, 2017, section 2.1.3 (latency and bandwidth benchmarks).
 * Two ranks: rank 0 is the origin, rank 1 the target, which exposes a window
 * (MPI_Win_allocate). The origin creates its worker threads ONCE (pthreads) and releases them
 * with a barrier after the main thread opened the epoch, so timing excludes thread creation.
 * Message sizes are Groves' axis by default (--sizes total): the total message size, split over
 * the threads, each of T threads moving size/T bytes per operation ("as each thread reaches the
 * point where it sends 16 KiB of data, we see a sharp reduction in throughput. This occurs at 16
 * KiB for single thread results 32 KiB for two threads", section 2.1.6, Fig 2.5), so that a thread
 * count is compared with one thread at the same size. --sizes per_thread gives each thread the
 * whole size (the runs before this option). Records carry both: "size" on the chosen axis,
 * "bytes_per_thread" (the bytes of one operation) and "bytes_all_threads".
 * Thread i puts/gets into its own disjoint window region [i*b, (i+1)*b), b = bytes per thread.
 *   bw:  one epoch per (threads, size); every thread issues --iterations operations;
 *        bandwidth = threads*iterations*b / time (MiB/s), op rate = operations / time. The op
 *        rate is two ranks' put/get count, not Groves' message rate (the Sandia micro-benchmarks'
 *        halo exchange, "communicates with six neighbors", section 2.1.3), which is not measured.
 *   lat: one epoch per iteration with one operation per thread (synchronisation included);
 *        one latency sample per iteration (us).
 *   sync flush = one lock_all epoch for the whole measurement and MPI_Win_flush after every
 *   operation (as upstream rmamt does).
 * After each measurement the transferred regions are checked against a seeded pattern
 * (64-bit FNV-1a checksum per thread region) and a `validation` record is written; any
 * mismatch makes the exit status 1. A watchdog thread on rank 0 turns a hang into data: after
 * --timeout seconds it writes a failed `validation` record (detail "timeout") and calls
 * MPI_Abort (exit status 3), since hangs are known results of some MPI/sync combinations.
 * --rounds K sweeps the thread list K times over in one process (threads 1,2: 1 2 1 2 ...), its
 * records tagged with "round": each round pairs the thread counts seconds apart. --sync takes a
 * list too (fence,lock): each round measures every thread count under each mode in turn, so the
 * modes pair up round by round as well (epochs never overlap: fence epochs assert NOPRECEDE and
 * NOSUCCEED, and a barrier separates measurements).
 *
 * MPI environment (Open MPI 4.1.4, Debian): osc/pt2pt refuses MPI_THREAD_MULTIPLE and Debian
 * disables osc/ucx and pml/ucx by default, so use UCX:
 *   OMPI_MCA_osc=ucx OMPI_MCA_pml=ucx OMPI_MCA_opal_common_ucx_tls=any
 *   OMPI_MCA_opal_common_ucx_devices=any UCX_TLS=<see below>
 * across nodes UCX_TLS=tcp,self UCX_NET_DEVICES=<iface>; on one host (2 ranks) both
 * UCX_TLS=self,tcp UCX_NET_DEVICES=lo (used by tests/bench/test_rmamt.py) and UCX_TLS=self,sm,tcp
 * work, every sync with 1-2 threads, fence included (no hang on one host). MPICH 4.0
 * (mpicc.mpich / mpirun.mpich, ch4:ucx) needs no settings.
 */
#include "xt_common.h"

#include <getopt.h>
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KERNEL "xt-rmamt"
#define ORIGIN 0
#define TARGET 1
#define MAX_THREADS 64
#define TIMEOUT_EXIT 3

enum { OP_PUT, OP_GET };
enum { SIZES_TOTAL, SIZES_PER_THREAD };
static const char *const sizes_names[] = {"total", "per_thread", NULL};
enum { SYNC_FENCE, SYNC_PSCW, SYNC_LOCK, SYNC_LOCK_ALL, SYNC_FLUSH, SYNC_COUNT };
static const char *const op_names[] = {"put", "get", NULL};
static const char *const sync_names[] = {"fence", "pscw", "lock", "lock_all", "flush", NULL};

static struct {
    int op, sync, bw, lat, table, rounds, ends_only, sizes;
    int syncs[SYNC_COUNT], nsyncs; /* --sync list, in order; sync is the one being measured */
    long long threads[MAX_THREADS];
    int nthreads;
    size_t min_size, max_size;
    long long iterations;
    double timeout;
    uint64_t seed;
} cfg = {.op = OP_PUT, .sync = SYNC_LOCK_ALL, .bw = 1, .min_size = 1, .max_size = 1 << 20,
         .iterations = 100, .timeout = 120, .seed = 1, .nthreads = 1, .threads = {1}, .rounds = 1,
         .syncs = {SYNC_LOCK_ALL}, .nsyncs = 1};
/* The round being measured, tagged on records when --rounds > 1 (-1: untagged). */
static int round_now = -1;

/* Shared between the origin's main thread and its workers. */
static struct {
    pthread_barrier_t start, done;
    MPI_Win win;
    unsigned char *buf; /* origin's local buffer, max_threads * max_size */
    size_t size;
    int active;     /* threads taking part in this round */
    long long ops;  /* operations per thread per round */
    int quit;
} W;

/* What rank 0 is doing, for the watchdog's report; guarded by out_lock. */
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { const char *mode; long long threads; size_t size; } now_doing = {"setup", 0, 0};
static atomic_int finished;

static void usage(void)
{
    printf("usage: mpirun -np 2 xt-rmamt [options]\n"
           "Multithreaded MPI RMA sweep (RMA-MT): rank 0 threads put/get into rank 1's window.\n"
           "  --op put|get          RMA operation (default put)\n"
           "  --sync LIST           fence, pscw, lock, lock_all, flush, or a comma list of them\n"
           "                        measured in turn (default lock_all)\n"
           "  --threads LIST        comma list of thread counts, e.g. 1,2,4 (default 1)\n"
           "  --sizes total|per_thread\n"
           "                        a size is the total split over the threads (each of T\n"
           "                        threads moves size/T bytes; Groves' axis) or each thread's\n"
           "                        (default total)\n"
           "  --min-size SIZE       smallest message size, power of 2 (default 1; with --sizes\n"
           "                        total at least the largest thread count, its default)\n"
           "  --max-size SIZE       largest message size, power of 2 (default 1MiB)\n"
           "  --iterations N        operations per thread (bw) / epochs (lat) (default 100)\n"
           "  --mode bw|lat|both    bandwidth+op rate, latency, or both (default bw)\n"
           "  --timeout S           abort with a failed validation record after S seconds,\n"
           "                        0 = never (default 120)\n"
           "  --seed N              seed of the data pattern used for checksums (default 1)\n"
           "  --ends-only           measure --min-size and --max-size only, not the sizes between\n"
           "  --rounds K            sweep the thread list K times (records carry \"round\")\n"
           "                        (default 1)\n"
           "  --table               human-readable table on stderr\n"
           "  --help                this text\n"
           "Needs MPI_THREAD_MULTIPLE. Exit status: 0 ok, 1 checksum mismatch, 2 bad arguments,\n"
           "3 timeout (MPI_Abort).\n");
}

static int pick(const char *option, const char *text, const char *const *names)
{
    char choices[128] = "";
    for (int i = 0; names[i]; i++) {
        if (strcmp(text, names[i]) == 0)
            return i;
        size_t used = strlen(choices);
        snprintf(choices + used, sizeof choices - used, "%s%s", i ? ", " : "", names[i]);
    }
    if (!*text)
        xt_die(option, "missing value (one of %s)", choices);
    xt_die(option, "unknown value '%.40s' (one of %s)", text, choices);
}

/* A comma list of distinct --sync modes into cfg.syncs. */
static void parse_syncs(const char *text)
{
    char buf[128];
    if (strlen(text) >= sizeof buf)
        xt_die("--sync", "list too long: '%.40s...'", text);
    strcpy(buf, text);
    cfg.nsyncs = 0;
    for (char *item = buf;;) {
        char *comma = strchr(item, ',');
        if (comma)
            *comma = '\0';
        int mode = pick("--sync", item, sync_names);
        for (int k = 0; k < cfg.nsyncs; k++)
            if (cfg.syncs[k] == mode)
                xt_die("--sync", "'%s' is listed twice", item);
        cfg.syncs[cfg.nsyncs++] = mode;
        if (!comma)
            break;
        item = comma + 1;
    }
    cfg.sync = cfg.syncs[0];
}

static size_t parse_pow2(const char *option, const char *text)
{
    size_t v = xt_parse_size(option, text);
    if (v < 1 || v > ((size_t)1 << 30) || (v & (v - 1)))
        xt_die(option, "must be a power of 2 between 1 and 1GiB, got '%.40s'", text);
    return v;
}

static void parse_args(int argc, char **argv)
{
    static const struct option opts[] = {
        {"op", required_argument, 0, 'o'},         {"sync", required_argument, 0, 's'},
        {"threads", required_argument, 0, 't'},    {"min-size", required_argument, 0, 'n'},
        {"max-size", required_argument, 0, 'x'},   {"iterations", required_argument, 0, 'i'},
        {"mode", required_argument, 0, 'm'},       {"timeout", required_argument, 0, 'T'},
        {"seed", required_argument, 0, 'S'},       {"table", no_argument, 0, 'b'},
        {"rounds", required_argument, 0, 'r'},     {"ends-only", no_argument, 0, 'e'},
        {"sizes", required_argument, 0, 'z'},      {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    static const char *const modes[] = {"bw", "lat", "both", NULL};
    int min_given = 0;
    opterr = 0;
    xt_check_args(argc, argv, opts); /* unknown options, flags with values, missing values */
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'o': cfg.op = pick("--op", optarg, op_names); break;
        case 's': parse_syncs(optarg); break;
        case 't':
            cfg.nthreads = xt_parse_int_list("--threads", optarg, cfg.threads, MAX_THREADS);
            for (int k = 0; k < cfg.nthreads; k++)
                if (cfg.threads[k] < 1 || cfg.threads[k] > MAX_THREADS)
                    xt_die("--threads", "each count must be between 1 and %d, got %lld",
                           MAX_THREADS, cfg.threads[k]);
            break;
        case 'n': cfg.min_size = parse_pow2("--min-size", optarg); min_given = 1; break;
        case 'x': cfg.max_size = parse_pow2("--max-size", optarg); break;
        case 'i': cfg.iterations = xt_parse_int("--iterations", optarg, 1, 100000000); break;
        case 'm': {
            int m = pick("--mode", optarg, modes);
            cfg.bw = m != 1;
            cfg.lat = m != 0;
            break;
        }
        case 'T': cfg.timeout = xt_parse_double("--timeout", optarg, 0, 1e7); break;
        case 'S': cfg.seed = (uint64_t)xt_parse_int("--seed", optarg, 0, INT64_MAX); break;
        case 'b': cfg.table = 1; break;
        case 'e': cfg.ends_only = 1; break;
        case 'r': cfg.rounds = (int)xt_parse_int("--rounds", optarg, 1, 1000); break;
        case 'z': cfg.sizes = pick("--sizes", optarg, sizes_names); break;
        case 'h': usage(); exit(0);
        default:
            xt_die_bad_option(argv);
        }
    }
    xt_no_operands(argc, argv);
    long long most = 1;
    for (int k = 0; k < cfg.nthreads; k++)
        most = cfg.threads[k] > most ? cfg.threads[k] : most;
    if (cfg.sizes == SIZES_TOTAL && !min_given && (size_t)most > cfg.min_size)
        cfg.min_size = (size_t)most; /* a byte per thread, in the default sweep */
    if (cfg.min_size > cfg.max_size)
        xt_die("--min-size", "must not exceed --max-size (%zu), got %zu", cfg.max_size,
               cfg.min_size);
    if (cfg.sizes == SIZES_TOTAL) {
        /* a power-of-2 total splits evenly over a power-of-2 count, at least a byte each */
        for (int k = 0; k < cfg.nthreads; k++)
            if (cfg.threads[k] & (cfg.threads[k] - 1))
                xt_die("--threads", "with --sizes total each count must be a power of 2 (the total "
                       "splits evenly), got %lld", cfg.threads[k]);
        if (cfg.min_size < (size_t)most)
            xt_die("--min-size", "with --sizes total must be at least the largest thread count "
                   "(%lld: a byte per thread), got %zu", most, cfg.min_size);
        most = 1;
    }
    /* origin buffer and target window hold --max-size, times the threads if per thread */
    size_t mem = xt_phys_mem();
    if (mem && (size_t)most * cfg.max_size > mem)
        xt_die("--max-size", "%lld threads x %zu bytes exceed this node's memory (%zu bytes)",
               most, cfg.max_size, mem);
}

/* The bytes each of `threads` threads moves per operation at message size `size`. */
static size_t bytes_per_thread(long long threads, size_t size)
{
    return cfg.sizes == SIZES_TOTAL ? size / (size_t)threads : size;
}

/* ---- data pattern and checksums ---- */

static void fill_pattern(unsigned char *p, size_t n, int thread, size_t size)
{
    uint64_t st = cfg.seed ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(thread + 1))
                  ^ ((uint64_t)size << 20);
    for (size_t i = 0; i < n; i += 8) {
        uint64_t r = xt_rand_next(&st);
        memcpy(p + i, &r, n - i < 8 ? n - i : 8);
    }
}

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* Counts thread regions of `data` whose checksum differs from the pattern; describes the first. */
static int check_regions(const unsigned char *data, int threads, size_t size,
                         unsigned char *scratch, char *detail, size_t dlen)
{
    int bad = 0;
    for (int t = 0; t < threads; t++) {
        fill_pattern(scratch, size, t, size);
        uint64_t want = fnv1a(scratch, size), got = fnv1a(data + (size_t)t * size, size);
        if (want != got && bad++ == 0)
            snprintf(detail, dlen, "thread %d region checksum %016llx, expected %016llx", t,
                     (unsigned long long)got, (unsigned long long)want);
    }
    return bad;
}

/* ---- epochs ---- */

static MPI_Group peer_group; /* the other rank, for post/start */

static void open_epoch(int rank)
{
    switch (cfg.sync) {
    case SYNC_FENCE: MPI_Win_fence(MPI_MODE_NOPRECEDE, W.win); break;
    case SYNC_PSCW:
        if (rank == ORIGIN)
            MPI_Win_start(peer_group, 0, W.win);
        else
            MPI_Win_post(peer_group, 0, W.win);
        break;
    case SYNC_LOCK:
        if (rank == ORIGIN)
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, W.win);
        break;
    default: /* lock_all, flush: passive target, the target does nothing */
        if (rank == ORIGIN)
            MPI_Win_lock_all(0, W.win);
    }
}

static void close_epoch(int rank)
{
    switch (cfg.sync) {
    case SYNC_FENCE: MPI_Win_fence(MPI_MODE_NOSUCCEED, W.win); break;
    case SYNC_PSCW:
        if (rank == ORIGIN)
            MPI_Win_complete(W.win);
        else
            MPI_Win_wait(W.win);
        break;
    case SYNC_LOCK:
        if (rank == ORIGIN)
            MPI_Win_unlock(TARGET, W.win);
        break;
    default:
        if (rank == ORIGIN)
            MPI_Win_unlock_all(W.win);
    }
}

/* ---- worker threads (origin only) ---- */

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (;;) {
        pthread_barrier_wait(&W.start);
        if (W.quit)
            return NULL;
        if (id < W.active) {
            unsigned char *mine = W.buf + (size_t)id * W.size;
            MPI_Aint disp = (MPI_Aint)((size_t)id * W.size);
            for (long long i = 0; i < W.ops; i++) {
                if (cfg.op == OP_PUT)
                    MPI_Put(mine, (int)W.size, MPI_BYTE, TARGET, disp, (int)W.size, MPI_BYTE,
                            W.win);
                else
                    MPI_Get(mine, (int)W.size, MPI_BYTE, TARGET, disp, (int)W.size, MPI_BYTE,
                            W.win);
                if (cfg.sync == SYNC_FLUSH)
                    MPI_Win_flush(TARGET, W.win);
            }
        }
        pthread_barrier_wait(&W.done);
    }
}

/* One round: the workers run W.ops operations each while the main thread waits. */
static void run_round(void)
{
    pthread_barrier_wait(&W.start);
    pthread_barrier_wait(&W.done);
}

/* ---- watchdog (rank 0): a hang becomes a failed validation record ---- */

static void *watchdog(void *arg)
{
    (void)arg;
    double deadline = xt_now() + cfg.timeout;
    while (!atomic_load(&finished)) {
        if (xt_now() >= deadline) {
            pthread_mutex_lock(&out_lock); /* never released: no other record may follow */
            xt_json *j = xt_json_begin(KERNEL, "validation");
            xt_json_bool(j, "passed", 0);
            xt_json_str(j, "detail", "timeout");
            xt_json_num(j, "timeout_s", cfg.timeout);
            xt_json_str(j, "mode", now_doing.mode);
            xt_json_str(j, "op", op_names[cfg.op]);
            xt_json_str(j, "sync", sync_names[cfg.sync]);
            xt_json_int(j, "threads", now_doing.threads);
            xt_json_int(j, "size", (long long)now_doing.size);
            xt_json_emit(j);
            fprintf(stderr, "%s: --timeout: run not finished after %g s (during %s, %lld threads, "
                    "size %zu); aborting\n", KERNEL, cfg.timeout, now_doing.mode, now_doing.threads,
                    now_doing.size);
            alarm(10); /* in case MPI_Abort itself hangs */
            MPI_Abort(MPI_COMM_WORLD, TIMEOUT_EXIT);
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* ---- output ---- */

static void emit_result(const char *metric, double value, const char *unit, const char *stat,
                        long long threads, size_t size)
{
    pthread_mutex_lock(&out_lock);
    xt_json *j = xt_json_begin(KERNEL, "result");
    xt_json_str(j, "metric", metric);
    xt_json_num(j, "value", value);
    xt_json_str(j, "unit", unit);
    xt_json_str(j, "stat", stat);
    xt_json_str(j, "op", op_names[cfg.op]);
    xt_json_str(j, "sync", sync_names[cfg.sync]);
    xt_json_int(j, "threads", threads);
    xt_json_int(j, "size", (long long)size);
    xt_json_str(j, "sizes", sizes_names[cfg.sizes]);
    xt_json_int(j, "bytes_per_thread", (long long)bytes_per_thread(threads, size));
    xt_json_int(j, "bytes_all_threads", (long long)bytes_per_thread(threads, size) * threads);
    xt_json_int(j, "iterations", cfg.iterations);
    xt_json_int(j, "seed", (long long)cfg.seed);
    if (round_now >= 0)
        xt_json_int(j, "round", round_now);
    xt_json_emit(j);
    pthread_mutex_unlock(&out_lock);
}

static void emit_validation(int passed, const char *detail, const char *mode, long long threads,
                            size_t size)
{
    pthread_mutex_lock(&out_lock);
    xt_json *j = xt_json_begin(KERNEL, "validation");
    xt_json_bool(j, "passed", passed);
    xt_json_str(j, "detail", detail);
    xt_json_str(j, "mode", mode);
    xt_json_str(j, "op", op_names[cfg.op]);
    xt_json_str(j, "sync", sync_names[cfg.sync]);
    xt_json_int(j, "threads", threads);
    xt_json_int(j, "size", (long long)size);
    xt_json_int(j, "bytes_per_thread", (long long)bytes_per_thread(threads, size));
    if (round_now >= 0)
        xt_json_int(j, "round", round_now);
    xt_json_emit(j);
    pthread_mutex_unlock(&out_lock);
}

/* ---- one measurement: bw (one epoch, many ops) or lat (one epoch per iteration) ---- */

/* Returns the number of bad regions (same value on both ranks). `samples` gets the time of
 * each round on the origin: one value for bw, --iterations values for lat. */
static int measure(int rank, int lat, int threads, size_t size, unsigned char *winbase,
                   unsigned char *scratch, double *samples, char *detail, size_t dlen)
{
    size = bytes_per_thread(threads, size); /* from here on: each thread's region */
    size_t span = (size_t)threads * size;
    /* Prepare: the data source gets the pattern, the destination is zeroed. */
    unsigned char *src = cfg.op == OP_PUT ? W.buf : winbase;
    unsigned char *dst = cfg.op == OP_PUT ? winbase : W.buf;
    int src_rank = cfg.op == OP_PUT ? ORIGIN : TARGET;
    if (rank == TARGET) /* local access to window memory: inside a lock on ourselves */
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, W.win);
    if (rank == src_rank)
        for (int t = 0; t < threads; t++)
            fill_pattern(src + (size_t)t * size, size, t, size);
    else
        memset(dst, 0, span);
    if (rank == TARGET)
        MPI_Win_unlock(TARGET, W.win);
    MPI_Barrier(MPI_COMM_WORLD);

    W.active = threads;
    W.size = size;
    W.ops = lat ? 1 : cfg.iterations;
    int rounds = lat ? (int)cfg.iterations : 1;
    /* flush keeps one lock_all epoch for the whole measurement (upstream behaviour) */
    int epoch_per_round = !(lat && cfg.sync == SYNC_FLUSH);
    if (!epoch_per_round)
        open_epoch(rank);
    for (int r = 0; r < rounds; r++) {
        double t0 = xt_now();
        if (epoch_per_round)
            open_epoch(rank);
        if (rank == ORIGIN)
            run_round();
        if (epoch_per_round)
            close_epoch(rank);
        samples[r] = xt_now() - t0;
    }
    if (!epoch_per_round)
        close_epoch(rank);
    MPI_Barrier(MPI_COMM_WORLD); /* passive epochs are complete at the target */

    int bad = 0, all_bad = 0;
    detail[0] = '\0';
    if (rank != src_rank) {
        if (rank == TARGET)
            MPI_Win_lock(MPI_LOCK_SHARED, TARGET, 0, W.win);
        bad = check_regions(dst, threads, size, scratch, detail, dlen);
        if (rank == TARGET)
            MPI_Win_unlock(TARGET, W.win);
    }
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    /* the checking rank's detail goes to rank 0 */
    if (src_rank == ORIGIN) {
        if (rank == TARGET)
            MPI_Send(detail, (int)dlen, MPI_CHAR, ORIGIN, 0, MPI_COMM_WORLD);
        else
            MPI_Recv(detail, (int)dlen, MPI_CHAR, TARGET, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return all_bad;
}

static void set_doing(const char *mode, long long threads, size_t size)
{
    pthread_mutex_lock(&out_lock);
    now_doing.mode = mode;
    now_doing.threads = threads;
    now_doing.size = size;
    pthread_mutex_unlock(&out_lock);
}

int main(int argc, char **argv)
{
    xt_set_prog(KERNEL);
    parse_args(argc, argv); /* before MPI_Init: --help and bad arguments need no launcher */

    int provided, rank, nranks;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (provided < MPI_THREAD_MULTIPLE || nranks != 2) {
        if (rank == 0) {
            if (nranks != 2)
                fprintf(stderr, "%s: needs exactly 2 ranks (origin and target), got %d\n",
                        KERNEL, nranks);
            else
                fprintf(stderr, "%s: MPI_Init_thread: MPI_THREAD_MULTIPLE not provided "
                        "(level %d); with Open MPI use osc/ucx (see --help)\n", KERNEL, provided);
        }
        MPI_Finalize();
        return 2;
    }

    int max_threads = 1;
    for (int k = 0; k < cfg.nthreads; k++)
        max_threads = cfg.threads[k] > max_threads ? (int)cfg.threads[k] : max_threads;
    size_t span = (cfg.sizes == SIZES_TOTAL ? 1 : (size_t)max_threads) * cfg.max_size;
    pthread_t dog;
    if (rank == 0 && cfg.timeout > 0)
        pthread_create(&dog, NULL, watchdog, NULL);

    unsigned char *winbase;
    MPI_Win_allocate(rank == TARGET ? (MPI_Aint)span : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                     &winbase, &W.win);
    MPI_Group world_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    int peer = 1 - rank;
    MPI_Group_incl(world_group, 1, &peer, &peer_group);

    W.buf = rank == ORIGIN ? calloc(1, span) : NULL;
    unsigned char *scratch = malloc(cfg.max_size);
    /* one time per round: --iterations rounds in lat mode, one round in bw mode */
    double *samples = malloc((size_t)(cfg.lat ? cfg.iterations : 1) * sizeof *samples);
    pthread_t *tids = calloc((size_t)max_threads, sizeof *tids);
    if ((rank == ORIGIN && !W.buf) || !scratch || !samples || !tids) {
        fprintf(stderr, "%s: out of memory (%zu bytes per rank)\n", KERNEL, span);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double create_s = 0;
    if (rank == ORIGIN) { /* threads are created once and reused for every measurement */
        pthread_barrier_init(&W.start, NULL, (unsigned)max_threads + 1);
        pthread_barrier_init(&W.done, NULL, (unsigned)max_threads + 1);
        double t0 = xt_now();
        for (int t = 0; t < max_threads; t++)
            pthread_create(&tids[t], NULL, worker, (void *)(intptr_t)t);
        create_s = xt_now() - t0;
    }

    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(lib, &len);
        int *model, flag;
        MPI_Win_get_attr(W.win, MPI_WIN_MODEL, &model, &flag);
        xt_json *j = xt_json_begin(KERNEL, "info");
        lib[strcspn(lib, "\n")] = '\0'; /* MPICH appends its whole configure line */
        xt_json_str(j, "mpi_library", lib);
        xt_json_str(j, "thread_level", "MPI_THREAD_MULTIPLE");
        xt_json_str(j, "window_model", flag && *model == MPI_WIN_UNIFIED ? "unified" : "separate");
        xt_json_str(j, "op", op_names[cfg.op]);
        xt_json_str(j, "sync", sync_names[cfg.sync]);
        xt_json_str(j, "sizes", sizes_names[cfg.sizes]);
        xt_json_int(j, "max_threads", max_threads);
        xt_json_num(j, "thread_create_s", create_s);
        xt_json_num(j, "timeout_s", cfg.timeout);
        xt_json_emit(j);
    }

    int failures = 0;
    char detail[256];
    int per_round = cfg.nsyncs * cfg.nthreads; /* in a round: each sync mode, each thread count */
    for (int step = 0; step < cfg.rounds * per_round; step++) {
        int k = step % cfg.nthreads, threads = (int)cfg.threads[k];
        cfg.sync = cfg.syncs[step / cfg.nthreads % cfg.nsyncs];
        round_now = cfg.rounds > 1 ? step / per_round : -1;
        if (rank == 0 && cfg.table)
            fprintf(stderr, "# %s %s, %d thread(s)\n%10s %10s %16s %16s %14s\n",
                    op_names[cfg.op], sync_names[cfg.sync], threads, "BpT", "BxT",
                    "Bandwidth(MiB/s)", "Op_rate(/s)", "Latency(us)");
        for (size_t size = cfg.min_size; size <= cfg.max_size;
             size = cfg.ends_only && size < cfg.max_size ? cfg.max_size : size * 2) {
            double bw = 0, rate = 0;
            xt_stats lat = {0};
            for (int lat_mode = 0; lat_mode < 2; lat_mode++) {
                if (!(lat_mode ? cfg.lat : cfg.bw))
                    continue;
                const char *mode = lat_mode ? "lat" : "bw";
                set_doing(mode, threads, size);
                int bad = measure(rank, lat_mode, threads, size, winbase, scratch, samples,
                                  detail, sizeof detail);
                failures += bad > 0;
                if (rank != 0)
                    continue;
                emit_validation(bad == 0, bad ? detail : "checksums match", mode, threads, size);
                if (lat_mode) {
                    for (long long i = 0; i < cfg.iterations; i++)
                        samples[i] *= 1e6;
                    lat = xt_stats_of(samples, (size_t)cfg.iterations);
                    emit_result("latency", lat.avg, "us", "avg", threads, size);
                    emit_result("latency", lat.median, "us", "median", threads, size);
                    emit_result("latency", lat.p99, "us", "p99", threads, size);
                    emit_result("latency", lat.min, "us", "min", threads, size);
                } else {
                    double ops = (double)threads * (double)cfg.iterations;
                    bw = ops * (double)bytes_per_thread(threads, size) / samples[0]
                         / (1024.0 * 1024.0);
                    rate = ops / samples[0];
                    emit_result("bandwidth", bw, "MiB/s", "avg", threads, size);
                    emit_result("op_rate", rate, "ops/s", "avg", threads, size);
                }
            }
            if (rank == 0 && cfg.table)
                fprintf(stderr, "%10zu %10zu %16.3f %16.1f %14.2f\n",
                        bytes_per_thread(threads, size), bytes_per_thread(threads, size) * threads,
                        bw, rate, lat.avg);
        }
    }

    if (rank == ORIGIN) {
        W.quit = 1;
        pthread_barrier_wait(&W.start);
        for (int t = 0; t < max_threads; t++)
            pthread_join(tids[t], NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && cfg.timeout > 0) {
        atomic_store(&finished, 1);
        pthread_join(dog, NULL);
    }
    MPI_Group_free(&peer_group);
    MPI_Group_free(&world_group);
    MPI_Win_free(&W.win);
    free(W.buf);
    free(scratch);
    free(samples);
    free(tids);
    MPI_Finalize();
    return failures ? 1 : 0;
}
