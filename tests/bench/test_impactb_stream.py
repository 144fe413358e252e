"""xt-impactb's streaming bandwidth mode (--window W), the bandwidth benchmark of Narayanaswamy 2008
§3.2.1 as OSU osu_bw measures it: W messages in flight per exchange, then one small reply counting
the messages that arrived whole. Fast tier: one mpicc build of the kernel alone, 2 ranks on this
host (the CMake builds of tests/bench are in the slow tier)."""
import os
import shutil
import subprocess

import pytest
from xt_bench import BENCH_SRC, MPI_ENV, json_lines, results

TIMEOUT = 60


@pytest.fixture(scope="module")
def impactb(tmp_path_factory):
    if not shutil.which("mpicc"):
        pytest.skip("mpicc is not installed")
    exe = tmp_path_factory.mktemp("impactb") / "xt-impactb"
    subprocess.run(["mpicc", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-D_POSIX_C_SOURCE=200809L",
                    f"-I{BENCH_SRC / 'common'}", "-o", str(exe), str(BENCH_SRC / "src" / "xt-impactb.c"),
                    str(BENCH_SRC / "common" / "xt_common.c"), "-lm"], check=True, timeout=120)
    return exe


def run(exe, *args, np=2):
    cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(np), str(exe), *map(str, args)]
    res = subprocess.run(cmd, env={**os.environ, **MPI_ENV, "OMPI_MCA_btl": "self,vader"},
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert res.returncode == 0, res.stderr
    return json_lines(res.stdout)


def one(records, **match):
    (found,) = results(records, **match)
    return found


@pytest.mark.parametrize("window, count", [(1, 6), (7, 3)])
def test_each_exchange_delivers_its_window(impactb, window, count):
    """W messages per exchange, all counted by the receiver; bandwidth = bytes / the sender's time."""
    size = 64 << 10
    recs = run(impactb, "--window", window, "--count", count, "--interval", 0, "--msg-size", "64K")
    assert one(recs, metric="messages", stat="sum")["value"] == window * count
    bw = one(recs, metric="bandwidth", stat="avg")
    assert bw["unit"] == "MB/s" and bw["value"] > 0
    assert (bw["window"], bw["msg_size"], bw["messages"], bw["pairs"]) == (window, size, window * count, 1)
    assert bw["value"] == pytest.approx(window * count * size / bw["elapsed_s"] / 1e6)
    samples = [r for r in recs if r["type"] == "sample"]
    assert [s["iteration"] for s in samples] == list(range(count))
    assert all(s["metric"] == "window_bw" and s["value"] > 0 for s in samples)
    assert not results(recs, metric="half_rtt")                 # no ping-pong numbers in this mode


def test_pairs_stream_at_once_and_add_up(impactb):
    recs = run(impactb, "--window", 3, "--count", 4, "--interval", 0, "--msg-size", "1M", "--no-samples", np=4)
    assert one(recs, metric="messages", stat="sum")["value"] == 2 * 3 * 4
    avg, total = one(recs, metric="bandwidth", stat="avg"), one(recs, metric="bandwidth", stat="sum")
    assert avg["pairs"] == 2 and total["value"] == pytest.approx(2 * avg["value"])
    assert not [r for r in recs if r["type"] == "sample"]


def test_without_a_window_it_is_the_ping_pong_still(impactb):
    recs = run(impactb, "--count", 3, "--interval", 0, "--no-samples")
    assert one(recs, metric="half_rtt", stat="median")["samples"] == 3
    assert not results(recs, metric="bandwidth")


def test_a_window_the_receiver_cannot_hold_is_refused(impactb):
    res = subprocess.run([str(impactb), "--window", "2048", "--msg-size", "1M"], capture_output=True, text=True,
                         timeout=TIMEOUT)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip().startswith("xt-impactb: --window: window x msg-size must be at most 1GiB")
