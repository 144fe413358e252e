/* xt_common: shared helpers for the crosstalk benchmark kernels (bench/src/xt-*.c).
 *
 * Argument parsing with one-line errors, a monotonic clock, JSON-lines output
 * (docs/architecture.md "Kernel output"), sample statistics and a seeded PRNG.
 */
#ifndef XT_COMMON_H
#define XT_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Argument helpers: on failure they print "PROG: OPTION: problem" to stderr and exit(2).
 * The line is always one line of printable ASCII: other bytes (newlines, control characters,
 * non-ASCII) in the option or in quoted user text become '?', long option names are cut. */
struct option;                                      /* <getopt.h> */
void xt_set_prog(const char *prog);                 /* program name used in messages */
void xt_die(const char *option, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn)); /* one-line error, exit 2 */
/* Call before the getopt_long(argc, argv, "", opts, NULL) loop (kernels take long options only):
 * checks every option against opts the way getopt_long will read it and dies naming the option
 * for an unknown or ambiguous option, any short option ("-x", "-tx"), a value given to a flag
 * ("--table=1") or a missing value (option as last argument). getopt_long alone cannot say
 * which argument failed inside a cluster like "-tx" and reports "--table=1" as a missing value. */
void xt_check_args(int argc, char **argv, const struct option *opts);
/* getopt_long's error branch (not reached after xt_check_args) and the check after the loop
 * (no operands are taken). */
void xt_die_bad_option(char **argv) __attribute__((noreturn));
void xt_no_operands(int argc, char **argv);
long long xt_parse_int(const char *option, const char *text, long long min, long long max);
double    xt_parse_double(const char *option, const char *text, double min, double max);
size_t    xt_parse_size(const char *option, const char *text); /* 64, 4K, 64KiB, 1M, 2G (binary units) */
/* parse a comma list of ints ("1,2,4,8") into out[], returns count; dies on bad input */
int       xt_parse_int_list(const char *option, const char *text, long long *out, int max_n);
double    xt_now(void);                               /* monotonic seconds */
size_t    xt_phys_mem(void); /* bytes of physical memory of this node, 0 if unknown */

/* JSON lines (one object per line on stdout; flushed on emit) */
typedef struct xt_json xt_json;
xt_json *xt_json_begin(const char *kernel, const char *type); /* {"kernel":..,"type":.. */
void xt_json_str(xt_json *j, const char *key, const char *value);  /* escapes properly */
void xt_json_int(xt_json *j, const char *key, long long value);
void xt_json_num(xt_json *j, const char *key, double value);      /* non-finite -> null */
void xt_json_bool(xt_json *j, const char *key, int value);
void xt_json_emit(xt_json *j);                        /* writes the line, frees j */

/* simple statistics over a sample array (sorts a copy) */
typedef struct { double min, max, avg, median, p99, stddev; } xt_stats;
xt_stats xt_stats_of(const double *v, size_t n);

/* seeded PRNG (splitmix64 / xorshift) for reproducible shuffles */
uint64_t xt_rand_next(uint64_t *state);
void xt_shuffle_int(int *a, int n, uint64_t seed);

/* Background load: SIGTERM/SIGINT/SIGUSR1 set a flag (no SA_RESTART, so sleeps and blocking calls
 * return early) and the program finishes its current step and reports. */
void xt_catch_stop_signals(void);
int  xt_stop_requested(void);
/* Sleep until the absolute xt_now() time t (clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME);
 * returns early if a stop signal was caught. */
void xt_sleep_until(double t);

#ifdef __cplusplus
}
#endif
#endif
