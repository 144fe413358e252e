"""xt-rmamt (multithreaded RMA sweep, RMA-MT style) run for real with 2 ranks.

Open MPI needs osc/ucx for MPI_THREAD_MULTIPLE RMA (osc/pt2pt refuses it); on this single host
UCX's tcp transport over lo stands in for the cross-node UCX_TLS=tcp,self setting. MPICH is
tested too: the project's MPICH 5 (crosstalk/site/mpich.py, its own build dir).
"""
import math
import os
import subprocess
import time

import pytest
from xt_bench import RMA_UCX_ENV, build_bench, json_lines, mpirun_cmd

from crosstalk.site import mpich

#: Kernel tests: CMake builds (release and ASan) and many MPI jobs; minutes, so not in the fast tier.
pytestmark = pytest.mark.slow

KERNEL = "xt-rmamt"
SMALL = ["--threads", "1,2", "--min-size", "2", "--max-size", "4K", "--iterations", "10",
         "--mode", "both", "--timeout", "60"]
SIZES = [1 << k for k in range(1, 13)]  # 2 B .. 4 KiB in total: a byte or more for each of 2 threads


@pytest.fixture(scope="module")
def rma_env(mpi_env):
    return dict(mpi_env, **RMA_UCX_ENV)


def run(cmd, env, timeout=120):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def check_sweep(records, op, sync):
    """Every (threads, size, mode) validated with matching checksums and sane results."""
    assert all(r["kernel"] == KERNEL for r in records)
    info = [r for r in records if r["type"] == "info"]
    assert len(info) == 1 and info[0]["mpi_library"] and info[0]["max_threads"] == 2
    val = [r for r in records if r["type"] == "validation"]
    assert {(r["threads"], r["size"], r["mode"]) for r in val} == {
        (t, s, m) for t in (1, 2) for s in SIZES for m in ("bw", "lat")}
    bad = [r for r in val if not r["passed"]]
    assert not bad, bad
    assert all(r["op"] == op and r["sync"] == sync for r in val)
    res = [r for r in records if r["type"] == "result"]
    for r in res:
        assert r["op"] == op and r["sync"] == sync and r["iterations"] == 10
        assert math.isfinite(r["value"]) and r["value"] > 0, r
        # a size is the total, split over the threads
        assert r["sizes"] == "total" and r["bytes_all_threads"] == r["size"]
        assert r["bytes_per_thread"] * r["threads"] == r["size"]
    for t in (1, 2):
        for s in SIZES:
            got = {(r["metric"], r["stat"]): r["value"] for r in res
                   if r["threads"] == t and r["size"] == s}
            assert set(got) == {("bandwidth", "avg"), ("op_rate", "avg"), ("latency", "avg"),
                                ("latency", "median"), ("latency", "p99"), ("latency", "min")}
            # bandwidth and op rate come from the same timing, an operation moving size/threads
            assert got["bandwidth", "avg"] == pytest.approx(
                got["op_rate", "avg"] * s / t / 2**20, rel=1e-9)
            assert got["latency", "min"] <= got["latency", "median"] <= got["latency", "p99"]


def test_help_and_bad_arguments(bench_bin, mpi_env):
    res = run([str(bench_bin / KERNEL), "--help"], mpi_env)
    assert res.returncode == 0 and res.stdout.startswith("usage:") and "--sync" in res.stdout
    for args, option in [
        (["--op", "swap"], "--op"),
        (["--sync", "barrier"], "--sync"),
        (["--sync", "fence,lock,fence"], "--sync"),
        (["--sync", "fence,"], "--sync"),
        (["--threads", "1,0"], "--threads"),
        (["--threads", "1,,2"], "--threads"),
        (["--min-size", "3"], "--min-size"),
        (["--max-size", "4Q"], "--max-size"),
        (["--min-size", "8K", "--max-size", "4K"], "--min-size"),
        (["--iterations", "0"], "--iterations"),
        (["--mode", "fast"], "--mode"),
        (["--timeout", "-1"], "--timeout"),
        (["--seed", "x"], "--seed"),
        (["--rounds", "0"], "--rounds"),
        (["--ends-only=yes"], "--ends-only"),
        (["--sizes", "each"], "--sizes"),
        (["--threads", "3"], "--threads"),                          # 3 does not split a power of 2
        (["--threads", "1,4", "--min-size", "2"], "--min-size"),    # less than a byte per thread
        (["--bogus"], "--bogus"),
    ]:
        res = run([str(bench_bin / KERNEL), *args], mpi_env)
        assert res.returncode == 2, (args, res.stderr)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"{KERNEL}: {option}: "), (args, lines)
        assert res.stdout == ""


def test_needs_two_ranks(bench_bin, rma_env):
    res = run(mpirun_cmd(3, bench_bin / KERNEL, "--max-size", "1"), rma_env)
    assert res.returncode != 0 and "xt-rmamt: needs exactly 2 ranks" in res.stderr


