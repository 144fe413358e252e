/* xt-congestion: GPCNeT-style network congestion test (canaries isolated and congested).
 *
 * Method: S. Chunduri, T. Groves, P. Mendygral et al., "GPCNeT: Designing a Benchmark Suite for
 * Inducing and Measuring Contention in HPC Networks", SC'19, section 3 (and 5.2 for the
 * Congestion Impact). Nodes are found with MPI_Get_processor_name and shuffled with --seed;
 * round(--canary-fraction * nodes) (at least 2) run the sensitive "canary" tests, the rest are
 * split evenly (round robin in shuffled order) over the selected congestors, at least 2 nodes
 * each. The Nth rank of every node of a group joins the group's Nth sub-communicator (PPort),
 * so canary and congestor traffic is off-node only.
 * Canaries (section 3.1): random ring two-sided latency (8 B; Irecv/Isend to both ring
 *   neighbours, Waitall, half the iteration time), random ring bandwidth + sync (8 x 128 KiB
 *   to and from each neighbour, then a barrier; 16 messages per iteration), and Allreduce of
 *   8 B. Ring permutations depend on the ring index and --seed only, so every measurement
 *   repeats the same rings. Loop limits as in the paper (nR = 30 rings; nI/warmup 200/200,
 *   8/1, 200/1; --bw-iterations changes the 8); the --time-limit is agreed (MPI_MIN of
 *   elapsed time over all canaries) before every ring, not only every measurement, so slow
 *   oversubscribed runs stay near the limit.
 * Congestors (section 3.2), 4 KiB messages, 512 iterations per measurement (as GPCNeT;
 *   --congestor-iterations changes it): pairwise-exchange all-to-all (a2a), P2P incast to
 *   sub-communicator rank 0 (p2p_incast), MPI_Put incast (rma_incast) and MPI_Get broadcast
 *   from rank 0 (rma_bcast), both in a lock_all epoch with MPI_Win_flush per operation.
 *   Between measurements each congestor sub-communicator agrees (Allreduce) whether the
 *   canaries have finished (an MPI_Ibarrier on MPI_COMM_WORLD).
 * Sequence (section 3.3): all canary tests isolated; then per canary test: congestors warm up
 *   one measurement, release the canaries (barrier), run until the canaries are done.
 *   --rounds K repeats the sequence K times in one job (isolated, congested, isolated, ...): K
 *   paired samples whose pairs are close in time, so drift of a shared host cancels in each
 *   pair's impact. Every result names its round.
 * Report: average, median and 99th percentile of every canary isolated and congested (bandwidth
 *   tail = bytes / 99th percentile of iteration time, the slow side, as GPCNeT prints it). The
 *   congestion impact is computed from these in one place, crosstalk.models.congestion, for this
 *   kernel and upstream GPCNeT alike.
 * Small runs: with fewer nodes than a split needs the program stops with a one-line error;
 *   --allow-shared-nodes (testing only) treats every block of --ppn consecutive ranks (default
 *   1) as its own node, so 4 ranks on one host give 2 canary and 2 congestor "nodes".
 * Samples of all canary ranks are gathered on rank 0 (8 bytes per iteration and rank).
 * Idle ranks sleep: a rank with nothing to do while others measure (every congestor while the
 *   canaries run isolated, the canaries while the congestors warm up or finish their last
 *   measurement) waits in an MPI_Ibarrier it tests every IDLE_POLL_US, never in a blocking MPI
 *   call. Open MPI and MPICH spin in a blocking call; where ranks share cores (the virtual
 *   cluster) the spinning took the measured ranks' CPU, so the canaries measured "isolated"
 *   beside busy nodes, which GPCNeT's idle nodes are not. None of these waits is timed.
 * Waits (common/xt_mpi_wait.h, which says why): congestors wait for their two-sided operations
 *   and their agreement between measurements (MPI_Iallreduce) as load, and a Get broadcast is an
 *   MPI_Rget waited for the same way (for a Get, flush is its completion at the origin); the Put
 *   incast's MPI_Win_flush blocks (MPI has no nonblocking flush). A canary's latency and
 *   bandwidth rings wait as measured waits, the bandwidth ring's closing sync too (an
 *   MPI_Ibarrier: a barrier of a few ranks costs a few latencies in either form, against an
 *   iteration of 2 MiB a rank; the blocking one spun the early ranks through the late one's
 *   transfers, most of a canary's CPU). The Allreduce canary stays a blocking call: it is the
 *   measured operation, and its nonblocking form uses other algorithms.
 * Open MPI over TCP needs OMPI_MCA_osc=pt2pt for the one-sided congestors.
 */
