"""bench/common (xt_common) checked through a small C driver linked against the built library."""
import json
import signal
import statistics
import subprocess
import time
from pathlib import Path

import pytest
from xt_bench import BENCH_SRC

#: Kernel tests: CMake builds (release and ASan) and many MPI jobs; minutes, so not in the fast tier.
pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
ENV = {"ASAN_OPTIONS": "detect_leaks=1", "PATH": "/usr/bin:/bin"}


@pytest.fixture(scope="module", params=["release", "asan"])
def check(request, tmp_path_factory):
    build = request.getfixturevalue("bench_bin" if request.param == "release" else "bench_asan_bin")
    exe = tmp_path_factory.mktemp("xtcheck") / "xt-check"
    flags = ["-fsanitize=address,undefined"] if request.param == "asan" else ["-O2"]
    subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-D_POSIX_C_SOURCE=200809L",
                    *flags, "-I", str(BENCH_SRC / "common"), str(HERE / "xt_common_check.c"),
                    str(build / "libxtcommon.a"), "-lm", "-o", str(exe)], check=True)

    def run(*args):
        return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=30,
                              env=ENV)
    run.exe = exe
    return run


@pytest.mark.parametrize("text,value", [
    ("64", 64), ("0", 0), ("4K", 4096), ("64KiB", 65536), ("64kb", 65536), ("1M", 2**20),
    ("2G", 2 * 2**30), ("3MiB", 3 * 2**20), ("1T", 2**40), ("10B", 10),
])
def test_parse_size(check, text, value):
    res = check("size", text)
    assert res.returncode == 0 and int(res.stdout) == value


@pytest.mark.parametrize("mode,text,problem", [
    ("size", "", "missing value"), ("size", "-1", "expected a size"), ("size", "1.5K", "suffix"),
    ("size", "4Q", "unknown size suffix"), ("size", "99999999999999999999", "too large"),
    ("size", "17179869184G", "too large"),
    ("int", "12x", "expected an integer"), ("int", "1001", "between -5 and 1000"),
    ("int", "-6", "between"), ("int", " 5", "expected an integer"),
    ("int", "99999999999999999999", "between"),
    ("double", "inf", "finite"), ("double", "0.4", "between"), ("double", "abc", "number"),
    ("list", "1,,2", "empty element"), ("list", "1,2,3,4,5", "at most 4"), ("list", "1,a", "list"),
])
def test_parse_errors_are_one_line_exit_2(check, mode, text, problem):
    res = check(mode, text)
    assert res.returncode == 2 and res.stdout == ""
    line, = res.stderr.splitlines()
    option = {"size": "--size", "int": "--int", "double": "--num", "list": "--list"}[mode]
    assert line.startswith(f"xt-check: {option}: ") and problem in line, line


def test_error_quoting_user_text_stays_one_line(check):
    res = check("int", "4\nforged: line" + "x" * 100)
    assert res.returncode == 2
    assert len(res.stderr.splitlines()) == 1 and "..." in res.stderr


def test_parse_ok_values(check):
    assert check("int", "-5").stdout == "-5\n"
    assert float(check("double", "2.5e0").stdout) == 2.5
    assert check("list", "1,-2,3,8").stdout == "1,-2,3,8\n"


@pytest.mark.parametrize("values", [[5], [3, 1, 2], [4, 1, 3, 2], list(range(1, 201)),
                                    [2.5, -1, 7.25, 7.25, 0, 1e6]])
def test_stats(check, values):
    res = check("stats", *map(str, values))
    st = json.loads(res.stdout)
    s = sorted(values)
    assert st["min"] == s[0] and st["max"] == s[-1]
    assert st["avg"] == pytest.approx(statistics.fmean(values))
    assert st["median"] == pytest.approx(statistics.median(values))
    assert st["stddev"] == pytest.approx(statistics.pstdev(values))
    rank = -(-99 * len(s) // 100)  # nearest rank: ceil(0.99 n)
    assert st["p99"] == s[rank - 1]


def test_stats_empty_is_null(check):
    st = json.loads(check("stats").stdout)
    assert all(v is None for k, v in st.items() if k not in ("kernel", "type"))


def test_json_escaping_and_non_finite(check):
    text = 'quote " backslash \\ unicode é \x1f end'
    res = check("json", text)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("\n") == 1
    rec = json.loads(res.stdout)
    assert rec == {"kernel": "xt-check", "type": "info", "text": text,
                   "ctl": 'tab\there\nnew \x01 "q" back\\slash', "big": -9223372036854775807,
                   "pi": 3.14159265358979, "inf": None, "nan": None, "yes": True, "no": False}


def test_shuffle_is_seeded_permutation(check):
    a, b, c = (check("shuffle", "50", s).stdout for s in ("1", "1", "2"))
    assert a == b != c
    assert sorted(map(int, a.split(","))) == list(range(50))
    assert check("shuffle", "0", "3").stdout == "\n"


def test_sleep_until_and_stop_signal(check):
    t = time.monotonic()
    res = check("sleep", "0.2")
    elapsed, stopped = res.stdout.split()
    assert float(elapsed) >= 0.2 and stopped == "0" and time.monotonic() - t < 5
    # SIGTERM ends the sleep early and is reported, instead of killing the program
    proc = subprocess.Popen([str(check.exe), "sleep", "30"], stdout=subprocess.PIPE, text=True,
                            env=ENV)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=10)
    elapsed, stopped = out.split()
    assert proc.returncode == 0 and stopped == "1" and 0.2 < float(elapsed) < 10