@pytest.mark.parametrize("op", ["put", "get"])
@pytest.mark.parametrize("sync", ["lock", "lock_all", "flush", "fence", "pscw"])
def test_checksums_pass_release(bench_bin, rma_env, op, sync):
    res = run(mpirun_cmd(2, bench_bin / KERNEL, "--op", op, "--sync", sync, *SMALL), rma_env)
    assert res.returncode == 0, res.stderr
    check_sweep(json_lines(res.stdout), op, sync)


@pytest.mark.parametrize("op", ["put", "get"])
@pytest.mark.parametrize("sync", ["lock", "lock_all", "flush"])
def test_checksums_pass_asan(bench_asan_bin, rma_env, op, sync):
    res = run(mpirun_cmd(2, bench_asan_bin / KERNEL, "--op", op, "--sync", sync, *SMALL),
              rma_env)
    assert res.returncode == 0, res.stderr
    check_sweep(json_lines(res.stdout), op, sync)


def test_rounds_sweep_the_thread_list_in_turn_at_the_end_sizes(bench_bin, rma_env):
    """--rounds 3 with --threads 1,2: 1 2 1 2 1 2 in one process, every record tagged with its
    round; --ends-only measures the smallest and largest sizes only."""
    res = run(mpirun_cmd(2, bench_bin / KERNEL, "--threads", "1,2", "--rounds", "3", "--ends-only",
                         "--min-size", "8", "--max-size", "4K", "--iterations", "5", "--mode", "both"), rma_env)
    assert res.returncode == 0, res.stderr
    records = [r for r in json_lines(res.stdout) if r["type"] in ("result", "validation")]
    assert all(r["passed"] for r in records if r["type"] == "validation")
    order = []
    for r in records:
        if r["type"] == "result" and r["metric"] == "latency" and r["stat"] == "median":
            order.append((r["round"], r["threads"], r["size"]))
    assert order == [(k, t, s) for k in range(3) for t in (1, 2) for s in (8, 4096)]
    # one round untags: the records of a single sweep carry no round
    res = run(mpirun_cmd(2, bench_bin / KERNEL, "--ends-only", "--min-size", "8", "--max-size", "8",
                         "--iterations", "5", "--mode", "lat"), rma_env)
    assert res.returncode == 0 and not any("round" in r for r in json_lines(res.stdout))


def sync_order(records):
    """(round, sync, threads) of each median latency record, in output order."""
    return [(r.get("round"), r["sync"], r["threads"]) for r in records
            if r["type"] == "result" and r["metric"] == "latency" and r["stat"] == "median"]


def test_a_sync_list_measures_each_mode_in_turn_every_round(bench_bin, rma_env):
    """--sync fence,lock: within each round every thread count under fence, then under lock, all
    checksums right (fence's active-target epochs and lock's passive ones on one window)."""
    res = run(mpirun_cmd(2, bench_bin / KERNEL, "--sync", "fence,lock", "--threads", "1,2", "--rounds", "2",
                         "--ends-only", "--min-size", "8", "--max-size", "8", "--iterations", "5",
                         "--mode", "both"), rma_env)
    assert res.returncode == 0, res.stderr
    records = json_lines(res.stdout)
    assert all(r["passed"] for r in records if r["type"] == "validation")
    assert sync_order(records) == [(k, s, t) for k in range(2) for s in ("fence", "lock") for t in (1, 2)]


def test_table_on_stderr(bench_bin, rma_env):
    res = run(mpirun_cmd(2, bench_bin / KERNEL, "--max-size", "64", "--min-size", "64",
                         "--mode", "both", "--table"), rma_env)
    assert res.returncode == 0, res.stderr
    assert "Bandwidth(MiB/s)" in res.stderr and "Latency(us)" in res.stderr
    assert all(line.startswith("{") for line in res.stdout.splitlines())


def test_timeout_becomes_failed_validation(xt_bin, rma_env):
    """A run that cannot finish in time (2 threads, 10^8 fence-epoch puts of 64 KiB) is cut at
    --timeout: one failed validation record naming the stage, MPI_Abort, exit status 3."""
    t0 = time.monotonic()
    res = run(mpirun_cmd(2, xt_bin / KERNEL, "--sync", "fence", "--threads", "2", "--min-size",
                         "64K", "--max-size", "64K", "--iterations", "100000000",
                         "--timeout", "2"), rma_env, timeout=90)
    elapsed = time.monotonic() - t0
    assert res.returncode == 3, (res.returncode, res.stderr)
    records = json_lines(res.stdout)
    last = records[-1]
    assert last["type"] == "validation" and last["passed"] is False
    assert last["detail"] == "timeout" and last["timeout_s"] == 2
    assert (last["mode"], last["threads"], last["size"], last["sync"]) == ("bw", 2, 65536, "fence")
    assert "xt-rmamt: --timeout: run not finished after 2 s" in res.stderr
    assert elapsed < 60


# ---------------------------------------------------------------- MPICH

