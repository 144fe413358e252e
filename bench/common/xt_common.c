/* xt_common: see xt_common.h. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "xt_common.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <getopt.h>
#include <time.h>
#include <unistd.h>

static char xt_prog[64] = "xt";

void xt_set_prog(const char *prog)
{
    const char *base = prog ? strrchr(prog, '/') : NULL;
    base = base ? base + 1 : (prog ? prog : "xt");
    snprintf(xt_prog, sizeof xt_prog, "%s", base);
}

void xt_die(const char *option, const char *fmt, ...)
{
    char msg[512], line[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (option && *option) /* the option may be user text too (an unknown option): cut it */
        snprintf(line, sizeof line, "%s: %.60s%s: %s", xt_prog, option,
                 strlen(option) > 60 ? "..." : "", msg);
    else
        snprintf(line, sizeof line, "%s: %s", xt_prog, msg);
    /* One line of printable ASCII even if it quotes user input: no newline or control
     * character can split it, no invalid UTF-8 can break a reader decoding it. */
    for (unsigned char *p = (unsigned char *)line; *p; p++)
        if (*p < 0x20 || *p >= 0x7f)
            *p = '?';
    fprintf(stderr, "%s\n", line);
    exit(2);
}

/* Quote user text in messages, shortened so errors stay readable. */
static const char *shown(const char *text)
{
    static char buf[48];
    if (!text)
        return "";
    snprintf(buf, sizeof buf, "%.40s%s", text, strlen(text) > 40 ? "..." : "");
    return buf;
}

long long xt_parse_int(const char *option, const char *text, long long min, long long max)
{
    if (!text || !*text)
        xt_die(option, "missing value (expected an integer)");
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || isspace((unsigned char)text[0]))
        xt_die(option, "expected an integer, got '%s'", shown(text));
    if (errno == ERANGE || v < min || v > max)
        xt_die(option, "must be between %lld and %lld, got '%s'", min, max, shown(text));
    return v;
}

double xt_parse_double(const char *option, const char *text, double min, double max)
{
    if (!text || !*text)
        xt_die(option, "missing value (expected a number)");
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || isspace((unsigned char)text[0]))
        xt_die(option, "expected a number, got '%s'", shown(text));
    if (!isfinite(v))
        xt_die(option, "must be a finite number, got '%s'", shown(text));
    if (errno == ERANGE || v < min || v > max)
        xt_die(option, "must be between %g and %g, got '%s'", min, max, shown(text));
    return v;
}

size_t xt_parse_size(const char *option, const char *text)
{
    if (!text || !*text)
        xt_die(option, "missing value (expected a size such as 64, 4K, 64KiB, 1M)");
    if (!isdigit((unsigned char)text[0]))
        xt_die(option, "expected a size such as 64, 4K, 64KiB, 1M, got '%s'", shown(text));
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno == ERANGE)
        xt_die(option, "size too large: '%s'", shown(text));
    /* Binary units only: K = KB = KiB = 1024 (documented in bench/README.md). */
    static const struct { const char *suffix; int shift; } units[] = {
        {"", 0},    {"B", 0},    {"K", 10},   {"KB", 10},  {"KiB", 10},
        {"M", 20},  {"MB", 20},  {"MiB", 20}, {"G", 30},   {"GB", 30},
        {"GiB", 30}, {"T", 40},  {"TB", 40},  {"TiB", 40},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(end, units[i].suffix) == 0) {
            int s = units[i].shift;
            if (s && v > (unsigned long long)(SIZE_MAX >> s))
                xt_die(option, "size too large: '%s'", shown(text));
            return (size_t)(v << s);
        }
    }
    xt_die(option, "unknown size suffix in '%s' (use K, M, G, T; binary units)", shown(text));
}

