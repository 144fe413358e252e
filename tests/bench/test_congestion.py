"""xt-congestion (GPCNeT-style canaries, isolated and congested) run for real with 4-10 ranks.

On one host every rank shares the same 2 cores and loopback, so the congestion impact values
here are noise: these tests check that the method runs and reports consistently. The physics
(impact >= 1 when congestors share a shaped link) is in test_congestion_vcluster below.
"""
import json
import math
import statistics
import subprocess

import pytest
from xt_bench import json_lines, mpirun_cmd

from crosstalk.errors import CrosstalkError
from crosstalk.models.congestion import CANARIES as BY_PREFIX, impact

#: Kernel tests: CMake builds (release and ASan) and many MPI jobs; minutes, so not in the fast tier.
pytestmark = pytest.mark.slow

KERNEL = "xt-congestion"
#: The kernel's canary name -> (kind of value, unit): the one vocabulary, crosstalk.models.congestion.
CANARIES = {c.kernel: (c.kind, c.unit) for c in BY_PREFIX.values()}
SHARED = ["--allow-shared-nodes", "--time-limit", "0.3"]


def run(cmd, env, timeout=180):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def run_ok(exe, np, env, *args):
    res = run(mpirun_cmd(np, exe, *args), env)
    assert res.returncode == 0, res.stderr
    records = json_lines(res.stdout)
    assert all(r["kernel"] == KERNEL for r in records)
    return records


def canary_values(records):
    """{(canary, phase, stat): value} of the canary results."""
    return {(r["canary"], r["phase"], r["stat"]): r["value"] for r in records
            if r["type"] == "result" and "phase" in r}


def check_report(records, congestors):
    info = [r for r in records if r["type"] == "info"]
    assert len(info) == 1 and info[0]["mpi_library"]
    for name, (metric, unit) in CANARIES.items():
        for phase in ("isolated", "congested"):
            rows = [r for r in records if r.get("canary") == name and r.get("phase") == phase]
            assert {r["stat"] for r in rows} == {"avg", "p99", "median"}
            for r in rows:
                assert (r["metric"], r["unit"]) == (metric, unit)
                assert r["samples"] > 0
                assert math.isfinite(r["value"]) and r["value"] > 0, r
    # the kernel's canaries are the Python vocabulary's, and it reports values only: the congestion
    # impact is computed in one place (crosstalk.models.congestion)
    assert {r["canary"] for r in records if "canary" in r} == set(CANARIES)
    assert not [r for r in records if str(r.get("metric", "")).startswith("ci_")]
    # each congestor reports its own rate during each canary test
    rates = [r for r in records if r.get("metric") == "congestor_bandwidth"]
    assert {(r["congestor"], r["during"]) for r in rates} == {
        (c, t) for c in congestors for t in CANARIES}
    assert all(r["value"] > 0 and r["unit"] == "MiB/s/rank" for r in rates)
    return info[0]


def test_help_and_bad_arguments(bench_bin, mpi_env):
    res = run([str(bench_bin / KERNEL), "--help"], mpi_env)
    assert res.returncode == 0 and res.stdout.startswith("usage:") and "--congestors" in res.stdout
    # the one Python list of congestors (crosstalk.models.congestion_layout) is the kernel's
    from crosstalk.models.congestion_layout import CONGESTORS
    assert f"subset of {','.join(CONGESTORS)} " in res.stdout
    for args, option in [
        (["--congestors", "a2a,bogus"], "--congestors"),
        (["--congestors", "a2a,,rma_bcast"], "--congestors"),
        (["--congestors", "a2a,a2a"], "--congestors"),
        (["--canary-fraction", "1"], "--canary-fraction"),
        (["--canary-fraction", "x"], "--canary-fraction"),
        (["--time-limit", "0"], "--time-limit"),
        (["--seed", "-3"], "--seed"),
        (["--ppn", "0"], "--ppn"),
        (["--bw-iterations", "0"], "--bw-iterations"),
        (["--rounds", "0"], "--rounds"),
        (["--congestor-iterations", "0"], "--congestor-iterations"),
        (["extra"], "extra"),
    ]:
        res = run([str(bench_bin / KERNEL), *args], mpi_env)
        assert res.returncode == 2, (args, res.stderr)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"{KERNEL}: {option}: "), (args, lines)
        assert res.stdout == ""