#include "xt_common.h"
#include "xt_mpi_wait.h"

#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERNEL "xt-congestion"
#define CONG_MSG 4096
#define RINGS 30
#define BW_MSG (128 * 1024)
#define BW_MSGS 8 /* per neighbour and direction */
#define IDLE_POLL_US 1000

enum { C_A2A, C_P2P_INCAST, C_RMA_INCAST, C_RMA_BCAST, NCONG };
static const char *const cong_names[] = {"a2a", "p2p_incast", "rma_incast", "rma_bcast", NULL};
static const char *const cong_labels[] = {"Alltoall (4096 B)", "Two-sided Incast (4096 B)",
                                          "Put Incast (4096 B)", "Get Bcast (4096 B)"};

enum { T_LAT, T_BW, T_ALLREDUCE, NCANARY };
static const struct {
    const char *name, *label, *metric, *unit;
    int iters, warmup, max_measurements, bw;
} canary[NCANARY] = {
    {"rr_lat", "RR Two-sided Lat (8 B)", "latency", "us", 200, 200, 10000, 0},
    {"rr_bw_sync", "RR Two-sided BW+Sync (131072 B)", "bandwidth", "MiB/s/rank", 8, 1, 10000, 1},
    {"allreduce", "Multiple Allreduce (8 B)", "latency", "us", 200, 1, 100000, 0},
};

static struct {
    long long ppn;
    double canary_fraction, time_limit;
    uint64_t seed;
    long long bw_iters, cong_iters, rounds;
    int use[NCONG], shared_nodes, table, layout_only;
    char congestors[64];
} cfg = {.canary_fraction = 0.2, .time_limit = 10, .seed = 1, .bw_iters = 8, .cong_iters = 512,
         .rounds = 1, .use = {1, 1, 1, 1},
         .congestors = "a2a,p2p_incast,rma_incast,rma_bcast"};

static void usage(void)
{
    printf("usage: mpirun -np N xt-congestion [options]\n"
           "GPCNeT-style congestion test: canary tests isolated and with congestors running.\n"
           "  --congestors LIST      subset of a2a,p2p_incast,rma_incast,rma_bcast (default all)\n"
           "  --canary-fraction F    fraction of nodes running canaries (default 0.2, >= 2 nodes)\n"
           "  --time-limit S         seconds per test (default 10, as GPCNeT)\n"
           "  --seed N               seed of the node shuffle and the random rings (default 1)\n"
           "  --bw-iterations N      bandwidth canary iterations per ring (default 8, as GPCNeT;\n"
           "                         fewer make a ring shorter where links are slow)\n"
           "  --congestor-iterations N  messages per congestor measurement (default 512, as\n"
           "                         GPCNeT); congestors check for the canaries' end between\n"
           "                         measurements, so fewer end a congested phase sooner\n"
           "  --rounds K             isolated then congested, K times in one job (default 1);\n"
           "                         every result names its round (0 .. K-1)\n"
           "  --ppn N                ranks per node (PPort); checked against the detected layout\n"
           "  --allow-shared-nodes   testing only: every block of --ppn ranks (default 1) is a\n"
           "                         node, whatever MPI_Get_processor_name says\n"
           "  --layout-only          print the layout (the info record: which nodes run the\n"
           "                         canaries and each congestor) and measure nothing\n"
           "  --table                human-readable tables on stderr\n"
           "  --help                 this text\n"
           "Needs at least 2 canary nodes and 2 nodes per selected congestor.\n");
}

static void parse_congestors(const char *text)
{
    if (!text || !*text)
        xt_die("--congestors", "missing value (a comma list of %s)", "a2a,p2p_incast,...");
    if (strlen(text) >= sizeof cfg.congestors)
        xt_die("--congestors", "list too long");
    if (text[strlen(text) - 1] == ',' || text[0] == ',' || strstr(text, ",,"))
        xt_die("--congestors", "empty element in '%.40s'", text);
    char copy[sizeof cfg.congestors];
    snprintf(copy, sizeof copy, "%s", text);
    memset(cfg.use, 0, sizeof cfg.use);
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        int k = 0;
        while (cong_names[k] && strcmp(tok, cong_names[k]) != 0)
            k++;
        if (!cong_names[k])
            xt_die("--congestors", "unknown congestor '%.40s' (use a2a, p2p_incast, rma_incast, "
                   "rma_bcast)", tok);
        if (cfg.use[k])
            xt_die("--congestors", "'%s' given twice", tok);
        cfg.use[k] = 1;
    }
    snprintf(cfg.congestors, sizeof cfg.congestors, "%s", text);
}