int xt_parse_int_list(const char *option, const char *text, long long *out, int max_n)
{
    if (!text || !*text)
        xt_die(option, "missing value (expected a comma list of integers)");
    char *copy = strdup(text);
    if (!copy)
        xt_die(option, "out of memory");
    int n = 0;
    char *p = copy;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (n >= max_n)
            xt_die(option, "too many values (at most %d)", max_n);
        if (!*p)
            xt_die(option, "empty element in list '%s'", shown(text));
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || *end != '\0' || isspace((unsigned char)*p) || errno == ERANGE)
            xt_die(option, "expected a comma list of integers, got '%s'", shown(text));
        out[n++] = v;
        if (!comma)
            break;
        p = comma + 1;
    }
    free(copy);
    return n;
}

size_t xt_phys_mem(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0 || (unsigned long)pages > SIZE_MAX / (unsigned long)page)
        return 0;
    return (size_t)pages * (size_t)page;
}

double xt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- JSON lines ---- */

struct xt_json {
    char *buf;
    size_t len, cap;
};

static void jput(xt_json *j, const char *s, size_t n)
{
    if (j->len + n + 1 > j->cap) {
        size_t cap = j->cap ? j->cap : 256;
        while (cap < j->len + n + 1)
            cap *= 2;
        char *b = realloc(j->buf, cap);
        if (!b) {
            fprintf(stderr, "%s: out of memory writing JSON\n", xt_prog);
            exit(1);
        }
        j->buf = b;
        j->cap = cap;
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

static void jputs(xt_json *j, const char *s) { jput(j, s, strlen(s)); }

static void jstring(xt_json *j, const char *s)
{
    jputs(j, "\"");
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        char esc[8];
        switch (*p) {
        case '"':  jputs(j, "\\\""); break;
        case '\\': jputs(j, "\\\\"); break;
        case '\n': jputs(j, "\\n"); break;
        case '\r': jputs(j, "\\r"); break;
        case '\t': jputs(j, "\\t"); break;
        default:
            if (*p < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", *p);
                jputs(j, esc);
            } else {
                jput(j, (const char *)p, 1);
            }
        }
    }
    jputs(j, "\"");
}

static void jkey(xt_json *j, const char *key)
{
    jputs(j, ",");
    jstring(j, key);
    jputs(j, ":");
}

xt_json *xt_json_begin(const char *kernel, const char *type)
{
    xt_json *j = calloc(1, sizeof *j);
    if (!j) {
        fprintf(stderr, "%s: out of memory writing JSON\n", xt_prog);
        exit(1);
    }
    jputs(j, "{\"kernel\":");
    jstring(j, kernel);
    jkey(j, "type");
    jstring(j, type);
    return j;
}

void xt_json_str(xt_json *j, const char *key, const char *value)
{
    jkey(j, key);
    jstring(j, value);
}

void xt_json_int(xt_json *j, const char *key, long long value)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", value);
    jkey(j, key);
    jputs(j, num);
}

void xt_json_num(xt_json *j, const char *key, double value)
{
    char num[40];
    if (isfinite(value))
        snprintf(num, sizeof num, "%.15g", value); /* valid JSON number for finite values */
    else
        snprintf(num, sizeof num, "null");
    jkey(j, key);
    jputs(j, num);
}

void xt_json_bool(xt_json *j, const char *key, int value)
{
    jkey(j, key);
    jputs(j, value ? "true" : "false");
}

