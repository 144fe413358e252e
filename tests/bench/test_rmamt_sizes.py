"""xt-rmamt's message sizes on Groves' axis, in the fast tier: the total split over the threads.

Groves 2017 §2.1.6 (Fig 2.5): "as each thread reaches the point where it sends 16 KiB of data, we see
a sharp reduction in throughput. This occurs at 16 KiB for single thread results 32 KiB for two
threads". So at a size S each of T threads moves S/T bytes per operation. The kernel is compiled with
mpicc alone (no CMake build: seconds) and run with 2 ranks and 2 threads on this host; the full
kernel tests are tests/bench/test_rmamt.py (slow tier).
"""
import os
import subprocess

import pytest
from xt_bench import BENCH_SRC, MPI_ENV, RMA_UCX_ENV, json_lines, mpirun_cmd

from crosstalk.specs import load_spec

KERNEL = "xt-rmamt"


@pytest.fixture(scope="module")
def rmamt(tmp_path_factory):
    exe = tmp_path_factory.mktemp("rmamt") / KERNEL
    subprocess.run(["mpicc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-D_POSIX_C_SOURCE=200809L",
                    "-I", str(BENCH_SRC / "common"), str(BENCH_SRC / "src" / f"{KERNEL}.c"),
                    str(BENCH_SRC / "common" / "xt_common.c"), "-lm", "-pthread", "-o", str(exe)],
                   check=True, capture_output=True, text=True, timeout=120)
    return exe


def run(rmamt, *args, np=2):
    cmd = mpirun_cmd(np, rmamt, *args) if np else [str(rmamt), *args]
    return subprocess.run(cmd, env={**os.environ, **MPI_ENV, **RMA_UCX_ENV}, capture_output=True, text=True,
                          timeout=120)


def sweep(rmamt, *args):
    res = run(rmamt, "--threads", "1,2", "--min-size", "8", "--max-size", "64K", "--ends-only",
              "--iterations", "5", "--mode", "both", "--timeout", "60", *args)
    assert res.returncode == 0, res.stderr
    records = json_lines(res.stdout)
    checks = [r for r in records if r["type"] == "validation"]
    assert len(checks) == 8 and all(r["passed"] for r in checks), checks     # 2 threads x 2 sizes x 2 modes
    return [r for r in records if r["type"] == "result"]


@pytest.mark.parametrize("op,sync", [("put", "lock"), ("get", "fence")])
def test_each_of_t_threads_moves_the_size_over_t(rmamt, op, sync):
    results = sweep(rmamt, "--op", op, "--sync", sync)
    # every thread count measures the same totals, so a count is read against one thread at its size
    assert {(r["threads"], r["size"]) for r in results} == {(t, s) for t in (1, 2) for s in (8, 65536)}
    for r in results:
        assert r["sizes"] == "total"
        assert (r["bytes_per_thread"], r["bytes_all_threads"]) == (r["size"] // r["threads"], r["size"])
    # the bandwidth counts the bytes the operations moved: op rate x bytes per operation
    for t in (1, 2):
        got = {r["metric"]: r["value"] for r in results if r["threads"] == t and r["size"] == 65536
               and r["stat"] == "avg"}
        assert got["bandwidth"] == pytest.approx(got["op_rate"] * 65536 / t / 2**20, rel=1e-9)


def test_per_thread_sizes_give_each_thread_the_whole_size(rmamt):
    """The runs before --sizes: T threads move T times the size."""
    results = sweep(rmamt, "--sizes", "per_thread")
    for r in results:
        assert r["sizes"] == "per_thread"
        assert (r["bytes_per_thread"], r["bytes_all_threads"]) == (r["size"], r["size"] * r["threads"])


@pytest.mark.parametrize("args,option,words", [
    (["--threads", "3"], "--threads", "must be a power of 2"),
    (["--threads", "1,4", "--min-size", "2"], "--min-size", "at least the largest thread count"),
    (["--sizes", "each"], "--sizes", "unknown value 'each'"),
])
def test_a_total_that_does_not_split_is_refused(rmamt, args, option, words):
    res = run(rmamt, *args, np=None)      # arguments are parsed before MPI_Init: no launcher
    assert res.returncode == 2 and res.stderr.startswith(f"{KERNEL}: {option}: ") and words in res.stderr


def test_the_default_smallest_total_is_a_byte_per_thread(rmamt):
    res = run(rmamt, "--threads", "1,4", "--max-size", "4", "--iterations", "2", "--mode", "bw", "--timeout", "60")
    assert res.returncode == 0, res.stderr
    assert {(r["threads"], r["size"], r["bytes_per_thread"]) for r in json_lines(res.stdout)
            if r["type"] == "result"} == {(1, 4, 4), (4, 4, 1)}


@pytest.mark.parametrize("profile", ["quick", "full"])
def test_the_specs_profiles_are_sizes_the_kernel_accepts(rmamt, profile):
    """Each profile's thread counts, sizes axis and size range as reframe-tests/rma_mt.py passes them:
    accepted, the one process then stops for want of its second rank (a refused value exits 2 first)."""
    spec = load_spec("rma-mt")
    threads = sorted({1, *spec.parameter("threads", profile)})
    for sizes in spec.parameter("sizes", profile):
        res = run(rmamt, "--threads", ",".join(map(str, threads)), "--sizes", sizes,
                  "--min-size", str(spec.setting("min_size", profile)),
                  "--max-size", str(spec.setting("max_size", profile)), np=None)
        assert "needs exactly 2 ranks" in res.stderr, res.stderr


def test_the_claims_read_groves_axis_only():
    """A claim compares a thread count with one thread at the same total size: cases of per-thread sizes
    (and those recorded before the sizes parameter) compare T times the total, so no claim reads them."""
    for claim in load_spec("rma-mt").data["claims"]:
        assert claim["test"]["select"].get("sizes") == "total", claim["id"]