static void parse_args(int argc, char **argv)
{
    static const struct option opts[] = {
        {"congestors", required_argument, 0, 'c'}, {"canary-fraction", required_argument, 0, 'f'},
        {"time-limit", required_argument, 0, 'l'}, {"seed", required_argument, 0, 's'},
        {"ppn", required_argument, 0, 'p'},        {"allow-shared-nodes", no_argument, 0, 'a'},
        {"table", no_argument, 0, 'T'},            {"help", no_argument, 0, 'h'},
        {"bw-iterations", required_argument, 0, 'b'}, {"rounds", required_argument, 0, 'r'},
        {"congestor-iterations", required_argument, 0, 'i'}, {"layout-only", no_argument, 0, 'L'},
        {0, 0, 0, 0},
    };
    opterr = 0;
    xt_check_args(argc, argv, opts); /* unknown options, flags with values, missing values */
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'c': parse_congestors(optarg); break;
        case 'f': cfg.canary_fraction = xt_parse_double("--canary-fraction", optarg, 0, 1); break;
        case 'l': cfg.time_limit = xt_parse_double("--time-limit", optarg, 0.001, 1e6); break;
        case 's': cfg.seed = (uint64_t)xt_parse_int("--seed", optarg, 0, INT64_MAX); break;
        case 'p': cfg.ppn = xt_parse_int("--ppn", optarg, 1, 1 << 20); break;
        case 'b': cfg.bw_iters = xt_parse_int("--bw-iterations", optarg, 1, 1 << 20); break;
        case 'i':
            cfg.cong_iters = xt_parse_int("--congestor-iterations", optarg, 1, 1 << 20);
            break;
        case 'r': cfg.rounds = xt_parse_int("--rounds", optarg, 1, 1000); break;
        case 'a': cfg.shared_nodes = 1; break;
        case 'T': cfg.table = 1; break;
        case 'L': cfg.layout_only = 1; break;
        case 'h': usage(); exit(0);
        default:
            xt_die_bad_option(argv);
        }
    }
    xt_no_operands(argc, argv);
    if (cfg.canary_fraction <= 0 || cfg.canary_fraction >= 1)
        xt_die("--canary-fraction", "must be strictly between 0 and 1, got %g",
               cfg.canary_fraction);
}

/* ---- layout: nodes, roles, sub-communicators ---- */

#define ROLE_CANARY (-1)

typedef struct {
    int nnodes, ppn, ncanary, ncong_nodes;
    int *node_of_rank; /* node index (first appearance order) per world rank */
    int *role_of_node; /* ROLE_CANARY or congestor kind */
    int *order;        /* shuffled node list */
    char (*names)[MPI_MAX_PROCESSOR_NAME];
    int my_role, my_local; /* my node's role, my index among my node's ranks */
} layout;