void xt_json_emit(xt_json *j)
{
    jputs(j, "}\n");
    fputs(j->buf, stdout);
    fflush(stdout);
    free(j->buf);
    free(j);
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median: mean of the two middle values for even n; p99: nearest-rank
 * (value at rank ceil(0.99 n)); stddev: population (divide by n). n == 0 -> NaN. */
xt_stats xt_stats_of(const double *v, size_t n)
{
    xt_stats s;
    if (n == 0) {
        s.min = s.max = s.avg = s.median = s.p99 = s.stddev = NAN;
        return s;
    }
    double *c = malloc(n * sizeof *c);
    if (!c) {
        fprintf(stderr, "%s: out of memory in statistics\n", xt_prog);
        exit(1);
    }
    memcpy(c, v, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += c[i];
    s.min = c[0];
    s.max = c[n - 1];
    s.avg = sum / (double)n;
    s.median = (n % 2) ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    size_t rank = (size_t)ceil(0.99 * (double)n);
    s.p99 = c[(rank ? rank : 1) - 1];
    double sq = 0;
    for (size_t i = 0; i < n; i++)
        sq += (c[i] - s.avg) * (c[i] - s.avg);
    s.stddev = sqrt(sq / (double)n);
    free(c);
    return s;
}

/* ---- PRNG ---- */

uint64_t xt_rand_next(uint64_t *state) /* splitmix64 */
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void xt_shuffle_int(int *a, int n, uint64_t seed) /* Fisher-Yates */
{
    uint64_t st = seed;
    for (int i = n - 1; i > 0; i--) {
        int k = (int)(xt_rand_next(&st) % (uint64_t)(i + 1));
        int t = a[i];
        a[i] = a[k];
        a[k] = t;
    }
}

/* ---- background load: stop signals and paced sleeps ---- */

static volatile sig_atomic_t xt_stop_flag;

static void on_stop_signal(int sig)
{
    (void)sig;
    xt_stop_flag = 1;
}

void xt_catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: interrupted sleeps return so the loop sees the flag */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    /* mpirun forwards SIGUSR1 to the ranks (Open MPI, MPICH); on SIGTERM Open MPI tears the
     * job down instead, which took 4 s while the ranks ran on */
    sigaction(SIGUSR1, &sa, NULL);
}

int xt_stop_requested(void) { return xt_stop_flag != 0; }

void xt_sleep_until(double t)
{
    if (t <= xt_now()) /* deadline passed: skip the syscall (matters for back-to-back loops) */
        return;
    struct timespec ts;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    while (!xt_stop_flag && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

void xt_check_args(int argc, char **argv, const struct option *opts)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) /* the rest are operands (xt_no_operands reports them) */
            return;
        if (a[0] != '-' || a[1] == '\0') /* operand, "-" included */
            continue;
        if (a[1] != '-') { /* no kernel has short options: "-x", "-tx" */
            char shortopt[3] = {'-', a[1], '\0'};
            xt_die(shortopt, "unknown option (see --help)");
        }
        /* "--name" or "--name=value"; like getopt_long, an exact name wins, else a unique
         * prefix (abbreviation) is taken */
        const char *name = a + 2;
        size_t len = strcspn(name, "=");
        char typed[72];
        snprintf(typed, sizeof typed, "--%.*s%s", len > 60 ? 60 : (int)len, name,
                 len > 60 ? "..." : "");
        const struct option *found = NULL;
        int matches = 0;
        char candidates[256] = "";
        for (const struct option *o = opts; len && o->name; o++) {
            if (strncmp(o->name, name, len) != 0)
                continue;
            if (strlen(o->name) == len) {
                found = o;
                matches = 1;
                break;
            }
            found = o;
            matches++;
            size_t used = strlen(candidates);
            snprintf(candidates + used, sizeof candidates - used, "%s--%s", used ? ", " : "",
                     o->name);
        }
        if (!matches)
            xt_die(typed, "unknown option (see --help)");
        if (matches > 1)
            xt_die(typed, "ambiguous option (could be %s)", candidates);
        char full[72];
        snprintf(full, sizeof full, "--%.60s", found->name);
        if (name[len] == '=') {
            if (found->has_arg == no_argument)
                xt_die(full, "takes no value, got '%.40s'", name + len + 1);
        } else if (found->has_arg == required_argument) {
            if (i + 1 >= argc)
                xt_die(full, "missing value");
            i++; /* its value, whatever it looks like ("-1", "--help"), as getopt_long takes it */
        }
    }
}

void xt_die_bad_option(char **argv)
{
    /* Only reached without xt_check_args: getopt_long does not tell which argument of a cluster
     * failed, so name the last one it looked at. */
    xt_die(argv[optind - 1], "invalid option or missing value (see --help)");
}

void xt_no_operands(int argc, char **argv)
{
    if (optind < argc)
        xt_die(*argv[optind] ? argv[optind] : "''", "unexpected argument (see --help)");
}