@pytest.fixture(scope="module")
def mpich_bin():
    if mpich.prefix() is None:
        pytest.skip("the project's MPICH is not installed (scripts/bootstrap.sh installs it)")
    # no -Werror: MPICH's MPI_Waitall prototype makes gcc 12 warn on MPI_STATUSES_IGNORE
    return build_bench("bench-mpich", "-DCMAKE_BUILD_TYPE=Release", "-DXT_WERROR=OFF",
                  "-DXT_SANITIZE=OFF", f"-DMPI_C_COMPILER={mpich.tool('mpicc')}")


@pytest.mark.parametrize("op,sync", [("put", "fence"), ("get", "lock_all"), ("put", "flush")])
def test_checksums_pass_mpich(mpich_bin, mpi_env, op, sync):
    res = run([mpich.tool("mpiexec"), "-np", "2", str(mpich_bin / KERNEL), "--op", op, "--sync", sync,
               *SMALL], mpi_env)
    assert res.returncode == 0, res.stderr
    records = json_lines(res.stdout)
    assert records[0]["mpi_library"].startswith("MPICH")
    check_sweep(records, op, sync)


def test_a_sync_list_under_mpich(mpich_bin, mpi_env):
    res = run([mpich.tool("mpiexec"), "-np", "2", str(mpich_bin / KERNEL), "--sync", "fence,lock", "--threads",
               "1,2", "--rounds", "2", "--ends-only", "--min-size", "8", "--max-size", "8", "--iterations", "5",
               "--mode", "lat"], mpi_env)
    assert res.returncode == 0, res.stderr
    records = json_lines(res.stdout)
    assert all(r["passed"] for r in records if r["type"] == "validation")
    assert sync_order(records) == [(k, s, t) for k in range(2) for s in ("fence", "lock") for t in (1, 2)]


# ---------------------------------------------------------------- physics on the virtual cluster

@pytest.fixture(scope="module")
def rma_cluster():
    """A private 4-node virtual cluster (its links are reshaped here, so never the shared one)."""
    from vcluster_fixtures import INVENTORY, skip_unless_root
    skip_unless_root()
    from crosstalk.vcluster import VCluster
    vc = VCluster.from_inventory(INVENTORY, name="vclrma", subnet="198.19.78.0/24")
    vc.up()
    yield vc
    vc.down()


@pytest.mark.root
@pytest.mark.cluster
@pytest.mark.parametrize("op,sync", [("put", "fence"), ("get", "lock_all")])
def test_bandwidth_follows_shaped_link(bench_bin, rma_cluster, op, sync):
    """Across nodes (UCX over TCP on eth0), 2 threads: large-message RMA bandwidth reaches the
    tbf rate of the link and no more, at two link widths.

    Without RDMA the target's CPU moves every byte, so a busy host (CI runs tests beside this one
    on 2 cores) caps throughput below the link: CI measured 167-169 of 250 Mbit/s in all three
    rounds. Each round therefore also measures a 10 Gbit/s link, the host's own ceiling at that
    moment, and the floor is 0.85 of the lower of link and ceiling (TCP/IP headers cost ~5%), on the
    best round. The cap, 1.02 (tbf's burst), must hold in every round: nothing lifts throughput
    above the link. A misshaped link fails either way (too narrow: below the floor while the
    ceiling is far above it; too wide: above the cap)."""
    env = dict(RMA_UCX_ENV, UCX_NET_DEVICES="eth0")
    rates = (250e6, 1e9, 10e9)
    rounds = {rate: [] for rate in rates}
    for _ in range(3):  # interleaved, so each round's ceiling sees that round's load
        for rate in rates:
            rounds[rate].append(_shaped_bandwidth(bench_bin, rma_cluster, env, op, sync, rate))
    for rate in rates:
        print(f"{op}/{sync} at {rate / 1e6:.0f} Mbit/s: rounds "
              + " ".join(f"{b / 1e6:.1f}" for b in rounds[rate]) + " Mbit/s")
    ceiling = rounds[10e9]
    for rate in rates[:2]:
        assert max(rounds[rate]) <= 1.02 * rate, rounds[rate]
        reached = [b / min(rate, c) for b, c in zip(rounds[rate], ceiling)]
        assert max(reached) >= 0.85, (rate, rounds[rate], ceiling)


def _shaped_bandwidth(bench_bin, cluster, env, op, sync, rate):
    """One bandwidth round (bit/s) of 2 threads x 20 x 512 KiB between n1 and n2 at ``rate``."""
    mbit = f"{int(rate / 1e6)}mbit"
    with cluster.link_override({"n1": mbit, "n2": mbit}):
        out = cluster.exec(
            "n1", ["mpirun", "-np", "2", "-x", "UCX_TLS", "-x", "UCX_NET_DEVICES",
                   str(bench_bin / KERNEL), "--op", op, "--sync", sync, "--threads", "2",
                   "--rounds", "1", "--min-size", "512K", "--max-size", "512K",
                   "--iterations", "20", "--timeout", "60"],
            env={**os.environ, **env}, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    records = json_lines(out.stdout)
    assert all(r["passed"] for r in records if r["type"] == "validation")
    (bw,) = [r["value"] * 2**20 * 8 for r in records if r.get("metric") == "bandwidth"]
    return bw