/* Computes the same layout on every rank; returns an error message (rank 0 prints it). */
static const char *make_layout(layout *L, int rank, int nranks, char *err, size_t elen)
{
    L->names = calloc((size_t)nranks, sizeof *L->names);
    L->node_of_rank = calloc((size_t)nranks, sizeof(int));
    char me[MPI_MAX_PROCESSOR_NAME] = {0};
    int len;
    MPI_Get_processor_name(me, &len);
    MPI_Allgather(me, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, L->names, MPI_MAX_PROCESSOR_NAME,
                  MPI_CHAR, MPI_COMM_WORLD);
    int ppn_shared = cfg.ppn ? (int)cfg.ppn : 1;
    if (cfg.shared_nodes && nranks % ppn_shared) {
        snprintf(err, elen, "--ppn: %d ranks cannot form nodes of %d ranks", nranks, ppn_shared);
        return err;
    }
    L->nnodes = 0;
    for (int r = 0; r < nranks; r++) {
        if (cfg.shared_nodes) {
            L->node_of_rank[r] = r / ppn_shared;
            L->nnodes = r / ppn_shared + 1;
            continue;
        }
        int k = 0;
        while (k < r && strcmp(L->names[k], L->names[r]) != 0)
            k++;
        L->node_of_rank[r] = k < r ? L->node_of_rank[k] : L->nnodes++;
    }
    /* every node must hold the same number of ranks (PPort sub-communicators) */
    int *count = calloc((size_t)L->nnodes, sizeof(int));
    for (int r = 0; r < nranks; r++) {
        if (r == rank)
            L->my_local = count[L->node_of_rank[r]];
        count[L->node_of_rank[r]]++;
    }
    L->ppn = count[0];
    for (int n = 1; n < L->nnodes; n++)
        if (count[n] != L->ppn) {
            snprintf(err, elen, "--ppn: nodes hold different rank counts (%d and %d); use the "
                     "same number of ranks on every node", L->ppn, count[n]);
            free(count);
            return err;
        }
    free(count);
    if (cfg.ppn && cfg.ppn != L->ppn) {
        snprintf(err, elen, "--ppn: given %lld but found %d rank(s) per node", cfg.ppn, L->ppn);
        return err;
    }
    int kinds[NCONG], nk = 0;
    for (int k = 0; k < NCONG; k++)
        if (cfg.use[k])
            kinds[nk++] = k;
    L->ncanary = (int)(cfg.canary_fraction * L->nnodes + 0.5);
    if (L->ncanary < 2)
        L->ncanary = 2;
    L->ncong_nodes = L->nnodes - L->ncanary;
    if (L->ncong_nodes < 2 * nk) {
        snprintf(err, elen, "found %d node(s) (%s), need 2 canary nodes and 2 per congestor "
                 "(%d for --congestors %s); fewer congestors, a smaller --canary-fraction, or "
                 "--allow-shared-nodes for a one-host test", L->nnodes,
                 cfg.shared_nodes ? "--allow-shared-nodes" : "by MPI_Get_processor_name",
                 2 + 2 * nk, cfg.congestors);
        return err;
    }
    L->order = malloc((size_t)L->nnodes * sizeof(int));
    L->role_of_node = malloc((size_t)L->nnodes * sizeof(int));
    for (int n = 0; n < L->nnodes; n++)
        L->order[n] = n;
    xt_shuffle_int(L->order, L->nnodes, cfg.seed);
    for (int i = 0; i < L->nnodes; i++)
        L->role_of_node[L->order[i]] = i < L->ncanary ? ROLE_CANARY : kinds[(i - L->ncanary) % nk];
    L->my_role = L->role_of_node[L->node_of_rank[rank]];
    return NULL;
}

/* ---- sample vectors ---- */

typedef struct {
    double *v;
    size_t n, cap;
} vec;

static void vec_push(vec *s, double x)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 4096;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v) {
            fprintf(stderr, "%s: out of memory for samples\n", KERNEL);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    s->v[s->n++] = x;
}

/* ---- canaries ---- */

typedef struct {
    MPI_Comm sub, all; /* my PPort sub-communicator; all canary ranks (time limit) */
    unsigned char *sbuf, *rbuf;
} canary_ctx;

/* Agreed on all canary ranks: has every one of them used up the time limit? */
static int time_up(MPI_Comm all, double t_start)
{
    double elapsed = xt_now() - t_start;
    MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MIN, all);
    return elapsed > cfg.time_limit;
}

static void ring_neighbours(MPI_Comm sub, int ring, int *left, int *right)
{
    int n, me;
    MPI_Comm_size(sub, &n);
    MPI_Comm_rank(sub, &me);
    int *perm = malloc((size_t)n * sizeof *perm);
    for (int i = 0; i < n; i++)
        perm[i] = i;
    xt_shuffle_int(perm, n, cfg.seed ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(ring + 1)));
    int p = 0;
    while (perm[p] != me)
        p++;
    *left = perm[(p + n - 1) % n];
    *right = perm[(p + 1) % n];
    free(perm);
}

/* One iteration of a canary kernel; returns the sample (us, or seconds for rr_bw_sync). */
static double canary_iter(int test, canary_ctx *c, int left, int right)
{
    enum { TAG_TO_RIGHT = 1, TAG_TO_LEFT = 2 };
    MPI_Request rq[4 * BW_MSGS];
    double t0 = xt_now();
    if (test == T_LAT) {
        MPI_Irecv(c->rbuf, 8, MPI_BYTE, left, TAG_TO_RIGHT, c->sub, &rq[0]);
        MPI_Irecv(c->rbuf + 8, 8, MPI_BYTE, right, TAG_TO_LEFT, c->sub, &rq[1]);
        MPI_Isend(c->sbuf, 8, MPI_BYTE, right, TAG_TO_RIGHT, c->sub, &rq[2]);
        MPI_Isend(c->sbuf, 8, MPI_BYTE, left, TAG_TO_LEFT, c->sub, &rq[3]);
        xt_wait_all(4, rq, t0, XT_MEASURED_SPIN_S, XT_MEASURED_FRACTION);
        return (xt_now() - t0) / 2 * 1e6; /* round trip -> one way */
    }
    if (test == T_BW) {
        int n = 0;
        for (int m = 0; m < BW_MSGS; m++) {
            MPI_Irecv(c->rbuf + (size_t)(2 * m) * BW_MSG, BW_MSG, MPI_BYTE, left, TAG_TO_RIGHT,
                      c->sub, &rq[n++]);
            MPI_Irecv(c->rbuf + (size_t)(2 * m + 1) * BW_MSG, BW_MSG, MPI_BYTE, right,
                      TAG_TO_LEFT, c->sub, &rq[n++]);
        }
        for (int m = 0; m < BW_MSGS; m++) {
            MPI_Isend(c->sbuf, BW_MSG, MPI_BYTE, right, TAG_TO_RIGHT, c->sub, &rq[n++]);
            MPI_Isend(c->sbuf, BW_MSG, MPI_BYTE, left, TAG_TO_LEFT, c->sub, &rq[n++]);
        }
        xt_wait_all(n, rq, t0, XT_MEASURED_SPIN_S, XT_MEASURED_FRACTION);
        MPI_Ibarrier(c->sub, &rq[0]); /* the sync, waited for as part of the sample */
        xt_wait_all(1, rq, t0, XT_MEASURED_SPIN_S, XT_MEASURED_FRACTION);
        return xt_now() - t0;
    }
    double x = 1.0, y;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, c->sub);
    return (xt_now() - t0) * 1e6;
}