def test_too_few_nodes_is_a_clear_error(bench_bin, mpi_env):
    # one host = one node by processor name: no split possible without --allow-shared-nodes
    res = run(mpirun_cmd(4, bench_bin / KERNEL, "--congestors", "a2a"), mpi_env)
    assert res.returncode != 0 and res.stdout == ""
    assert "xt-congestion: found 1 node(s) (by MPI_Get_processor_name), need 2 canary nodes" \
        in res.stderr
    res = run(mpirun_cmd(4, bench_bin / KERNEL, "--congestors", "a2a", "--ppn", "2"), mpi_env)
    assert "xt-congestion: --ppn: given 2 but found 4 rank(s) per node" in res.stderr
    res = run(mpirun_cmd(4, bench_bin / KERNEL, "--allow-shared-nodes"), mpi_env)
    assert "found 4 node(s) (--allow-shared-nodes), need 2 canary nodes and 2 per congestor " \
           "(10 for --congestors a2a,p2p_incast,rma_incast,rma_bcast)" in res.stderr


@pytest.mark.parametrize("congestor", ["a2a", "p2p_incast", "rma_incast", "rma_bcast"])
def test_each_congestor_release(bench_bin, mpi_env, congestor):
    records = run_ok(bench_bin / KERNEL, 4, mpi_env, *SHARED, "--canary-fraction", "0.5",
                     "--congestors", congestor)
    info = check_report(records, [congestor])
    layout = (info["nodes"], info["ppn"], info["canary_nodes"], info["congestor_nodes"])
    assert layout == (4, 1, 2, 2)
    assert len(info["nodes_canary"].split(",")) == 2
    assert len(info[f"nodes_{congestor}"].split(",")) == 2


def test_one_sided_congestor_asan(bench_asan_bin, mpi_env):
    records = run_ok(bench_asan_bin / KERNEL, 4, mpi_env, *SHARED, "--canary-fraction", "0.5",
                     "--congestors", "rma_incast")
    check_report(records, ["rma_incast"])


def test_all_congestors_default_split(bench_bin, mpi_env):
    """10 'nodes': 20% (2) canary nodes, 8 congestor nodes, 2 per congestor, disjoint."""
    records = run_ok(bench_bin / KERNEL, 10, mpi_env, *SHARED, "--seed", "7", "--table")
    congestors = ["a2a", "p2p_incast", "rma_incast", "rma_bcast"]
    info = check_report(records, congestors)
    groups = [info["nodes_canary"].split(",")] + [info[f"nodes_{c}"].split(",") for c in congestors]
    assert [len(g) for g in groups] == [2, 2, 2, 2, 2]
    ids = sorted(int(n.split("#")[1]) for g in groups for n in g)
    assert ids == list(range(10))
    assert info["seed"] == 7 and info["canary_fraction"] == 0.2


def test_ppn2_subcommunicators(bench_bin, mpi_env):
    records = run_ok(bench_bin / KERNEL, 8, mpi_env, *SHARED, "--ppn", "2",
                     "--canary-fraction", "0.5", "--congestors", "p2p_incast")
    info = check_report(records, ["p2p_incast"])
    assert (info["nodes"], info["ppn"]) == (4, 2)
    # two PPort sub-communicators per group: every canary rank contributes samples
    rates = [r for r in records if r.get("metric") == "congestor_bandwidth"]
    assert all(r["ranks"] == 4 for r in rates)  # 2 nodes x 2 ranks, roots included


def test_bw_iterations_set_the_bandwidth_canarys_ring(bench_bin, mpi_env):
    # A ring of the bandwidth canary is warm-up + N iterations on each canary rank; the time limit
    # is checked between rings, so the samples are a whole number of rings of N each.
    records = run_ok(bench_bin / KERNEL, 4, mpi_env, *SHARED, "--time-limit", "0.05",
                     "--canary-fraction", "0.5", "--congestors", "a2a", "--bw-iterations", "3")
    info = check_report(records, ["a2a"])
    assert info["bw_iterations"] == 3
    canary_ranks = info["canary_nodes"] * info["ppn"]
    for r in records:
        if r.get("canary") == "rr_bw_sync" and "phase" in r:
            assert r["samples"] % (3 * canary_ranks) == 0, r


