"""Runs on any host (issue "Runs on any host"), for real on virtual clusters:

* a host class nobody calibrated: the run passes in explore mode with the sanity and portable checks
  enforced, says so in one line naming the calibrate command; after calibration, --gate gates;
* a second virtual-cluster inventory (another name, size, subnet and link rate) runs stream,
  congestion and energy with no code change, beside another cluster (the spare one, a copy of the
  default).
"""
import json
import shutil
import statistics
import subprocess
import uuid

import pytest
import yaml
from shared_run import SESSIONS
from vcluster_fixtures import REPO, copy_inventory
from xt_testing import OPEN_MPI_ONLY, reported_values, site_spec, site_specs, venv_tool

from crosstalk.analysis.collect import collect
from crosstalk.analysis.ingest import load_run

pytestmark = [pytest.mark.root, pytest.mark.cluster, pytest.mark.slow]


def crosstalk(*args, env, timeout=1500):
    return subprocess.run([venv_tool("crosstalk"), *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


# ------------------------------------------------------------------ a foreign host class
# The shared run (tests/shared_run.py) is made as on a host class nobody calibrated: references exist
# only for another host class (the shipped example's), none for this one.


def test_uncalibrated_host_runs_in_explore_mode_with_portable_checks(shared_run):
    proc, run_dir, host_class = shared_run.proc, shared_run.run_dir, shared_run.host_class
    assert proc.returncode == 0, shared_run.failure()
    # One line says what happened and the exact command that calibrates this host.
    note = [ln for ln in proc.stdout.splitlines() if "no references for vcluster" in ln]
    assert note and f"host class {host_class}" in note[0], proc.stdout[-2000:]
    assert f"crosstalk refs calibrate --system vcluster --runs {run_dir.name}" in note[0]
    prov = json.loads((run_dir / "provenance.json").read_text())
    assert prov["kind"] == "vcluster" and prov["host_class"]["id"] == host_class
    assert {"cpu_model", "cores", "memory_gib", "numa_nodes", "mpi", "kernel"} <= set(
        prov["host_class"]["fingerprint"])
    perf, cases = shared_run.perf, shared_run.cases
    # Host-specific values recorded, none checked against the other host class's references...
    assert perf and all(r["ref_value"] != r["ref_value"] for r in perf)   # NaN: explore
    # ...but the portable checks ran: the cases they apply to passed their sanity with them.
    ran = {c["test"] for c in cases if c["result"] == "pass"}
    assert {"StreamTriad", "CongestionCanary", "ActiveProbing"} <= ran, cases
    impacts = reported_values(perf, "ci_allreduce_avg")
    assert impacts and all(v > 1 for v in impacts), impacts
    assert all(r["host_class"] == host_class for r in perf)


def test_after_calibration_gate_mode_gates_this_host(shared_run):
    env, host_class, runs_dir = shared_run.env, shared_run.host_class, shared_run.results / "vcluster" / "runs"
    # Calibrated from the shared run's STREAM cases (mpi partition, one value per session; Open MPI),
    # with a wide margin because STREAM on this shared VM moves by +-30 % from minute to minute:
    # this checks the mechanism, not the machine. (A calibration from several runs: tests/unit.)
    cal = crosstalk("refs", "calibrate", "--system", "vcluster", "--runs", shared_run.run_dir.name,
                    "--min-margin", "0.6", env=env)
    assert cal.returncode == 0, cal.stderr
    written = shared_run.references / "vcluster" / f"{host_class}.yaml"
    assert cal.stdout.split() == [str(written)]
    refs = yaml.safe_load(written.read_text())
    # the mpi partition's cases: one value per session of the shared run
    assert "StreamTriad" in refs and refs["crosstalk_calibration"]["StreamTriad"]["values_per_reference"] == \
        SESSIONS
    gate = crosstalk("run", "--system", "vcluster", "-e", "stream", "--partition", "mpi", "--gate", "--",
                     *OPEN_MPI_ONLY, "-n", "^StreamTriad%threads=1%", env=env)   # one calibrated case
    assert gate.returncode == 0, gate.stdout[-3000:]
    assert f"references: {written.relative_to(REPO)}" in gate.stdout
    perf, _ = load_run(only_newest(runs_dir))
    assert perf and all(r["ref_value"] == r["ref_value"] for r in perf)    # all checked


def only_newest(runs):
    return sorted(runs.iterdir())[-1]


# ------------------------------------------------------------------ a second virtual cluster
SECOND = {"name": "vcport", "nodes": 6, "subnet": "198.19.6.0/24", "rate": "500mbit"}


@pytest.fixture(scope="module")
def second_cluster(run_env_module, spare_cluster):   # two clusters up side by side
    """inventories/vcluster copied and edited as a site would: name, node list, subnet, rate. It
    comes up beside the spare cluster (a copy of the default one, tests/vcluster_fixtures.py), on
    the spare cluster's worker: the shared cluster's worker is the suite's longest."""
    work = REPO / "build" / "test-second-cluster" / uuid.uuid4().hex[:8]
    inv = copy_inventory(work, SECOND["name"], SECOND["subnet"], SECOND["nodes"], SECOND["rate"])
    env = dict(run_env_module, CROSSTALK_RESULTS_DIR=str(work / "results"))
    yield inv, work, env
    crosstalk("vcluster", "down", "--inventory", str(inv), env=env, timeout=120)
    shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="module")
def second_runs(second_cluster):
    inv, work, env = second_cluster
    # Stream on both partitions (Slurm and mpirun configuration derived from the inventory);
    # congestion and energy on the mpirun partition (link shaping through this cluster's inventory).
    # A site's smaller specs (one thread, one round): what is checked is that the inventory alone
    # carries the runs, and each effect a check needs is 2.5x or more (the canary's bandwidth
    # under the incast; experiments/congestion.yaml), which one round shows.
    specs = site_specs(work / "specs", {"congestion": {"rounds": 1}, "energy": {"rounds": 1}})
    site_spec(specs, "stream", {"threads": [1]}, {"rounds": 1})
    env = dict(env, CROSSTALK_SPECS_DIR=str(specs))
    stream = crosstalk("run", "--system", str(inv), "-e", "stream", env=env)
    shaped = crosstalk("run", "--system", str(inv), "-e", "congestion,energy", "--partition", "mpi",
                       "--", "-n", "^(CongestionCanary%congestors=p2p_incast|"
                                   "Energy62%link=(4X|1X)%cpu_freq=default)", env=env)
    return stream, shaped, sorted((work / "results" / SECOND["name"] / "runs").iterdir())


def failed_cases(run_dirs):
    """(case, reason) of every failed case of the runs: the first thing a failure message needs
    (the run's output tail is mostly the kernels' JSON lines)."""
    return [(c["case"], c["reason"]) for run_dir in run_dirs for c in load_run(run_dir)[1]
            if c["result"] == "fail"]


def test_second_inventory_runs_stream_congestion_and_energy(second_runs, spare_cluster):
    stream, shaped, run_dirs = second_runs
    assert stream.returncode == 0, (failed_cases(run_dirs), stream.stdout[-2000:])
    assert shaped.returncode == 0, (failed_cases(run_dirs), shaped.stdout[-2000:])
    assert spare_cluster.vc.is_up()    # the cluster beside it was left alone
    tests = {}
    for run_dir in run_dirs:
        prov = json.loads((run_dir / "provenance.json").read_text())
        assert prov["system"] == SECOND["name"] and prov["kind"] == "vcluster"
        assert prov["nodes"] == [f"n{i}" for i in range(1, SECOND["nodes"] + 1)]
        assert {v["nominal_bps"] for v in prov["link_state"].values()} == {500_000_000}
        perf, cases = load_run(run_dir)
        assert all(c["result"] in ("pass", "skip") for c in cases), cases
        for row in perf:
            tests.setdefault(row["test"], []).append(row)
    assert {"StreamTriad", "CongestionCanary", "Energy62"} <= set(tests)
    assert {r["partition"] for r in tests["StreamTriad"]} == {"mpi", "slurm"}
    # The energy cases shaped this cluster's links through its own inventory: 1X is slower than 4X
    # (4x less bandwidth for a bandwidth-bound halo exchange: 4.1 s against 1.0 s measured).
    times = {json.loads(r["params"])["link"]: r["value"] for r in tests["Energy62"]
             if r["metric"] == "time_s"}
    assert times["1X"] > times["4X"], times


def test_second_cluster_has_its_own_platform_in_the_table(second_runs, second_cluster):
    _, work, _ = second_cluster
    perf, _, errors = collect(work / "results")
    assert not errors
    platforms = set(perf["platform"])
    assert len(platforms) == 1 and platforms.pop().startswith(f"{SECOND['name']}@")
    assert all("500mbit" in label for label in perf["host_label"])
    assert statistics.median(perf[perf.metric == "triad_bw"]["value"]) > 100