/* Random ring infrastructure (GPCNeT Listing 1); Allreduce uses one "ring" per measurement. */
static void run_canary(int test, canary_ctx *c, vec *out)
{
    int rings = test == T_ALLREDUCE ? 1 : RINGS, left = 0, right = 0;
    int iters = test == T_BW ? (int)cfg.bw_iters : canary[test].iters;
    double t_start = xt_now();
    for (int m = 0; m < canary[test].max_measurements; m++) {
        for (int ring = 0; ring < rings; ring++) {
            if (time_up(c->all, t_start))
                return;
            if (test != T_ALLREDUCE)
                ring_neighbours(c->sub, ring, &left, &right);
            for (int i = -canary[test].warmup; i < iters; i++) {
                double s = canary_iter(test, c, left, right);
                if (i >= 0)
                    vec_push(out, s);
            }
        }
    }
}

/* ---- congestors ---- */

typedef struct {
    int kind;
    MPI_Comm sub;
    MPI_Win win;
    unsigned char *sbuf, *rbuf, *winbase;
    double bytes, seconds; /* moved by this rank while measuring */
} cong_ctx;

static void cong_setup(cong_ctx *c)
{
    int n, me;
    MPI_Comm_size(c->sub, &n);
    MPI_Comm_rank(c->sub, &me);
    c->sbuf = calloc(1, CONG_MSG);
    c->rbuf = calloc((size_t)n, CONG_MSG);
    if (c->kind == C_RMA_INCAST || c->kind == C_RMA_BCAST) {
        MPI_Aint wsize = me != 0 ? 0 : c->kind == C_RMA_INCAST ? (MPI_Aint)(n - 1) * CONG_MSG
                                                               : CONG_MSG;
        MPI_Win_allocate(wsize, 1, MPI_INFO_NULL, c->sub, &c->winbase, &c->win);
        MPI_Win_lock_all(0, c->win); /* one passive epoch for the whole run */
    }
}

static void cong_teardown(cong_ctx *c)
{
    if (c->kind == C_RMA_INCAST || c->kind == C_RMA_BCAST) {
        MPI_Win_unlock_all(c->win);
        MPI_Win_free(&c->win);
    }
    free(c->sbuf);
    free(c->rbuf);
}

/* Wait for a congestor's requests (see "Waits" above). */
static void cong_wait(int n, MPI_Request *rq)
{
    xt_wait_all(n, rq, xt_now(), XT_LOAD_SPIN_S, XT_LOAD_FRACTION);
}

/* One congestor iteration; returns the bytes this rank moved. Rank 0 of an incast/bcast is the
 * root; one-sided roots are passive (their MPI calls elsewhere drive progress). */