def test_rounds_repeat_the_sequence_in_one_job(bench_bin, mpi_env):
    """--rounds 3: isolated then congested, three times in one job; each round is a whole report
    (every canary in both phases, every impact from that round's own values)."""
    records = run_ok(bench_bin / KERNEL, 4, mpi_env, *SHARED, "--time-limit", "0.05",
                     "--canary-fraction", "0.5", "--congestors", "a2a", "--rounds", "3",
                     "--congestor-iterations", "16")
    results = [r for r in records if r["type"] == "result"]
    assert sorted({r["round"] for r in results}) == [0, 1, 2]
    assert {(r["rounds"], r["congestor_iterations"]) for r in results} == {(3, 16)}
    info = [r for r in records if r["type"] == "info"]
    for k in range(3):
        check_report(info + [r for r in results if r["round"] == k], ["a2a"])


def test_seed_fixes_the_layout(bench_bin, mpi_env):
    a = run_ok(bench_bin / KERNEL, 4, mpi_env, *SHARED, "--time-limit", "0.05",
               "--canary-fraction", "0.5", "--congestors", "a2a", "--seed", "3")
    b = run_ok(bench_bin / KERNEL, 4, mpi_env, *SHARED, "--time-limit", "0.05",
               "--canary-fraction", "0.5", "--congestors", "a2a", "--seed", "3")
    assert a[0]["nodes_canary"] == b[0]["nodes_canary"]
    assert a[0]["nodes_a2a"] == b[0]["nodes_a2a"]


# ---------------------------------------------------------------- physics on the virtual cluster

def progress(text):
    """How far a job got, from the lines it printed (a stalled job's last one may be cut short):
    its last round, canary and phase."""
    records = [json.loads(line) for line in text.splitlines() if line.endswith("}")]
    done = [r for r in records if r["type"] == "result" and "phase" in r]
    if not done:
        return "no canary result"
    last = done[-1]
    return f"{len(done)} canary results, the last round {last['round']} {last['canary']} {last['phase']}"


@pytest.fixture(scope="module")
def shaped_cluster():
    """A private 4-node virtual cluster (never the shared one: its links are reshaped here)
    with every link at 50 Mbit/s, so the network, not the 2 shared cores, is the bottleneck."""
    from vcluster_fixtures import INVENTORY, skip_unless_root
    skip_unless_root()
    from crosstalk.vcluster import VCluster
    vc = VCluster.from_inventory(INVENTORY, name="vclcong", subnet="198.19.77.0/24")
    vc.up()
    try:
        with vc.link_override({n: "50mbit" for n in vc.nodes}):
            yield vc
    finally:
        vc.down()


