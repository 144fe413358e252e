/* Test driver for bench/common (xt_common): exposes each helper on the command line so
 * tests/bench/test_common.py can check it from Python. Not installed. */
#include "xt_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    xt_set_prog("/some/dir/xt-check");
    if (argc < 2)
        return 3;
    const char *mode = argv[1];
    if (!strcmp(mode, "size") && argc == 3) {
        printf("%zu\n", xt_parse_size("--size", argv[2]));
    } else if (!strcmp(mode, "int") && argc == 3) {
        printf("%lld\n", xt_parse_int("--int", argv[2], -5, 1000));
    } else if (!strcmp(mode, "double") && argc == 3) {
        printf("%.17g\n", xt_parse_double("--num", argv[2], 0.5, 10));
    } else if (!strcmp(mode, "list") && argc == 3) {
        long long v[4];
        int n = xt_parse_int_list("--list", argv[2], v, 4);
        for (int i = 0; i < n; i++)
            printf("%lld%s", v[i], i + 1 < n ? "," : "\n");
    } else if (!strcmp(mode, "stats")) {
        int n = argc - 2;
        double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
        for (int i = 0; i < n; i++)
            v[i] = xt_parse_double("value", argv[i + 2], -1e300, 1e300);
        xt_stats s = xt_stats_of(v, (size_t)n);
        xt_json *j = xt_json_begin("xt-check", "result");
        xt_json_num(j, "min", s.min);
        xt_json_num(j, "max", s.max);
        xt_json_num(j, "avg", s.avg);
        xt_json_num(j, "median", s.median);
        xt_json_num(j, "p99", s.p99);
        xt_json_num(j, "stddev", s.stddev);
        xt_json_emit(j);
        free(v);
    } else if (!strcmp(mode, "json") && argc == 3) {
        xt_json *j = xt_json_begin("xt-check", "info");
        xt_json_str(j, "text", argv[2]);
        xt_json_str(j, "ctl", "tab\there\nnew \x01 \"q\" back\\slash");
        xt_json_int(j, "big", -9223372036854775807LL);
        xt_json_num(j, "pi", 3.14159265358979);
        xt_json_num(j, "inf", INFINITY);
        xt_json_num(j, "nan", NAN);
        xt_json_bool(j, "yes", 1);
        xt_json_bool(j, "no", 0);
        xt_json_emit(j);
    } else if (!strcmp(mode, "shuffle") && argc == 4) {
        int n = (int)xt_parse_int("n", argv[2], 0, 1000);
        int *a = malloc((size_t)(n ? n : 1) * sizeof *a);
        for (int i = 0; i < n; i++)
            a[i] = i;
        xt_shuffle_int(a, n, (uint64_t)xt_parse_int("seed", argv[3], 0, 1LL << 62));
        for (int i = 0; i < n; i++)
            printf("%d%s", a[i], i + 1 < n ? "," : "");
        printf("\n");
        free(a);
    } else if (!strcmp(mode, "sleep") && argc == 3) {
        double d = xt_parse_double("seconds", argv[2], 0, 60), t0 = xt_now();
        xt_catch_stop_signals();
        xt_sleep_until(t0 + d);
        printf("%.6f %d\n", xt_now() - t0, xt_stop_requested());
    } else {
        xt_die(mode, "unknown mode");
    }
    return 0;
}