static double cong_iter(cong_ctx *c)
{
    int n, me;
    MPI_Comm_size(c->sub, &n);
    MPI_Comm_rank(c->sub, &me);
    MPI_Request rq[2];
    switch (c->kind) {
    case C_A2A: /* pairwise exchange */
        for (int k = 1; k < n; k++) {
            MPI_Irecv(c->rbuf + (size_t)k * CONG_MSG, CONG_MSG, MPI_BYTE, (me - k + n) % n, 3,
                      c->sub, &rq[0]);
            MPI_Isend(c->sbuf, CONG_MSG, MPI_BYTE, (me + k) % n, 3, c->sub, &rq[1]);
            cong_wait(2, rq);
        }
        return (double)(n - 1) * CONG_MSG;
    case C_P2P_INCAST:
        if (me == 0) {
            MPI_Request *all = malloc((size_t)(n - 1) * sizeof *all);
            for (int r = 1; r < n; r++)
                MPI_Irecv(c->rbuf + (size_t)r * CONG_MSG, CONG_MSG, MPI_BYTE, r, 4, c->sub,
                          &all[r - 1]);
            cong_wait(n - 1, all);
            free(all);
            return (double)(n - 1) * CONG_MSG;
        }
        MPI_Isend(c->sbuf, CONG_MSG, MPI_BYTE, 0, 4, c->sub, &rq[0]);
        cong_wait(1, rq);
        return CONG_MSG;
    case C_RMA_INCAST:
        if (me == 0)
            return 0;
        MPI_Put(c->sbuf, CONG_MSG, MPI_BYTE, 0, (MPI_Aint)(me - 1) * CONG_MSG, CONG_MSG, MPI_BYTE,
                c->win);
        MPI_Win_flush(0, c->win);
        return CONG_MSG;
    default: /* C_RMA_BCAST */
        if (me == 0)
            return 0;
        MPI_Rget(c->rbuf, CONG_MSG, MPI_BYTE, 0, 0, CONG_MSG, MPI_BYTE, c->win, &rq[0]);
        cong_wait(1, rq);
        return CONG_MSG;
    }
}

/* Wait for ``req`` without spinning (see "Idle ranks sleep" above): MPI_Test, then sleep. */
static void wait_idle(MPI_Request *req)
{
    int done = 0;
    for (MPI_Test(req, &done, MPI_STATUS_IGNORE); !done; MPI_Test(req, &done, MPI_STATUS_IGNORE))
        xt_sleep_until(xt_now() + IDLE_POLL_US * 1e-6);
}

/* A barrier on MPI_COMM_WORLD that an early rank waits in asleep. */
static void idle_barrier(void)
{
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    wait_idle(&req);
}

static void cong_measurement(cong_ctx *c)
{
    double t0 = xt_now(), bytes = 0;
    for (long long i = 0; i < cfg.cong_iters; i++)
        bytes += cong_iter(c);
    c->bytes += bytes;
    c->seconds += xt_now() - t0;
}

/* Congested phase on a congestor rank: warm up, release the canaries, run until they finish. */
static void run_congestor(cong_ctx *c)
{
    cong_measurement(c); /* warm-up, not counted */
    c->bytes = c->seconds = 0;
    idle_barrier(); /* releases the canaries */
    MPI_Request done;
    MPI_Ibarrier(MPI_COMM_WORLD, &done);
    int finished = 0, any = 0;
    for (;;) {
        if (!finished)
            MPI_Test(&done, &finished, MPI_STATUS_IGNORE);
        MPI_Request agreed;
        MPI_Iallreduce(&finished, &any, 1, MPI_INT, MPI_MAX, c->sub, &agreed);
        cong_wait(1, &agreed);
        if (any)
            break;
        cong_measurement(c);
    }
    if (!finished)
        wait_idle(&done);
}

/* ---- reporting ---- */

typedef struct {
    double avg, p99, median;
    long long n;
} summary;

/* Gathers all canary samples on rank 0 and summarises them (bandwidth: tail = slow side). */
static summary summarise(int test, const vec *mine, int rank, int nranks)
{
    int n = (int)mine->n, *counts = NULL, *displs = NULL;
    double *all = NULL;
    summary s = {0};
    if (rank == 0) {
        counts = malloc((size_t)nranks * sizeof(int));
        displs = malloc((size_t)nranks * sizeof(int));
    }
    MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    long long total = 0;
    if (rank == 0) {
        for (int r = 0; r < nranks; r++) {
            displs[r] = (int)total;
            total += counts[r];
        }
        all = malloc((size_t)(total ? total : 1) * sizeof *all);
    }
    MPI_Gatherv(mine->v, n, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        xt_stats st = xt_stats_of(all, (size_t)total);
        s.n = total;
        if (canary[test].bw) { /* samples are iteration times in seconds */
            double bytes = 2.0 * BW_MSGS * BW_MSG, mib = 1024.0 * 1024.0, sum = 0;
            for (long long i = 0; i < total; i++)
                sum += bytes / all[i] / mib;
            s.avg = total ? sum / (double)total : 0;
            s.p99 = bytes / st.p99 / mib;
            s.median = bytes / st.median / mib;
        } else {
            s.avg = st.avg;
            s.p99 = st.p99;
            s.median = st.median;
        }
    }
    free(counts);
    free(displs);
    free(all);
    return s;
}