@pytest.mark.root
@pytest.mark.cluster
@pytest.mark.slow
def test_congestors_sharing_shaped_links_slow_the_canary(bench_bin, shaped_cluster, tmp_path):
    """8 ranks on 4 nodes (2 per node, mapped by node), each rank its own GPCNeT 'node': the 2
    canary ranks (seed 2: on n2 and n3) share their nodes' 50 Mbit/s links with congestor ranks
    (a2a and p2p_incast), so the canary bandwidth can only drop.

    Judged on 3 rounds of one job (--rounds: isolated then congested, three times), each round's
    impact from its own pair, so load that comes and goes on the 2 shared cores falls within a
    pair. The tail (p99) impact is the congestion's signature: >= 1 in every run seen (1.1-1.8).
    While shaped links dropped after 50 ms of queue, the average impact was 1.1-1.4 here and a CI
    run saw 0.96-0.98 in three runs (p99 1.10-1.58; a likely cause: the incast's drops left
    congestors in TCP retransmit timeouts, idle link time the canary's average got back, as the
    fat-tree shape showed, crosstalk/vcluster/rates.py). So the average is only held
    to "not faster under congestion" within that 4 % and a margin: >= 0.9. With 200 ms of queue
    four jobs gave averages of 1.10-1.40 and p99s of 1.28-1.47.

    The congestors run the quick profile's 64 iterations a measurement (GPCNeT: 512): each
    congested canary test waits for one measurement's warm-up and the end of another, so the job
    took 63-65 s with 512 and 48-49 s with 64, at the same impacts. CI once saw a job run past
    600 s (not reproduced; a likely cause: repeated retransmit timeouts of the incast on the
    shaped links, which back off exponentially). A job that passes 300 s is ended and run once
    more, and the failure says how far each stalled one got: two stalls fail the test."""
    # --time-limit 0.3: one bandwidth ring (18 MiB a rank at 50 Mbit/s, over 3 s) runs per phase at
    # any limit, since the limit is agreed before each ring; the shorter limit only shortens the
    # latency and Allreduce canaries, whose values this test does not judge.
    argv = ["mpirun", "-np", "8", str(bench_bin / KERNEL), "--allow-shared-nodes",
            "--canary-fraction", "0.25", "--congestors", "a2a,p2p_incast",
            "--time-limit", "0.3", "--seed", "2", "--rounds", "3", "--congestor-iterations", "64"]
    stalls = []
    for attempt in range(2):
        stdout = tmp_path / f"attempt-{attempt}.jsonl"     # an open file: what a stalled job printed
        try:
            with open(stdout, "w") as fp:
                out = shaped_cluster.exec("n1", argv, stdout=fp, stderr=subprocess.PIPE, text=True,
                                          timeout=300)
            break
        except CrosstalkError as stall:
            stalls.append(f"{stall}, after {progress(stdout.read_text())}")
    else:
        pytest.fail("; ".join(stalls))
    if stalls:
        print(f"stalled and run again: {stalls}")
    assert out.returncode == 0, out.stderr
    records = json_lines(stdout.read_text())
    info = [r for r in records if r["type"] == "info"]
    hosts = [n.split("#")[0] for n in info[0]["nodes_canary"].split(",")]
    assert len(set(hosts)) == 2, f"canaries must talk across a link: {hosts}"
    impacts = []
    for k in range(3):
        this_round = [r for r in records if r["type"] == "result" and r["round"] == k]
        check_report(info + this_round, ["a2a", "p2p_incast"])
        vals = canary_values(this_round)
        phases = {p: {s: vals["rr_bw_sync", p, s] for s in ("avg", "p99")} for p in ("isolated", "congested")}
        impacts.append({suffix: impact("bandwidth", phases["isolated"], phases["congested"], suffix)
                        for suffix in ("avg", "p99_tool")} | {"MiB/s/rank": phases})
    print(f"rr_bw_sync congestion impact at 50 Mbit/s, per round: {impacts}")
    assert statistics.median(ci["p99_tool"] for ci in impacts) >= 1.0, impacts
    assert statistics.median(ci["avg"] for ci in impacts) >= 0.9, impacts


@pytest.mark.parametrize("seed", [5, 7, 341])
def test_layout_planner_predicts_the_kernels_shuffle(bench_bin, mpi_env, seed):
    """crosstalk.models.congestion_layout (which picks the seed for a cluster's size) must place
    canaries and roots exactly where xt-congestion does: same shuffle, same role assignment."""
    from crosstalk.models.congestion_layout import CONGESTORS, layout
    # the layout record a measuring run prints first (make_layout, emit_info), without the run
    records = run_ok(bench_bin / KERNEL, 10, mpi_env, *SHARED, "--seed", str(seed), "--layout-only")
    info = next(r for r in records if r["type"] == "info")
    plan = layout(seed, 10, 5, 0.2, CONGESTORS)

    def ids(group):
        return [int(item.split("#")[1]) for item in info[f"nodes_{group}"].split(",")]
    assert ids("canary") == plan["canaries"]
    for congestor in CONGESTORS:
        assert ids(congestor)[0] == plan["roots"][congestor]