static const layout *LAY;
static long long ROUND; /* the round being measured (--rounds) */

static void params(xt_json *j)
{
    xt_json_int(j, "nodes", LAY->nnodes);
    xt_json_int(j, "ppn", LAY->ppn);
    xt_json_int(j, "canary_nodes", LAY->ncanary);
    xt_json_int(j, "congestor_nodes", LAY->ncong_nodes);
    xt_json_str(j, "congestors", cfg.congestors);
    xt_json_num(j, "canary_fraction", cfg.canary_fraction);
    xt_json_num(j, "time_limit_s", cfg.time_limit);
    xt_json_int(j, "bw_iterations", cfg.bw_iters);
    xt_json_int(j, "rounds", cfg.rounds);
    xt_json_int(j, "congestor_iterations", cfg.cong_iters);
    xt_json_int(j, "seed", (long long)cfg.seed);
    xt_json_bool(j, "shared_nodes", cfg.shared_nodes);
}

static void emit(const char *metric, double value, const char *unit, const char *stat,
                 const char *key, const char *name, const char *phase, long long samples)
{
    xt_json *j = xt_json_begin(KERNEL, "result");
    xt_json_int(j, "round", ROUND);
    xt_json_str(j, "metric", metric);
    xt_json_num(j, "value", value);
    xt_json_str(j, "unit", unit);
    xt_json_str(j, "stat", stat);
    xt_json_str(j, key, name);
    if (phase)
        xt_json_str(j, "phase", phase);
    if (samples >= 0)
        xt_json_int(j, "samples", samples);
    params(j);
    xt_json_emit(j);
}

static void emit_canary(int test, const char *phase, summary s)
{
    const char *stats[] = {"avg", "p99", "median"};
    double v[] = {s.avg, s.p99, s.median};
    for (int k = 0; k < 3; k++)
        emit(canary[test].metric, v[k], canary[test].unit, stats[k], "canary", canary[test].name,
             phase, s.n);
}

static void table_rule(void)
{
    fprintf(stderr, "+%s+%s+%s+%s+\n", "---------------------------------", "--------------",
            "--------------", "--------------");
}

static void print_table(const char *title, summary s[NCANARY])
{
    fprintf(stderr, "%s\n", title);
    table_rule();
    fprintf(stderr, "|%32s |%13s |%13s |%13s |\n", "Name", "Avg", "99%", "Units");
    table_rule();
    for (int t = 0; t < NCANARY; t++) {
        fprintf(stderr, "|%32s |%13.1f |%13.1f |%13s |\n", canary[t].label, s[t].avg, s[t].p99,
                canary[t].unit);
        table_rule();
    }
}

/* Layout and library; node lists per group in shuffled order, like GPCNeT's *_congestion.dat. */
static void emit_info(const layout *L)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n")] = '\0';
    xt_json *j = xt_json_begin(KERNEL, "info");
    xt_json_str(j, "mpi_library", lib);
    params(j);
    for (int g = -1; g < NCONG; g++) {
        if (g >= 0 && !cfg.use[g])
            continue;
        char list[4096] = "";
        for (int i = 0; i < L->nnodes; i++) {
            int node = L->order[i];
            if (L->role_of_node[node] != g)
                continue;
            int r0 = 0;
            while (L->node_of_rank[r0] != node)
                r0++;
            char item[MPI_MAX_PROCESSOR_NAME + 16];
            if (cfg.shared_nodes)
                snprintf(item, sizeof item, "%s#%d", L->names[r0], node);
            else
                snprintf(item, sizeof item, "%s", L->names[r0]);
            if (strlen(list) + strlen(item) + 2 < sizeof list)
                strcat(strcat(list, *list ? "," : ""), item);
        }
        char key[48];
        snprintf(key, sizeof key, "nodes_%s", g < 0 ? "canary" : cong_names[g]);
        xt_json_str(j, key, list);
    }
    xt_json_emit(j);
}

/* One round: every canary test isolated, then each under the congestors; emits its results. */
static void run_round(const layout *L, canary_ctx *cc, cong_ctx *gc, int rank, int nranks)
{
    int is_canary = L->my_role == ROLE_CANARY;
    /* Isolated: every canary test with the congestor nodes idle. */
    summary iso[NCANARY], con[NCANARY];
    for (int t = 0; t < NCANARY; t++) {
        vec s = {0};
        MPI_Barrier(MPI_COMM_WORLD);
        if (is_canary)
            run_canary(t, cc, &s);
        idle_barrier(); /* the congestor nodes idle, as in GPCNeT, not spinning in the gather */
        iso[t] = summarise(t, &s, rank, nranks);
        free(s.v);
        if (rank == 0)
            emit_canary(t, "isolated", iso[t]);
    }
    /* Congested: per canary test, congestors warm up, release the canaries and run until the
     * canaries enter the closing Ibarrier. */
    for (int t = 0; t < NCANARY; t++) {
        vec s = {0};
        MPI_Barrier(MPI_COMM_WORLD);
        if (is_canary) {
            idle_barrier(); /* wait for the congestors' warm-up */
            run_canary(t, cc, &s);
            MPI_Request done;
            MPI_Ibarrier(MPI_COMM_WORLD, &done);
            wait_idle(&done); /* until the congestors end their current measurement */
        } else {
            run_congestor(gc);
        }
        con[t] = summarise(t, &s, rank, nranks);
        free(s.v);
        /* congestor rates: sum of bytes and of per-rank rates per congestor kind */
        double mine[2 * NCONG] = {0}, sum[2 * NCONG];
        if (!is_canary && gc->seconds > 0 && gc->bytes > 0) {
            mine[2 * gc->kind] = gc->bytes / gc->seconds / (1024.0 * 1024.0);
            mine[2 * gc->kind + 1] = 1;
        }
        MPI_Reduce(mine, sum, 2 * NCONG, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank != 0)
            continue;
        emit_canary(t, "congested", con[t]);
        for (int k = 0; k < NCONG; k++) {
            if (!cfg.use[k] || sum[2 * k + 1] == 0)
                continue;
            xt_json *j = xt_json_begin(KERNEL, "result");
            xt_json_int(j, "round", ROUND);
            xt_json_str(j, "metric", "congestor_bandwidth");
            xt_json_num(j, "value", sum[2 * k] / sum[2 * k + 1]);
            xt_json_str(j, "unit", "MiB/s/rank");
            xt_json_str(j, "stat", "avg");
            xt_json_str(j, "congestor", cong_names[k]);
            xt_json_str(j, "label", cong_labels[k]);
            xt_json_str(j, "during", canary[t].name);
            xt_json_int(j, "ranks", (long long)sum[2 * k + 1]);
            params(j);
            xt_json_emit(j);
        }
    }

    if (rank == 0) {
        if (cfg.table) {
            fprintf(stderr, "%s: round %lld: %d nodes x %d ppn, %d canary nodes, "
                    "%d congestor nodes (%s)\n", KERNEL, ROUND, L->nnodes, L->ppn, L->ncanary,
                    L->ncong_nodes, cfg.congestors);
            print_table("Isolated Network Tests", iso);
            print_table("Network Tests running with Congestion Tests", con);
        }
    }
}

int main(int argc, char **argv)
{
    xt_set_prog(KERNEL);
    parse_args(argc, argv); /* before MPI_Init: --help and bad arguments need no launcher */
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    layout L = {0};
    char err[512];
    if (make_layout(&L, rank, nranks, err, sizeof err)) {
        if (rank == 0)
            fprintf(stderr, "%s: %s\n", KERNEL, err);
        MPI_Finalize();
        return 2;
    }
    LAY = &L;
    int is_canary = L.my_role == ROLE_CANARY;
    /* PPort sub-communicators: colour = (group, index on node); key = shuffled node position */
    int pos = 0;
    while (L.order[pos] != L.node_of_rank[rank])
        pos++;
    MPI_Comm sub, all_canaries;
    MPI_Comm_split(MPI_COMM_WORLD, (L.my_role + 1) * L.ppn + L.my_local, pos, &sub);
    MPI_Comm_split(MPI_COMM_WORLD, is_canary ? 0 : MPI_UNDEFINED, rank, &all_canaries);

    canary_ctx cc = {.sub = sub, .all = all_canaries};
    cong_ctx gc = {.kind = L.my_role, .sub = sub};
    if (is_canary) {
        cc.sbuf = calloc(1, BW_MSG);
        cc.rbuf = calloc(2 * BW_MSGS, BW_MSG);
    } else {
        cong_setup(&gc);
    }

    if (rank == 0)
        emit_info(&L);

    for (ROUND = 0; ROUND < (cfg.layout_only ? 0 : cfg.rounds); ROUND++)
        run_round(&L, &cc, &gc, rank, nranks);

    if (is_canary) {
        free(cc.sbuf);
        free(cc.rbuf);
        MPI_Comm_free(&all_canaries);
    } else {
        cong_teardown(&gc);
    }
    MPI_Comm_free(&sub);
    free(L.names);
    free(L.node_of_rank);
    free(L.order);
    free(L.role_of_node);
    MPI_Finalize();
    return 0;
}
